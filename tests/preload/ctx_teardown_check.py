#!/usr/bin/env python3
"""Runs ctx_teardown_client under the shim with every launch timed on the GPU
(WSLSHIM_GPU_TIMING=1): threads launching while another destroys and resets
the context, so that the shim lets go of its events (waiting for the writer
thread's event queries) again and again while launches keep recording new
ones. The client must end (an alarm kills a deadlock) with exit 0, and its
trace must hold exactly its launches, destroys and resets, nothing dropped;
the shim's account (its log line at exit) must be whole: every launch sampled
or skipped, and the trace's timed launches exactly those sampled and not lost
(a pair still out when its context is let go of is lost).

    ctx_teardown_check.py SHIM REPORT FAKE_LIB_DIR CLIENT WORKDIR
"""
import json
import os
import re
import shutil
import subprocess
import sys

shim, report, libdir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, LD_LIBRARY_PATH=libdir, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"),
           WSLSHIM_GPU_TIMING="1", FAKE_CUDA_KERNEL_NS="2000", WSLSHIM_LOG="info")
try:
    p = subprocess.run([client], env=env, capture_output=True, text=True, timeout=120)
except subprocess.TimeoutExpired:
    print("FAIL: the client did not end in 120 s (a deadlock)")
    sys.exit(1)
if p.returncode != 0:
    print(f"FAIL: client exited {p.returncode} (-14: its alarm, a deadlock): {p.stderr[-500:]}")
    sys.exit(1)
made = json.loads(p.stdout.split("TEARDOWN ", 1)[1])
r = subprocess.run([report, "--json", work], capture_output=True, text=True)
if r.returncode != 0:
    print(f"FAIL: report exited {r.returncode}: {r.stderr.strip()}")
    sys.exit(1)
d = json.loads(r.stdout)
api = {k: v["calls"] for k, v in d["api"].items()}
proc = d["processes"][0]
fails = []
for name, want in (("cuLaunchKernel", made["launches"]), ("cuCtxDestroy", made["destroys"]),
                   ("cuDevicePrimaryCtxReset", made["resets"])):
    if api.get(name, 0) != want:
        fails.append(f"{name}: {api.get(name, 0)} in the trace, the client made {want}")
if proc.get("dropped") or proc.get("truncated"):
    fails.append(f"dropped {proc.get('dropped')}, truncated {proc.get('truncated')}")
timed = d["gpu"].get("kernels_timed", 0)
m = re.search(r"GPU timing: (\d+) launches sampled, (\d+) skipped \(stream capture\), (\d+) skipped \(other\), "
              r"(\d+) lost", p.stderr)
if not m:
    fails.append(f"no GPU-timing account in the shim's log: {p.stderr[-300:]!r}")
else:
    sampled, skip_capture, skip_other, lost = map(int, m.groups())
    if sampled + skip_capture + skip_other != made["launches"]:
        fails.append(f"account: {sampled} sampled + {skip_capture} + {skip_other} skipped, "
                     f"{made['launches']} launches")
    if timed != sampled - lost:
        fails.append(f"{timed} launches timed in the trace, the shim sampled {sampled} and lost {lost}")
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print(f"OK: {made['launches']} launches from 6 threads ({timed} timed on the GPU, {sampled} sampled, {lost} lost "
      f"to the teardowns), {made['destroys']} context destroys and {made['resets']} resets beside them, no deadlock, "
      f"the trace exact")
