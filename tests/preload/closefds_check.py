#!/usr/bin/env python3
"""A program that closes all its descriptors (a close() loop, close_range,
closefrom): it sees exactly what it sees without the shim, and the trace
survives with every call, before and after.
    closefds_check.py SHIM REPORT FAKEDIR CLIENT WORKDIR"""
import glob, json, os, shutil, subprocess, sys

shim, report, fakedir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
N = 1000
failures = []
for how in ("loop", "close_range", "closefrom"):
    tracedir = os.path.join(work, how)
    os.makedirs(tracedir)
    env = dict(os.environ, LD_LIBRARY_PATH=fakedir)
    env.pop("LD_PRELOAD", None)
    base = subprocess.run([client, how, str(N)], env=env, capture_output=True, text=True, timeout=30)
    env.update(LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tracedir, "%p.trace.zst"))
    shimmed = subprocess.run([client, how, str(N)], env=env, capture_output=True, text=True, timeout=30)
    a = (base.returncode, base.stdout, base.stderr)
    b = (shimmed.returncode, shimmed.stdout, shimmed.stderr)
    if a != b or a[0] != 0:
        failures.append(f"{how}: without the shim {a!r}, with it {b!r}")
        continue
    r = subprocess.run([report, "--json", tracedir], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{how}: report exit {r.returncode}: {r.stderr.strip()}")
        continue
    d = json.loads(r.stdout)
    calls = d["api"].get("cuCtxSynchronize", {}).get("calls", 0)
    if d["processes"][0].get("truncated") or calls != 3 * N:
        failures.append(f"{how}: {calls} calls (expected {3 * N}), truncated={d['processes'][0].get('truncated')}")
    else:
        print(f"ok  {how}: output {a[1].strip()!r} as without the shim; {calls} calls in the trace")
if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("OK: closing every descriptor leaves the program and its trace intact")
