#!/usr/bin/env python3
"""File I/O on a GPU machine, the way an image-classification job reads: a
PyTorch DataLoader with 4 worker processes over a folder of small JPEGs (PIL),
a few training steps (tests/gpu/dataloader.py).

Rounds of three interleaved runs: without the shim, under it with the default
sampled timing of local file calls, and with every call timed
(WSLSHIM_IO_TIMING=1). Prints and writes OUT/io_sampling.json: wall time of
each run (median), and from each traced run's report the data files' reads,
bytes, files opened, read and metadata time, per filesystem, the processes
that read (the workers), and the bottlenecks; OUT/report.txt is the text
report of the last sampled run.

    python3 tests/gpu/io_sampling_check.py --build BUILD --out OUT [--files 20000] [--steps 100] [--rounds 3]

Exit 0 when every traced run shows the workers' reads and small_file_reads,
1 otherwise, 77 without torch, PIL or a GPU.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    build, out = os.path.abspath(a.build), os.path.abspath(a.out)
    shim = os.path.join(build, "lib", "libwslshim.so")
    report = os.path.join(build, "bin", "wslshim-report")
    if not os.path.exists(report):
        report = os.path.join(build, "analyzer", "wslshim-report")
    script = os.path.join(HERE, "dataloader.py")
    data = os.path.join(out, "data")
    os.makedirs(out, exist_ok=True)
    if not os.path.isdir(data):
        p = subprocess.run([sys.executable, script, "make", data, "--files", str(a.files)], capture_output=True,
                           text=True)
        if p.returncode == 77:
            print(p.stdout.strip())
            return 77
        if p.returncode != 0:
            print(f"FAIL: making the data set: {p.stderr[-800:]}")
            return 1
    cmd = [sys.executable, script, "train", data, "--workers", "4", "--steps", str(a.steps)]
    kinds = {"plain": None, "sampled": {}, "all_timed": {"WSLSHIM_IO_TIMING": "1"}}
    walls = {k: [] for k in kinds}
    reps = {k: [] for k in kinds if k != "plain"}
    fails = []
    last_dir = None
    for r in range(a.rounds):
        for k, extra in kinds.items():
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            tdir = os.path.join(out, f"traces-{k}-{r}")
            if extra is not None:
                os.makedirs(tdir, exist_ok=True)
                for f in os.listdir(tdir):
                    os.unlink(os.path.join(tdir, f))
                env.update(LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"), **extra)
            t0 = time.perf_counter()
            p = subprocess.run(cmd, env=env, capture_output=True, text=True)
            walls[k].append(time.perf_counter() - t0)
            if p.returncode == 77:
                print(p.stdout.strip())
                return 77
            if p.returncode != 0:
                fails.append(f"{k} run {r} exited {p.returncode}: {p.stderr[-800:]}")
                continue
            if extra is None:
                continue
            time.sleep(1)  # the workers' traces end when they leave
            q = subprocess.run([report, "--json", tdir], capture_output=True, text=True)
            if q.returncode != 0:
                fails.append(f"{k} run {r}: wslshim-report exited {q.returncode}: {q.stderr.strip()}")
                continue
            rep = json.loads(q.stdout)
            io = rep["io"]
            readers = [pr for pr in rep["processes"] if (pr.get("io") or {}).get("reads", 0) > 0]
            row = {
                "program": json.loads(p.stdout.strip().splitlines()[-1]),
                "processes": len(rep["processes"]),
                "processes_reading": len(readers),
                "timing_sampled_1_in": io.get("timing_sampled_1_in"),
                "reads": io["reads"], "bytes_read": io["bytes_read"], "files_opened": io["files_opened"],
                "stats": io["stats"], "read_ms": io["read_ns"] / 1e6, "meta_ms": io["meta_ns"] / 1e6,
                "by_fs": {fs: {kk: v.get(kk) for kk in ("reads", "bytes_read", "files_opened", "read_ns", "meta_ns")}
                          for fs, v in io["by_fs"].items()},
                "small_files": io.get("small_files"),
                "bottlenecks": [(b["id"], b["severity"], round(b["time_lost_ns"] / 1e6, 1)) for b in rep["bottlenecks"]],
                "events": sum(pr.get("events", 0) for pr in rep["processes"]),
            }
            reps[k].append(row)
            ids = [b[0] for b in row["bottlenecks"]]
            if row["processes_reading"] < 4:
                fails.append(f"{k} run {r}: {row['processes_reading']} processes read files (4 workers expected)")
            if "small_file_reads" not in ids:
                fails.append(f"{k} run {r}: no small_file_reads: {ids}")
            if "cross_os_reads" in ids:
                fails.append(f"{k} run {r}: cross_os_reads on a Linux filesystem")
            if k == "sampled":
                last_dir = tdir
    med = {k: statistics.median(v) for k, v in walls.items() if v}
    summary = {"files": a.files, "steps": a.steps, "rounds": a.rounds, "wall_s": walls,
               "wall_median_s": med,
               "slowdown_pct": {k: round(100 * (med[k] / med["plain"] - 1), 2) for k in med if k != "plain"},
               "runs": reps, "failures": fails}
    with open(os.path.join(out, "io_sampling.json"), "w") as f:
        json.dump(summary, f, indent=1)
    if last_dir:
        q = subprocess.run([report, last_dir], capture_output=True, text=True)
        with open(os.path.join(out, "report.txt"), "w") as f:
            f.write(q.stdout)
    print(json.dumps({k: summary[k] for k in ("wall_median_s", "slowdown_pct")}))
    for k in reps:
        for row in reps[k]:
            print(k, json.dumps({kk: row[kk] for kk in ("processes_reading", "timing_sampled_1_in", "reads",
                                                        "bytes_read", "files_opened", "read_ms", "meta_ms",
                                                        "events", "bottlenecks")}))
    for f_ in fails:
        print("FAIL", f_)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
