#!/usr/bin/env python3
"""Reads through duplicated descriptors name the file they copy.

    dup_check.py SHIM REPORT DUP_CLIENT WORKDIR

dup_client (C: dup, dup2, dup3, fcntl's F_DUPFD and F_DUPFD_CLOEXEC) and a
Python program (os.dup: fcntl64's F_DUPFD_CLOEXEC; os.dup2: dup2 and dup3)
read a/data and b/data, in folders of their own, through descriptors made
so, each after the one it copies was closed or taken over. The report must
put every byte under the file's folder (top_dirs: reads, bytes), none under
"fds not seen opened" (unknown_fd), and the programs' output and status must
be the same with and without the shim. Without the duplicates' hooks, dup's
reads landed under unknown_fd, and dup2's over a known descriptor under the
file it replaced. And a vfork()ed child's dup2 (CPython's subprocess with a
file as stdout) leaves the parent's entries alone: the parent's own writes
to its stdout stay on a descriptor not seen opened.
"""
import json, os, shutil, subprocess, sys

SHIM, REPORT, CLIENT, WORK = sys.argv[1:5]
A, B = 40000, 12288  # bytes: a pass over a is 11 reads (9 of 4 KiB, 3,136 bytes, the end), over b 4
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


shutil.rmtree(WORK, ignore_errors=True)
for name, size in (("a", A), ("b", B)):
    os.makedirs(os.path.join(WORK, "data", name))
    with open(os.path.join(WORK, "data", name, "data"), "wb") as f:
        f.write(os.urandom(size))
data = os.path.join(WORK, "data")

PY = r'''
import os, sys
d = sys.argv[1]
def whole(fd):
    os.lseek(fd, 0, 0)
    n = 0
    while True:
        b = os.read(fd, 4096)
        if not b:
            return n
        n += len(b)
fa = os.open(d + "/a/data", os.O_RDONLY)
x = os.dup(fa)
os.close(fa)
print("os.dup a", whole(x))
os.close(x)
fa = os.open(d + "/a/data", os.O_RDONLY)
fb = os.open(d + "/b/data", os.O_RDONLY)
os.dup2(fb, fa)           # dup3 (not inheritable)
os.close(fb)
print("os.dup2 b", whole(fa))
fb = os.open(d + "/b/data", os.O_RDONLY)
os.dup2(fa, fb, inheritable=True)  # dup2
os.close(fa)
print("os.dup2 inheritable b", whole(fb))
os.close(fb)
try:
    os.dup(12345)
except OSError as e:
    print("os.dup bad", e.errno)
'''
# CPython's subprocess vforks and its child dup2s the file given as stdout onto 1: the parent's
# own descriptor 1 (the test's pipe) is not that file.
SPAWN = r'''
import os, subprocess, sys
with open(sys.argv[1] + "/c/log", "w") as log:
    subprocess.run(["true"], stdout=log, check=True)
os.write(1, b"x" * 5000)
'''
# (program, argv, expected reads and bytes under a/ and b/)
cases = [("c", [CLIENT, data], {"a": (3 * 11, 3 * A), "b": (2 * 4, 2 * B)}),
         ("python", [sys.executable, "-c", PY, data], {"a": (11, A), "b": (2 * 4, 2 * B)}),
         ("python-subprocess", [sys.executable, "-c", SPAWN, data], {})]
os.makedirs(os.path.join(data, "c"))
for name, argv, want in cases:
    tdir = os.path.join(WORK, "t-" + name)
    os.makedirs(tdir)
    env = dict(os.environ, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"))
    env.pop("LD_PRELOAD", None)
    plain = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    shim = subprocess.run(argv, capture_output=True, text=True, env=dict(env, LD_PRELOAD=SHIM), timeout=120)
    print(f"{name}: {plain.stdout.strip()[:400]!r}")
    check(plain.returncode == 0, f"{name}: exit {plain.returncode}: {plain.stderr}")
    check((shim.returncode, shim.stdout, shim.stderr) == (plain.returncode, plain.stdout, plain.stderr),
          f"{name}: the shim changed the output: {shim.returncode} {shim.stdout!r} {shim.stderr!r}")
    check("FAIL" not in plain.stdout, f"{name}: a call failed: {plain.stdout}")
    rep = subprocess.run([REPORT, "--json", tdir], capture_output=True, text=True, timeout=120)
    if rep.returncode != 0:
        check(False, f"{name}: report exit {rep.returncode}: {rep.stderr}")
        continue
    io = json.loads(rep.stdout)["io"]
    dirs = {os.path.basename(t["dir"]): t for t in io["top_dirs"] if t["dir"].startswith(data)}
    for sub, (reads, nbytes) in want.items():
        t = dirs.get(sub, {"reads": 0, "bytes_read": 0})
        print(f"{name}: {sub}/: {t['reads']} reads, {t['bytes_read']} bytes (expected {reads}, {nbytes})")
        check(t["bytes_read"] == nbytes, f"{name}: {sub}/ read {t['bytes_read']} bytes, not {nbytes}")
        check(t["reads"] == reads, f"{name}: {sub}/ {t['reads']} reads, not {reads}")
    u = io["unknown_fd"]
    check(u["bytes_read"] == 0, f"{name}: {u['bytes_read']} bytes read on fds not seen opened")
    if name == "python-subprocess":
        print(f"{name}: {u['bytes_written']} bytes written on fds not seen opened (5000 expected)")
        check(u["bytes_written"] == 5000, f"{name}: the parent's 5000 bytes to its stdout went elsewhere: "
              f"{u['bytes_written']} on fds not seen opened")
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
