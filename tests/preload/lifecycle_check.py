#!/usr/bin/env python3
"""Runs lifecycle_client under the shim and checks each process's trace.
    lifecycle_check.py SHIM REPORT FAKEDIR CLIENT WORKDIR"""
import json, os, shutil, subprocess, sys

shim, report, fakedir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, LD_PRELOAD=shim, LD_LIBRARY_PATH=fakedir, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"),
           WSLSHIM_IO="0")
p = subprocess.run([client], env=env, capture_output=True, text=True)
fails = []
if p.returncode != 0:
    fails.append(f"client exited {p.returncode}: {p.stderr}")
traces = sorted(os.listdir(work))
seen = {}
for t in traces:
    r = subprocess.run([report, "--json", os.path.join(work, t)], capture_output=True, text=True)
    if r.returncode != 0:
        fails.append(f"{t}: report exit {r.returncode}: {r.stderr}")
        continue
    d = json.loads(r.stdout)
    proc = d["processes"][0]
    calls = {k: v["calls"] for k, v in d["api"].items()}
    if proc.get("truncated") or proc.get("dropped"):
        fails.append(f"{t}: truncated={proc.get('truncated')} dropped={proc.get('dropped')}")
    if "exec-stage" in proc.get("argv", []):
        seen["exec"] = (t, calls, proc)
    elif proc.get("forked"):
        seen["child"] = (t, calls, proc)
    else:
        seen["parent"] = (t, calls, proc)
want = {"parent": {"cuInit": 1, "cuCtxSynchronize": 16 * 100 + 200 * 10},
        "child": {"cuStreamSynchronize": 50},
        "exec": {"cuInit": 1, "cuCtxSynchronize": 30}}
for role, calls_want in want.items():
    if role not in seen:
        fails.append(f"no trace for the {role} (traces: {traces})")
        continue
    t, calls, proc = seen[role]
    if calls != calls_want:
        fails.append(f"{role} ({t}): calls {calls}, expected {calls_want}")
if "parent" in seen and "child" in seen and seen["child"][2]["ppid"] != seen["parent"][2]["pid"]:
    fails.append("the child's trace does not name its parent")
if "parent" in seen and "exec" in seen and seen["exec"][2]["pid"] != seen["parent"][2]["pid"]:
    fails.append("the exec'd image has another pid")
if len(traces) != 3:
    fails.append(f"{len(traces)} traces, expected 3: {traces}")
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print(f"OK: {len(traces)} traces: parent, forked child and exec'd image counted exactly")
