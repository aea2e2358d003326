#!/usr/bin/env python3
"""preload.fork_without_writer_thread: runs fork_threads_client under the shim.

    fork_threads_check.py SHIM REPORT CLIENT WORKDIR

Passes when, right after fork(), the parent has only its own thread (the
shim's writer left before the fork), and the parent's and the child's traces
each hold every open and read they made (the writer came back and wrote them).
"""
import glob
import json
import os
import shutil
import subprocess
import sys

N = 50
shim, report, client, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
data = os.path.join(work, "data.txt")
with open(data, "w") as f:
    f.write("hello\n")
env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"))
p = subprocess.run([client, data, str(N)], env=env, capture_output=True, text=True)
fails = []
print(p.stdout.strip())
if p.returncode != 0 or "threads after fork: 1\n" not in p.stdout:
    fails.append(f"client exited {p.returncode} (threads after fork must be 1): {p.stdout.strip()} {p.stderr.strip()}")
seen = {}
for t in sorted(glob.glob(os.path.join(work, "*.trace.zst"))):
    r = subprocess.run([report, "--json", t], capture_output=True, text=True)
    if r.returncode != 0:
        fails.append(f"{t}: wslshim-report exited {r.returncode}: {r.stderr.strip()}")
        continue
    rep = json.loads(r.stdout)
    proc = rep["processes"][0]
    d = next((x for x in rep["io"].get("top_dirs", []) if x.get("dir") == work), {})
    role = "child" if proc.get("forked") else "parent"
    seen[role] = (d.get("files"), d.get("reads"), d.get("bytes_read"), proc.get("truncated"))
    print(f"{role}: opens {d.get('files')}, reads {d.get('reads')}, bytes {d.get('bytes_read')}, "
          f"truncated {proc.get('truncated')}")
# each open reads "hello\n" and then hits the end: 2 reads, 6 bytes
want = {"parent": (2 * N, 4 * N, 12 * N, False), "child": (N, 2 * N, 6 * N, False)}
for role, w in want.items():
    if seen.get(role) != w:
        fails.append(f"{role}: (opens, reads, bytes, truncated) {seen.get(role)}, expected {w}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
