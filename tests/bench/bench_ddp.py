#!/usr/bin/env python3
"""Benchmark: wslshim-report over the traces of a 64-rank run (synthetic,
tests/ddp/make_ddp_trace). Prints the traces' size and events, then the
report's wall time and peak RSS (text and --json), a few repeats each.

usage: bench_ddp.py BUILD_DIR [--ranks 64] [--steps 2000] [--repeat 3]
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time


def measure(cmd):
    """Wall seconds and peak RSS (KiB) of one child run."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execv(cmd[0], cmd)
    _, status, ru = os.wait4(pid, 0)
    wall = time.monotonic() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd} failed")
    return wall, ru.ru_maxrss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--ranks", type=int, default=64)
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    make = os.path.join(a.build, "tests/ddp/make_ddp_trace")
    report = os.path.join(a.build, "analyzer/wslshim-report")
    with tempfile.TemporaryDirectory() as d:
        t0 = time.monotonic()
        subprocess.run([make, d, "--ranks", str(a.ranks), "--steps", str(a.steps), "--straggler", "17",
                        "--delay-ms", "5", "--nvtx", "--jitter-us", "300"], check=True)
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        # per step and rank: 2 reads, 8 + 1 launches, 9 GPU_KERNEL, 1 sync, push, pop
        events = a.ranks * a.steps * 22
        print(f"{a.ranks} rank traces, {a.steps} steps each: {size / 1e6:.1f} MB compressed, "
              f"{events / 1e6:.2f} M events (written in {time.monotonic() - t0:.1f} s)")
        for mode in ([], ["--json"]):
            runs = [measure([report] + mode + [d]) for _ in range(a.repeat)]
            best = min(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            print(f"wslshim-report {' '.join(mode) or '(text)'}: best {best:.2f} s of {a.repeat} "
                  f"({events / best / 1e6:.1f} M events/s), peak RSS {rss / 1024:.1f} MiB")
        # one rank alone: the per-rank cost and memory, to compare
        one = os.path.join(d, "rank000.trace.zst")
        wall, rss = measure([report, one])
        print(f"one rank trace alone: {wall:.3f} s, peak RSS {rss / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
