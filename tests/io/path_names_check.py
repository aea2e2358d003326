#!/usr/bin/env python3
"""Every open is named in the trace by exactly the path the program gave,
made absolute with the working directory: names and working directories of
every length from 1 to past 100 bytes (the hooks copy short and long names
differently), "./" prefixes, ".." left as given, a chdir between opens,
paths relative to a directory fd (named under the directory's path when the
hooks saw it opened, each folder's fd taking the number of the one before;
"<fd N>/name" when the fd came from a raw system call), lookups about an fd
itself (statx and fstatat of "" with AT_EMPTY_PATH: its file's path), and a path too long for
the kernel (not opened, not named). Run
single-threaded and with a thread of the program's own (the shim's two kinds
of open hook), and with every call timed (each open an event of its own, so
that the timeline export lists its path).
    path_names_check.py SHIM REPORT WORKDIR"""
import json, os, shutil, subprocess, sys

shim, report, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)

# Working directories whose absolute lengths run over 1..130 bytes past WORKDIR.
cwds = []
d = work
for k in (1, 2, 5, 7, 8, 9, 15, 16, 17, 23, 31, 32, 33, 40, 63, 64, 65, 90):
    d = os.path.join(work, "w" * k)
    cwds.append(d)
    os.makedirs(os.path.join(d, "sub"), exist_ok=True)
names = ["n" * k for k in range(1, 41)] + ["m" * k for k in (47, 48, 49, 63, 64, 65, 100, 200)]
for c in cwds:
    for n in names:
        for folder in (c, os.path.join(c, "sub")):
            with open(os.path.join(folder, n), "wb") as f:
                f.write(b"x")

program = r'''
import ctypes, os, sys, threading
cwds, names, thread = sys.argv[1].split(":"), sys.argv[2].split(":"), sys.argv[3] == "1"
libc = ctypes.CDLL(None, use_errno=True)
SYS_openat = {"x86_64": 257, "aarch64": 56}[os.uname().machine]
if thread:  # a thread of the program's own: the hooks' multi-threaded twins
    threading.Thread(target=lambda: None).start()
def touch(path, dir_fd=None):
    fd = os.open(path, os.O_RDONLY, dir_fd=dir_fd)
    os.read(fd, 1)
    os.close(fd)
for c in cwds:
    os.chdir(c)
    for n in names:
        touch(n)
        touch("./" + n)
        touch("sub/" + n)
        touch("sub/../" + n)
        touch(os.path.join(c, "sub", n))
    dfd = os.open("sub", os.O_RDONLY | os.O_DIRECTORY)
    touch(names[0], dir_fd=dfd)
    touch("./" + names[1], dir_fd=dfd)
    touch("../" + names[2], dir_fd=dfd)
    os.close(dfd)
    # a directory fd the hooks do not see opened (the system call made raw): named by the fd
    raw = libc.syscall(SYS_openat, -100, b"sub", os.O_RDONLY | os.O_DIRECTORY)
    print(raw)
    touch(names[3], dir_fd=raw)
    os.close(raw)
# lookups relative to a directory fd, and about an fd itself ("" with AT_EMPTY_PATH, as Rust's
# File::metadata makes them): named by their file's path
AT_EMPTY_PATH, buf = 0x1000, ctypes.create_string_buffer(4096)
dfd = os.open(cwds[0], os.O_RDONLY | os.O_DIRECTORY)
fd = os.open(names[4], os.O_RDONLY, dir_fd=dfd)
for r in (libc.statx(fd, b"", AT_EMPTY_PATH, 0x7ff, buf), libc.fstatat(fd, b"", buf, AT_EMPTY_PATH),
          libc.fstatat(dfd, names[5].encode(), buf, 0), libc.fstatat(dfd, b"", buf, AT_EMPTY_PATH)):
    assert r == 0, ctypes.get_errno()
os.close(fd)
os.close(dfd)
try:
    os.open("/" + "x" * 5000, os.O_RDONLY)
except OSError:
    pass
'''

failures = []
for thread in ("0", "1"):
    tdir = os.path.join(work, "trace" + thread)
    os.makedirs(tdir)
    env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"), WSLSHIM_IO_TIMING="1")
    p = subprocess.run([sys.executable, "-c", program, ":".join(cwds), ":".join(names), thread], env=env,
                       capture_output=True, text=True)
    if p.returncode != 0:
        failures.append(f"thread={thread}: program exit {p.returncode}: {p.stderr[-500:]}")
        continue
    dfds = p.stdout.split()
    chrome = os.path.join(tdir, "timeline.json")
    r = subprocess.run([report, "--chrome", chrome, tdir], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"thread={thread}: report exit {r.returncode}: {r.stderr}")
        continue
    with open(chrome) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    got = [e["args"]["path"] for e in events
           if e.get("cat") == "io" and e.get("name", "").startswith("open") and e.get("args", {}).get("fd", -1) >= 0
           and (e["args"].get("path", "").startswith(work) or e["args"].get("path", "").startswith("<fd"))]
    want = []
    for c, dfd in zip(cwds, dfds):
        for n in names:
            want += [f"{c}/{n}", f"{c}/{n}", f"{c}/sub/{n}", f"{c}/sub/../{n}", f"{c}/sub/{n}"]
        want += [f"{c}/sub", f"{c}/sub/{names[0]}", f"{c}/sub/{names[1]}", f"{c}/sub/../{names[2]}",
                 f"<fd {dfd}>/{names[3]}"]
    c = cwds[0]
    want += [c, f"{c}/{names[4]}"]
    stats = [(e["name"], e["args"]["path"]) for e in events
             if e.get("cat") == "io" and e.get("name") in ("statx", "fstatat")
             and e.get("args", {}).get("path", "").startswith(work)]
    want_stats = [("statx", f"{c}/{names[4]}"), ("fstatat", f"{c}/{names[4]}"), ("fstatat", f"{c}/{names[5]}"),
                  ("fstatat", c)]
    if stats != want_stats:
        failures.append(f"thread={thread}: lookups named {stats}, want {want_stats}")
    if got != want:
        bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
        failures.append(f"thread={thread}: {len(got)} opens named, {len(want)} expected; first difference at "
                        f"{bad}: got {got[bad] if bad < len(got) else None!r}, "
                        f"want {want[bad] if bad < len(want) else None!r}")
    else:
        print(f"thread={thread}: {len(got)} opens, every one named exactly")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
