#!/usr/bin/env python3
"""Distributed report checks: writes synthetic rank traces with make_ddp_trace
(a planted straggler, or none), runs wslshim-report on the folder (text,
--json, --chrome) and checks the ranks, the straggler, its wait (within 10% of
what was planted) and the timeline's per-rank process groups.

usage: ddp_check.py --report PATH --make PATH CASE
"""
import argparse
import json
import subprocess
import sys
import tempfile

STEPS = 50


def fail(msg):
    print("FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    check(p.returncode == 0, f"{cmd} exited {p.returncode}: {p.stderr.strip()}")
    return p.stdout


def within(got, want, tol=0.10):
    return abs(got - want) <= tol * want


CASES = {
    # name: (make_ddp_trace arguments, ranks, straggler rank or None, planted wait ns, cause)
    "straggler_host": (["--ranks", "4", "--straggler", "1", "--delay-ms", "15"], 4, 1, STEPS * 15e6, "host"),
    "straggler_io": (["--ranks", "3", "--straggler", "2", "--delay-ms", "6", "--io", "--nvtx", "--every", "4",
                      "--jitter-us", "200"], 3, 2, STEPS * 6e6, "file_io"),
    "balanced": (["--ranks", "4", "--jitter-us", "400", "--nvtx"], 4, None, 0, None),
    "process_order": (["--ranks", "3", "--straggler", "0", "--delay-ms", "10", "--no-env"], 3, 0, STEPS * 10e6,
                      "host"),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--make", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    a = ap.parse_args()
    args, nranks, straggler, planted, cause = CASES[a.case]
    with tempfile.TemporaryDirectory() as d:
        run([a.make, d, "--steps", str(STEPS)] + args)
        rep = json.loads(run([a.report, "--json", d]))
        text = run([a.report, d])
        chrome_path = d + "/timeline.json"
        run([a.report, "--chrome", chrome_path, d])
        with open(chrome_path) as f:
            chrome = json.load(f)

    ranks = rep["ranks"]
    dist = rep["distributed"]
    check(len(ranks) == nranks, f"{len(ranks)} ranks, want {nranks}")
    check(dist is not None and dist["world_size"] == nranks, f"distributed: {dist}")
    from_env = a.case != "process_order"
    check(dist["rank_source"] == ("environment" if from_env else "process_order"), dist["rank_source"])
    for i, r in enumerate(ranks):
        check(r["rank"] == i and r["pid"] == 5000 + i, f"rank {i}: {r['rank']} pid {r['pid']}")
        for key in ("local_rank", "gpu", "wall_ns", "compute_ns", "collective_ns", "wait_ns", "launches", "syncs",
                    "io", "step", "bottlenecks", "gpu_busy", "collectives"):
            check(key in r, f"rank {i} lacks {key}")
        check(r["collectives"]["all_reduce"]["launches"] == STEPS, f"rank {i} all-reduces {r['collectives']}")
        check(r["syncs"] == STEPS and r["io"]["reads"] == 2 * STEPS, f"rank {i} syncs/reads {r['syncs']} {r['io']}")
        check(r["gpu"] == i % 8, f"rank {i} gpu {r['gpu']}")
        if from_env:
            check(r["local_rank"] == i and r["gpu_pci_bus_id"] == "0000:%02x:00.0" % (0x19 + i % 8),
                  f"rank {i} local rank / bus id {r['local_rank']} {r['gpu_pci_bus_id']}")
        check(within(r["compute_ns"], STEPS * 20e6, 0.02), f"rank {i} compute {r['compute_ns']}")
        if "--nvtx" in args:
            check(r["step"] and r["step"]["name"] == "train_step" and r["step"]["count"] == STEPS, f"step {r['step']}")
    check(dist["imbalance"] is not None and 1.0 <= dist["imbalance"] < 1.02, f"imbalance {dist['imbalance']}")
    ids = [b["id"] for b in rep["bottlenecks"]]
    if straggler is None:
        check(dist["straggler"] is None, f"straggler reported in a balanced run: {dist['straggler']}")
        check("straggler" not in ids, f"bottlenecks {ids}")
        check("straggler: none" in text, "text says no straggler")
    else:
        st = dist["straggler"]
        check(st is not None and st["rank"] == straggler, f"straggler {st}, want rank {straggler}")
        check(within(st["wait_mean_ns"], planted), f"wait {st['wait_mean_ns']} planted {planted}")
        check(st["cause"] == cause, f"cause {st['cause']}, want {cause}")
        for r in ranks:
            if r["rank"] != straggler:
                check(within(r["wait_ns"], planted), f"rank {r['rank']} waits {r['wait_ns']}, planted {planted}")
        b = [b for b in rep["bottlenecks"] if b["id"] == "straggler"]
        check(len(b) == 1 and b[0]["time_lost_ns"] == st["wait_mean_ns"], f"straggler bottleneck {b}")
        check(b[0]["evidence"]["straggler_rank"] == straggler, f"evidence {b[0]['evidence']}")
        check(f"straggler: rank {straggler};" in text, "text names the straggler")
    check(f"Distributed run: {nranks} ranks found" in text, "text has the distributed section")

    # timeline: one process group per rank, named and sorted by rank
    names = {e["pid"]: e["args"]["name"] for e in chrome["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_name"}
    order = {e["pid"]: e["args"]["sort_index"] for e in chrome["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "process_sort_index"}
    check(len(names) == nranks, f"chrome processes {names}")
    for i in range(nranks):
        pid = 5000 + i
        if from_env:
            check(names.get(pid) == f"rank {i} (pid {pid})", f"chrome name of {pid}: {names.get(pid)}")
    by_sort = sorted(order, key=lambda p: order[p])
    check(by_sort == [5000 + i for i in range(nranks)], f"chrome order {by_sort}")
    print(f"{a.case}: ok")


if __name__ == "__main__":
    main()
