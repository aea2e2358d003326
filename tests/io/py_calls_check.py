#!/usr/bin/env python3
"""Python's per-file calls counted exactly: `with open(p, 'rb') as f: f.read()`
makes open64, fstat64, lseek64 twice, fstat64, read twice and close per file
(glibc's isatty, an ioctl, is not hooked). Each of those has a fast path in the
shim that folds it into the file's fold (fds.c, stat.c, opens.c, reads.c); a
fast path that skipped a call, counted one twice or lost a fold's value would
change these figures.

    py_calls_check.py SHIM REPORT WORKDIR

The program reads K files, then K + N in another run; per call name the
difference of the report's io_calls counts must be N times the calls per file
(Python's start-up, the same in both, cancels out), and the data folder's
figures (io.top_dirs: reads, bytes, files) must be the files' exactly. Single-
threaded (the single-threaded twins) and with an idle thread (the usual ones),
each with the timing sampled 1 in 32 (the default), 1 in 2 (the full hooks
half the time) and every call timed.
"""
import json, os, shutil, subprocess, sys

shim, report, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
data = os.path.join(work, "data")
os.makedirs(data)
K, N = 8, 600
sizes = [1 + (i * 2654435761) % 20000 for i in range(K + N)]
for i, n in enumerate(sizes):
    with open(os.path.join(data, f"f{i:04d}"), "wb") as f:
        f.write(bytes([i & 255]) * n)

program = r'''
import os, sys
data, n, thread = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
if thread:
    import threading
    threading.Thread(target=threading.Event().wait, daemon=True).start()
names = sorted(os.listdir(data))[:n]
got = 0
for x in names:
    with open(os.path.join(data, x), "rb") as f:
        got += len(f.read())
print(got)
'''
PER_FILE = {"open": ("open64", 1), "fstat": ("fstat64", 2), "lseek": ("lseek64", 2), "read": ("read", 2),
            "close": ("close", 1)}
failures = []


def run(n, thread, timing, tag):
    traces = os.path.join(work, f"t-{tag}-{n}")
    os.makedirs(traces)
    env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"),
               WSLSHIM_IO_TIMING=str(timing), PYTHONHASHSEED="0")
    p = subprocess.run([sys.executable, "-I", "-S", "-B", "-c", program, data, str(n), "1" if thread else "0"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0 or int(p.stdout) != sum(sizes[:n]):
        failures.append(f"{tag} n={n}: exit {p.returncode}, printed {p.stdout.strip()!r}: {p.stderr[-500:]}")
        return None
    r = subprocess.run([report, "--json", traces], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=120)
    if r.returncode != 0:
        failures.append(f"{tag} n={n}: report exit {r.returncode}: {r.stderr[-500:]}")
        return None
    return json.loads(r.stdout)


def calls(rep, name):
    a = (rep.get("io_calls") or {}).get(name) or {}
    return a.get("calls", 0), a.get("errors", 0), a.get("variants") or {}


for thread in (False, True):
    for timing in (32, 2, 1):
        tag = f"{'thread' if thread else 'single'}-timing{timing}"
        a, b = run(K, thread, timing, tag), run(K + N, thread, timing, tag)
        if a is None or b is None:
            continue
        for name, (variant, per) in PER_FILE.items():
            # the count per call name: under TSan, whose runtime intercepts fstat64 itself, the
            # shim sees it as another of the family's entry points (another variant)
            (ca, ea, va), (cb, eb, vb) = calls(a, name), calls(b, name)
            if cb - ca != per * N or eb != ea:
                failures.append(f"{tag}: io_calls.{name}: {ca} -> {cb} calls (variants {va} -> {vb}, "
                                f"errors {ea} -> {eb}) for {N} more files: want {per * N} more ({variant} "
                                f"{per} a file), no more errors")
        for rep, n in ((a, K), (b, K + N)):
            t = [d for d in (rep.get("io") or {}).get("top_dirs") or [] if d.get("dir") == data]
            want = {"reads": 2 * n, "bytes_read": sum(sizes[:n]), "files": n}
            got = {k: t[0].get(k) for k in want} if t else None
            if got != want:
                failures.append(f"{tag}: io.top_dirs[{data}] of {n} files: {got}, want {want}")
        st = (b.get("io") or {}).get("timing_sampled_1_in")
        if timing > 1 and st != timing:
            failures.append(f"{tag}: io.timing_sampled_1_in {st}, want {timing}")

if failures:
    print("FAIL\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"Python's open().read(): {N} files x 8 hooked calls counted exactly, single-threaded and with a thread, "
      f"timing 1 in 32, 1 in 2 and every call")
