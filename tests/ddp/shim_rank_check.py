#!/usr/bin/env python3
"""The shim's RANK chunk, end to end, against the fake driver.

  shim_rank_check.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR

Runs CLIENT (client_timing: launches timed on the fake GPU) twice under the
shim as ranks 0 and 1 of a world of 2, with launcher variables set (and one
that is not a launcher's), then checks that the report finds both ranks from
their environment with their local rank, CUDA_VISIBLE_DEVICES, the device the
process drove and its PCI bus id (the fake driver's "0000:fa:00.0"); and that
one such trace alone, with WORLD_SIZE=2, is already a distributed run.
"""
import json
import os
import subprocess
import sys

SHIM, REPORT, CLIENT, LIBDIR, WORK = sys.argv[1:6]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


os.makedirs(WORK, exist_ok=True)
for f in os.listdir(WORK):
    os.unlink(os.path.join(WORK, f))
for rank in (0, 1):
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, FAKE_CUDA_KERNEL_NS="20000",
               WSLSHIM_OUTPUT=os.path.join(WORK, f"r{rank}-%p.trace.zst"), WSLSHIM_GPU_TIMING="1",
               RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="2", LOCAL_WORLD_SIZE="2",
               MASTER_ADDR="127.0.0.1", MASTER_PORT="29500", CUDA_VISIBLE_DEVICES="0",
               TORCHELASTIC_RUN_ID="test", NOT_A_LAUNCHER_VAR="x")
    p = subprocess.run([CLIENT, "20", "5", "1"], env=env, capture_output=True, text=True)
    check(p.returncode == 0, f"rank {rank}: client exit {p.returncode}: {p.stderr.strip()}")

traces = sorted(os.path.join(WORK, f) for f in os.listdir(WORK) if ".trace.zst" in f)
check(len(traces) == 2, f"traces: {traces}")
r = subprocess.run([REPORT, "--json", WORK], capture_output=True, text=True)
check(r.returncode == 0, f"report: {r.stderr}")
rep = json.loads(r.stdout) if r.returncode == 0 else {}
dist, ranks = rep.get("distributed"), rep.get("ranks", [])
check(dist is not None and dist.get("world_size") == 2 and dist.get("rank_source") == "environment", f"{dist}")
check([x["rank"] for x in ranks] == [0, 1], f"ranks {[x.get('rank') for x in ranks]}")
for x in ranks:
    check(x["local_rank"] == x["rank"], f"local rank {x}")
    check(x["gpu"] == 0 and x["gpu_pci_bus_id"] == "0000:fa:00.0", f"gpu {x['gpu']} bus {x['gpu_pci_bus_id']}")
    check(x["cuda_visible_devices"] == "0", f"CUDA_VISIBLE_DEVICES {x['cuda_visible_devices']}")
    check(x["launches"] > 0 and x["kernels_timed"] > 0 and x["collective_launches"] == 0, f"figures {x}")
# one rank's trace alone: WORLD_SIZE says it is part of a distributed run
r = subprocess.run([REPORT, "--json", traces[0]], capture_output=True, text=True)
one = json.loads(r.stdout) if r.returncode == 0 else {}
check(one.get("distributed") and one["distributed"]["world_size"] == 2 and len(one["ranks"]) == 1,
      f"one trace: {one.get('distributed')}")
print("shim rank chunk:", "FAIL" if failures else "ok")
sys.exit(1 if failures else 0)
