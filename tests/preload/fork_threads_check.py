#!/usr/bin/env python3
"""preload.fork_without_writer_thread: runs fork_threads_client under the shim.

    fork_threads_check.py SHIM REPORT CLIENT WORKDIR SANITIZER PLAIN_CLIENT

CLIENT is built to look like CPython 3.12 (it exports Py_GetVersion), which
counts its threads right after fork(): passes when the parent then has the
threads it has without the shim (the shim's writer left before the fork).
PLAIN_CLIENT is the same program without that symbol: the writer is back
before fork() returns (one thread more), so that a parent that idles, _exits
or is killed after a fork has its calls on disk. For both, the parent's and
the child's traces each hold every open and read they made.
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys

N = 50
shim, report, client, work = sys.argv[1:5]
plain_client = sys.argv[6] if len(sys.argv) > 6 else None
# A TSan build: the shim's first pthread_create (the writer's) makes TSan's
# runtime start a background thread of its own, which stays.
tsan_thread = 1 if any("thread" in a for a in sys.argv[5:6]) else 0
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
data = os.path.join(work, "data.txt")
with open(data, "w") as f:
    f.write("hello\n")
fails = []


def threads_after_fork(prog, env):
    p = subprocess.run([prog, data, str(N)], env=env, capture_output=True, text=True)
    print(p.stdout.strip())
    m = re.search(r"threads after fork: (\d+)", p.stdout)
    if p.returncode != 0 or not m:
        fails.append(f"client exited {p.returncode}: {p.stdout.strip()} {p.stderr.strip()}")
        return None
    return int(m.group(1))


def check_traces(tdir, label):
    seen = {}
    for t in sorted(glob.glob(os.path.join(tdir, "*.trace.zst"))):
        r = subprocess.run([report, "--json", t], capture_output=True, text=True)
        if r.returncode != 0:
            fails.append(f"{t}: wslshim-report exited {r.returncode}: {r.stderr.strip()}")
            continue
        rep = json.loads(r.stdout)
        proc = rep["processes"][0]
        d = next((x for x in rep["io"].get("top_dirs", []) if x.get("dir") == work), {})
        role = "child" if proc.get("forked") else "parent"
        seen[role] = (d.get("files"), d.get("reads"), d.get("bytes_read"), proc.get("truncated"))
        print(f"{label} {role}: opens {d.get('files')}, reads {d.get('reads')}, bytes {d.get('bytes_read')}, "
              f"truncated {proc.get('truncated')}")
    # each open reads "hello\n" and then hits the end: 2 reads, 6 bytes
    want = {"parent": (2 * N, 4 * N, 12 * N, False), "child": (N, 2 * N, 6 * N, False)}
    for role, w in want.items():
        if seen.get(role) != w:
            fails.append(f"{label} {role}: (opens, reads, bytes, truncated) {seen.get(role)}, expected {w}")


plain_env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
for label, prog, extra in (("as CPython 3.12:", client, 0), ("plain C:", plain_client, 1)):
    if not prog:
        continue
    tdir = os.path.join(work, "cpython" if extra == 0 else "plain")
    os.makedirs(tdir)
    baseline = threads_after_fork(prog, plain_env)  # 1; 2 in a TSan build (its runtime's thread)
    traced = threads_after_fork(prog, dict(plain_env, LD_PRELOAD=shim,
                                           WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst")))
    if baseline is not None and traced != baseline + tsan_thread + extra:
        fails.append(f"{label} threads right after fork(): {traced} under the shim, {baseline} without it"
                     + (" (+1 for TSan's own)" if tsan_thread else "")
                     + (" (+1: the writer, back at once)" if extra else ""))
    check_traces(tdir, label)
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
