#!/usr/bin/env python3
"""A process killed with SIGKILL: its trace reads up to its last frame.
    killed_check.py SHIM REPORT FAKEDIR CLIENT WORKDIR"""
import json, os, shutil, signal, subprocess, sys

shim, report, fakedir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, LD_PRELOAD=shim, LD_LIBRARY_PATH=fakedir, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"),
           WSLSHIM_IO="0")
p = subprocess.run([client], env=env)
if p.returncode != -signal.SIGKILL:
    sys.exit(f"FAIL: client exited {p.returncode}, expected SIGKILL")
r = subprocess.run([report, "--json", work], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"FAIL: report exit {r.returncode}: {r.stderr}")
d = json.loads(r.stdout)
n = d["api"].get("cuCtxSynchronize", {}).get("calls", 0)
proc = d["processes"][0]
if not proc["truncated"] or "cut short" not in r.stderr:
    sys.exit(f"FAIL: truncated={proc['truncated']}, stderr {r.stderr!r}")
if not 1000 <= n <= 2000:
    sys.exit(f"FAIL: {n} calls read back, expected 1000..2000")
print(f"OK: killed process: {n} of 2000 calls read back, warning: {r.stderr.strip()}")
