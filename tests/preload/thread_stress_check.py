#!/usr/bin/env python3
"""Runs thread_stress_client under the shim and checks, from the traces:
the parent's trace holds exactly the launches and syncs the client made
(64 threads at once, 30,000 short-lived threads, launches during forks), with
nothing dropped; each of the 20 forked children left a trace of exactly its
100 syncs and exited normally (no deadlock across fork); and resident memory
did not grow like a leak over the second and third 10,000 threads: a leak
grows in both stretches (a thread buffer that is never reused would cost over
1 MiB each), so the smaller growth must be under 16 MiB. One stretch alone may
grow more: on a loaded machine the writer falls behind, exited threads'
buffers wait for it, and new threads take new ones (a helper saw +25 MiB once
at load 5 on 2 CPUs); that high-water mark does not grow again.

    thread_stress_check.py SHIM REPORT FAKE_LIB_DIR CLIENT WORKDIR
"""
import json
import os
import shutil
import subprocess
import sys

shim, report, libdir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = dict(os.environ, LD_LIBRARY_PATH=libdir, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"),
           WSLSHIM_GPU_TIMING="off")
p = subprocess.run([client], env=env, capture_output=True, text=True, timeout=300)
fails = []
if p.returncode != 0:
    print(f"FAIL: client exited {p.returncode}: {p.stderr[-500:]}")
    sys.exit(1)
made = json.loads(p.stdout.split("STRESS ", 1)[1])
print("client:", made)
r = subprocess.run([report, "--json", work], capture_output=True, text=True)
if r.returncode != 0:
    print(f"FAIL: report exited {r.returncode}: {r.stderr.strip()}")
    sys.exit(1)
procs = json.loads(r.stdout)["processes"]
parent = [q for q in procs if not q["forked"]]
children = [q for q in procs if q["forked"]]


def calls(pid, api):
    one = subprocess.run([report, "--json", os.path.join(work, f"{pid}.trace.zst")], capture_output=True, text=True)
    a = json.loads(one.stdout)["api"].get(api)
    return a["calls"] if a else 0


if len(parent) != 1:
    fails.append(f"{len(parent)} parent traces")
else:
    pid = parent[0]["pid"]
    if parent[0]["dropped"]:
        fails.append(f"parent dropped {parent[0]['dropped']} events")
    for api, want in (("cuLaunchKernel", made["launches"]), ("cuCtxSynchronize", made["syncs"])):
        got = calls(pid, api)
        if got != want:
            fails.append(f"parent {api}: trace {got}, client made {want}")
if made["child_failures"]:
    fails.append(f"{made['child_failures']} of {made['children']} forked children did not exit 0 (deadlock?)")
if len(children) != made["children"]:
    fails.append(f"{len(children)} child traces for {made['children']} children")
for c in children:
    got = calls(c["pid"], "cuStreamSynchronize")
    if got != 100:
        fails.append(f"child {c['pid']}: {got} cuStreamSynchronize, made 100")
rss = [made["rss_kb_after_10k"], made["rss_kb_after_20k"], made["rss_kb_after_30k"]]
growths = [rss[1] - rss[0], rss[2] - rss[1]]
print(f"resident memory after 10,000, 20,000 and 30,000 short-lived threads {rss[0]}, {rss[1]} and {rss[2]} KiB "
      f"({growths[0]:+d} and {growths[1]:+d} KiB)")
if min(growths) > 16 * 1024:
    fails.append(f"resident memory grew by {growths[0]} and {growths[1]} KiB over each 10,000 more threads")
for f in fails:
    print("FAIL:", f)
print("thread stress:", "FAIL" if fails else "ok")
sys.exit(1 if fails else 0)
