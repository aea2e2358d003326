#!/usr/bin/env python3
"""Whole-program wall time of page-cached 4 KiB reads, with and without the
shim (measured, not asserted; docs/overhead.md):

    e2e_wall.py BENCH_IO DATA VARIANT [VARIANT ...] [--rounds N] [--reads N] [--files N]

BENCH_IO: a built tests/io/bench_io; DATA: a folder `bench_io create DATA N`
wrote (N at least --files). A VARIANT is NAME=LIB[,VAR=VALUE...]: LIB is
preloaded with the variables set (LIB "-": nothing preloaded). Each round
runs every workload once per variant, in turn, each a fresh process timed
from fork to exit (start-up and the trace's last write included):

    loop      bench_io loop: --reads read()s of 4 KiB from one page-cached file
    loop-mt   the same in a program with a second, idle thread
    files     bench_io files: --files files of 4 KiB, each open, read, read (EOF), close
    py-files  Python: `with open(p, 'rb') as f: f.read()` over the same files

Prints per workload and variant the median wall time over the rounds and its
difference from the first variant's. On 8 CPUs or more the runs are pinned to
CPUs 4-7, as ab_builds.sh does.
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PY_FILES = """
import os, sys
d, n = sys.argv[1], int(sys.argv[2])
total = 0
for i in range(n):
    with open(os.path.join(d, "f%06d" % i), "rb") as f:
        total += len(f.read())
assert total == 4096 * n, total
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("bench")
    ap.add_argument("data")
    ap.add_argument("variants", nargs="+")
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--reads", type=int, default=2000000)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--workloads", default="loop,loop-mt,files,py-files")
    a = ap.parse_args()
    if a.rounds < 1 or a.reads < 1 or a.files < 1:
        print("e2e_wall.py: --rounds, --reads and --files must be positive", file=sys.stderr)
        return 2
    if not os.access(a.bench, os.X_OK) or not os.path.isfile(os.path.join(a.data, "f%06d" % (a.files - 1))):
        print(f"e2e_wall.py: {a.bench} is not bench_io, or {a.data} has fewer than {a.files} files",
              file=sys.stderr)
        return 2
    variants = []
    for v in a.variants:
        name, _, spec = v.partition("=")
        parts = spec.split(",") if spec else ["-"]
        lib, env = parts[0], dict(p.split("=", 1) for p in parts[1:] if "=" in p)
        if not name or (lib != "-" and not os.path.isfile(lib)):
            print(f"e2e_wall.py: variant {v!r} is not NAME=LIB[,VAR=VALUE...] with LIB a file or -",
                  file=sys.stderr)
            return 2
        variants.append((name, lib, env))
    pin = ["taskset", "-c", "4-7"] if os.cpu_count() >= 8 and shutil.which("taskset") else []
    commands = {
        "loop": [a.bench, "loop", a.data, str(a.reads)],
        "loop-mt": [a.bench, "loop-mt", a.data, str(a.reads)],
        "files": [a.bench, "files", a.data, str(a.files)],
        "py-files": [sys.executable, "-c", PY_FILES, a.data, str(a.files)],
    }
    workloads = a.workloads.split(",")
    for w in workloads:
        if w not in commands:
            print(f"e2e_wall.py: no workload {w!r} ({', '.join(commands)})", file=sys.stderr)
            return 2
    traces = tempfile.mkdtemp(prefix="e2e-wall-")
    try:
        subprocess.run([a.bench, "files", a.data, str(a.files)], stdout=subprocess.DEVNULL, check=True)  # cache warm
        times = {(w, v[0]): [] for w in workloads for v in variants}
        for _ in range(a.rounds):
            for w in workloads:
                for name, lib, extra in variants:
                    env = dict(os.environ, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"))
                    env.pop("LD_PRELOAD", None)
                    if lib != "-":
                        env["LD_PRELOAD"] = os.path.realpath(lib)
                    env.update(extra)
                    t0 = time.perf_counter()
                    p = subprocess.run(pin + commands[w], env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE, text=True)
                    dt = time.perf_counter() - t0
                    if p.returncode != 0:
                        print(f"e2e_wall.py: {w} under {name} exited {p.returncode}: {p.stderr.strip()[-300:]}",
                              file=sys.stderr)
                        return 1
                    times[(w, name)].append(dt)
                    for f in os.listdir(traces):
                        os.unlink(os.path.join(traces, f))
    finally:
        shutil.rmtree(traces, ignore_errors=True)
    for w in workloads:
        base = statistics.median(times[(w, variants[0][0])])
        row = []
        for name, _, _ in variants:
            m = statistics.median(times[(w, name)])
            row.append(f"{name} {m * 1e3:.1f} ms ({100 * (m / base - 1):+.1f}%)")
        print(f"{w}: {a.rounds} rounds, median wall: " + "; ".join(row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
