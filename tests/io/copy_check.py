#!/usr/bin/env python3
"""Copies made in the kernel (sendfile, copy_file_range) are file I/O the report counts.

    copy_check.py SHIM REPORT WORKDIR

A Python program copies two files out of src/ into dst/ four ways: shutil.copyfile (sendfile),
os.sendfile from an offset, os.copy_file_range, and `cp` in a child process (copy_file_range).
Checks:
  - the program's output (a digest of each copy) and exit status are the same with and without
    the shim;
  - the report puts every byte copied under src/ as read (top_dirs) and under the data files'
    writes (io.bytes_written), and io_calls has a copy_out (the destination's event) for each
    sendfile and copy_file_range call;
  - the call's time goes to the side off the local filesystems: with dst/ emulated as a Windows
    drive (WSLSHIM_EMULATE=fs:DST=9p) to copy_out, at least the emulated write time of the
    bytes (the 9p rate, docs/emulation.md), the source's event taking none; with src/ emulated,
    to sendfile, at least the emulated read time, copy_out none.
Without the hooks the report had the copies' opens and no byte read or written.
"""
import hashlib, json, os, shutil, subprocess, sys

SHIM, REPORT, WORK = sys.argv[1:4]
A, B = 3 << 20, 200_000  # bytes
READ_9P, WRITE_9P = 330e6, 293e6  # the emulation's 9p rates, bytes/s (docs/emulation.md)
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


PROG = r'''
import hashlib, os, shutil, subprocess, sys
src, dst, how = sys.argv[1], sys.argv[2], sys.argv[3]
def digest(p):
    with open(p, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()[:16]
if how == "all":
    shutil.copyfile(src + "/a", dst + "/a1")
    fi = os.open(src + "/a", os.O_RDONLY)
    fo = os.open(dst + "/a2", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    size, off = os.fstat(fi).st_size, 0
    while off < size:
        off += os.sendfile(fo, fi, off, size - off)
    os.close(fi); os.close(fo)
    fi = os.open(src + "/b", os.O_RDONLY)
    fo = os.open(dst + "/b1", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    while os.copy_file_range(fi, fo, 1 << 16):
        pass
    os.close(fi); os.close(fo)
    subprocess.run(["cp", src + "/b", dst + "/b2"], check=True)
    names = ["a1", "a2", "b1", "b2"]
else:
    shutil.copyfile(src + "/a", dst + "/a1")
    names = ["a1"]
print(" ".join(n + ":" + digest(dst + "/" + n) for n in names))
'''


def run(name, src, dst, how, emulate=None):
    tdir = os.path.join(WORK, "t-" + name)
    shutil.rmtree(dst, ignore_errors=True)
    os.makedirs(dst)
    os.makedirs(tdir)
    env = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "WSLSHIM_EMULATE")}
    env["WSLSHIM_OUTPUT"] = os.path.join(tdir, "%p.trace.zst")
    argv = [sys.executable, "-c", PROG, src, dst, how]
    plain = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    shutil.rmtree(dst)
    os.makedirs(dst)
    if emulate:
        env["WSLSHIM_EMULATE"] = emulate
    shim = subprocess.run(argv, capture_output=True, text=True, env=dict(env, LD_PRELOAD=SHIM), timeout=120)
    print(f"{name}: {plain.stdout.strip()}")
    check(plain.returncode == 0 and plain.stdout, f"{name}: exit {plain.returncode}: {plain.stderr}")
    check((shim.returncode, shim.stdout) == (plain.returncode, plain.stdout),
          f"{name}: the shim changed the output: {shim.returncode} {shim.stdout!r} {shim.stderr!r}")
    rep = subprocess.run([REPORT, "--json", tdir], capture_output=True, text=True, timeout=120)
    if not check(rep.returncode == 0, f"{name}: report exit {rep.returncode}: {rep.stderr}"):
        return None
    return json.loads(rep.stdout)


shutil.rmtree(WORK, ignore_errors=True)
src = os.path.join(WORK, "src")
os.makedirs(src)
with open(os.path.join(src, "a"), "wb") as f:
    f.write(os.urandom(A))
with open(os.path.join(src, "b"), "wb") as f:
    f.write(os.urandom(B))

d = run("four-ways", src, os.path.join(WORK, "dst"), "all")
if d:
    io, calls = d["io"], d["io_calls"]
    s = next((t for t in io["top_dirs"] if t["dir"] == src), {"reads": 0, "bytes_read": 0})
    n = {k: calls.get(k, {}).get("calls", 0) for k in ("sendfile", "copy_file_range", "copy_out")}
    print(f"four-ways: src/ {s['bytes_read']} bytes read in {s['reads']} calls; {io['bytes_written']} bytes "
          f"written; calls {n}")
    check(s["bytes_read"] == 2 * A + 2 * B, f"four-ways: src/ read {s['bytes_read']} bytes, not {2 * A + 2 * B}")
    check(io["bytes_written"] == 2 * A + 2 * B, f"four-ways: {io['bytes_written']} bytes written, not {2 * A + 2 * B}")
    check(n["sendfile"] >= 2 and n["copy_file_range"] >= 2, f"four-ways: copy calls {n}")
    check(n["copy_out"] == n["sendfile"] + n["copy_file_range"], f"four-ways: one copy_out a copy: {n}")

# the time's side, emulated Windows drives (each run: shutil.copyfile of a, 3 MiB): the emulated
# side's event takes the call's time, at least the emulated 9p time of its bytes, the other none
src9, dst9 = os.path.join(WORK, "src9p"), os.path.join(WORK, "dst9p")
shutil.copytree(src, src9)
for name, frm, to, emulated, slow, rate in (("to-9p", src, dst9, dst9, "copy_out", WRITE_9P),
                                           ("from-9p", src9, os.path.join(WORK, "dst2"), src9, "sendfile", READ_9P)):
    d = run(name, frm, to, "one", emulate=f"fs:{emulated}=9p")
    if not d:
        continue
    other = "sendfile" if slow == "copy_out" else "copy_out"
    ns = {k: d["io_calls"].get(k, {}).get("total_ns", 0) for k in (slow, other)}
    print(f"{name}: {slow} {ns[slow]} ns, {other} {ns[other]} ns (emulated time {A / rate * 1e9:.0f} ns)")
    check(ns[slow] >= A / rate * 1e9, f"{name}: {slow} took {ns[slow]} ns, under the emulated time")
    check(ns[other] == 0, f"{name}: {other}, the other side, took {ns[other]} ns")
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
