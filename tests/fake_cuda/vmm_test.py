#!/usr/bin/env python3
"""Device memory held through cuMemCreate/cuMemRelease (PyTorch's expandable
segments) is accounted: client_vmm peaks at exactly 8 MiB, four allocations,
four frees, one refused double release, nothing live at exit; the trace holds
exactly the calls the client made.

    vmm_test.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

shim, report, client, libdir, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, LD_LIBRARY_PATH=libdir, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"))
p = subprocess.run([client], env=env, capture_output=True, text=True)
if p.returncode != 0:
    sys.exit(f"FAIL: client exited {p.returncode}: {p.stderr.strip()}")
expect = json.loads(p.stdout.split("EXPECT ", 1)[1])
d = json.loads(subprocess.run([report, "--json", work], capture_output=True, text=True, check=True).stdout)
m = d["memory"]
want = {"peak_device_bytes": 8 << 20, "allocations": 4, "frees": 4, "failed_frees": 1, "live_at_exit_bytes": 0}
fails = [f"memory {k}: {m.get(k)}, expected {v}" for k, v in want.items() if m.get(k) != v]
traced = {k: v["calls"] for k, v in d["api"].items()}
fails += [f"{k}: trace {traced.get(k, 0)}, client {v}" for k, v in expect.items() if traced.get(k, 0) != v]
for f in fails:
    print("FAIL:", f)
print("vmm:", "FAIL" if fails else "ok", m["peak_device_bytes"])
sys.exit(1 if fails else 0)
