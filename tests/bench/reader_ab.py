#!/usr/bin/env python3
"""The analyzer's speed, two builds interleaved: wslshim-report --json over each run, ROUNDS
rounds of (old, new); per build and run the median CPU time (user + system, from wait4: what one
core spent), events per second per core, the CPU time's mean and 90th percentile (a change that
helps the median can hurt the tail), the median wall time and the largest peak RSS.

usage: reader_ab.py OLD_REPORT NEW_REPORT ROUNDS TRACES...  (TRACES: files or folders, one run each)
"""
import json, os, statistics, subprocess, sys, time


def once(report, path):
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.execv(report, [report, "--json", path])
    _, status, ru = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{report} {path}: exit {status}")
    return ru.ru_utime + ru.ru_stime, time.monotonic() - t0, ru.ru_maxrss


def main():
    old, new, rounds, paths = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    events = {}
    for p in paths:
        out = subprocess.run([new, "--json", p], capture_output=True, check=True).stdout
        events[p] = sum(pr.get("events", 0) for pr in json.loads(out)["processes"])
    got = {(v, p): [] for v in ("old", "new") for p in paths}
    for _ in range(rounds):
        for p in paths:
            for v, exe in (("old", old), ("new", new)):
                got[(v, p)].append(once(exe, p))
    for p in paths:
        for v in ("old", "new"):
            r = got[(v, p)]
            cpu = statistics.median(x[0] for x in r)
            wall = statistics.median(x[1] for x in r)
            cpus = sorted(x[0] for x in r)
            mean, p90 = statistics.fmean(cpus), cpus[min(len(cpus) - 1, (len(cpus) * 9) // 10)]
            print(f"{os.path.basename(p.rstrip('/'))} {v}: {events[p] / 1e6:.2f} M events, CPU {cpu:.3f} s "
                  f"(median of {rounds}; {events[p] / cpu / 1e6:.1f} M events/s per core; mean {mean:.3f} s, "
                  f"p90 {p90:.3f} s), wall {wall:.3f} s, "
                  f"peak RSS {max(x[2] for x in r) / 1024:.1f} MiB")


if __name__ == "__main__":
    main()
