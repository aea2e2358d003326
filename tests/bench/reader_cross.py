#!/usr/bin/env python3
"""The analyzer's speed across a format change: each build's reader on the traces each build's
shim recorded of the same program. Per pair, ROUNDS interleaved rounds of (old reader, old trace),
(new reader, old trace), (new reader, new trace): the median CPU time (user + system, from wait4),
events per second per core, the trace's bytes an event and the largest peak RSS. The middle one
tells the reader's change from the format's.

usage: reader_cross.py OLD_REPORT NEW_REPORT ROUNDS OLD_TRACE NEW_TRACE [OLD_TRACE NEW_TRACE ...]
(traces: files or folders, one run each)
"""
import json, os, statistics, subprocess, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reader_ab import once  # noqa: E402


def events(report, path):
    out = subprocess.run([report, "--json", path], capture_output=True, check=True).stdout
    return sum(p.get("events", 0) for p in json.loads(out)["processes"])


def size(path):
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def main():
    if len(sys.argv) < 6 or len(sys.argv) % 2:
        sys.exit(__doc__.strip().splitlines()[-2])
    old, new, rounds, traces = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    for po, pn in zip(traces[::2], traces[1::2]):
        eo, en = events(new, po), events(new, pn)
        runs = {"old reader, old trace": (old, po, eo), "new reader, old trace": (new, po, eo),
                "new reader, new trace": (new, pn, en)}
        got = {k: [] for k in runs}
        for _ in range(rounds):
            for k, (exe, p, _) in runs.items():
                got[k].append(once(exe, p))
        for k, (exe, p, e) in runs.items():
            cpu = statistics.median(x[0] for x in got[k])
            print(f"{os.path.basename(p.rstrip('/'))} {k}: {e} events, {size(p) / e:.3f} bytes an event, "
                  f"CPU {cpu:.4f} s (median of {rounds}), {e / cpu / 1e6:.2f} M events/s per core, "
                  f"peak RSS {max(x[2] for x in got[k]) / 1024:.1f} MiB", flush=True)


if __name__ == "__main__":
    main()
