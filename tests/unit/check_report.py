#!/usr/bin/env python3
"""Report tests: runs wslshim-report on traces written by make_trace and checks
its output against figures recomputed here from make_trace's workload formulas.

usage: check_report.py --report PATH --make-trace PATH CASE
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ARGV = ["python3", "train.py", '--name="quoted"\tand tab']


def fail(msg):
    print("FAILED: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


# ---- the workload make_trace writes (see make_trace.c) ----
def launch_durations():
    return [2000 + (i * 7919 % 10007) * 3 for i in range(6000)]


def expected_apis():
    launches = launch_durations()
    syncs = [1500 + 10 * k for k in range(100)]
    allocs = [80000 + 100 * i for i in range(50)] + [70000] * 10
    frees = [3000] * 60
    return {
        "cuLaunchKernel": (launches, 0, {"cuLaunchKernel_ptsz": 2000, "cuLaunchKernel": 4000}),
        "cuStreamSynchronize": (syncs, 0, {"cuStreamSynchronize": 100}),
        "cuMemAlloc": (allocs, 5, {"cuMemAlloc_v2": 50, "cuMemAlloc": 10}),
        "cuMemFree": (frees, 0, {"cuMemFree_v2": 60}),
    }


EVENTS_PER_TRACE = 6000 + 100 + 60 + 60


def nearest_rank(values, q):
    s = sorted(values)
    return s[max(1, math.ceil(q * len(s))) - 1]


def within(got, want, rel, what):
    check(abs(got - want) <= rel * want, f"{what}: got {got}, expected {want} (within {rel:.1%})")


class Env:
    def __init__(self, args, work):
        self.report = args.report
        self.make_trace = args.make_trace
        self.work = work

    def path(self, name):
        return os.path.join(self.work, name)

    def trace(self, name, *opts):
        out = self.path(name)
        r = subprocess.run([self.make_trace, out, *opts], capture_output=True, text=True)
        check(r.returncode == 0, f"make_trace {name} {opts} failed: {r.stderr}")
        return out, json.loads(r.stdout)

    def run(self, *args):
        r = subprocess.run([self.report, *args], capture_output=True)
        return r.returncode, r.stdout.decode("utf-8"), r.stderr.decode("utf-8")

    def json_report(self, *args):
        rc, out, err = self.run("--json", *args)
        check(rc == 0, f"exit status {rc}, stderr: {err}")
        try:
            return json.loads(out), err
        except json.JSONDecodeError as e:
            fail(f"invalid JSON ({e}):\n{out}")


def check_api(rep, calls_factor=1, rel_total=0.0, absolute_ns=0):
    want = expected_apis()
    api = rep["api"]
    check(set(api) == set(want), f"API names {sorted(api)}, expected {sorted(want)} (folded)")
    for name, (durs, errors, variants) in want.items():
        a = api[name]
        for key in ("calls", "total_ns", "mean_ns", "p50_ns", "p99_ns", "max_ns", "errors"):
            check(isinstance(a.get(key), int), f"{name}.{key} missing or not an integer: {a.get(key)!r}")
        check(a["calls"] == len(durs) * calls_factor, f"{name}: calls {a['calls']}")
        check(a["errors"] == errors * calls_factor, f"{name}: errors {a['errors']}")
        total = sum(durs) * calls_factor
        check(abs(a["total_ns"] - total) <= rel_total * total + absolute_ns * a["calls"],
              f"{name}: total_ns {a['total_ns']}, expected {total}")
        check(abs(a["mean_ns"] - total / a["calls"]) <= 1 + rel_total * total / a["calls"] + absolute_ns,
              f"{name}: mean_ns {a['mean_ns']}")
        check(abs(a["max_ns"] - max(durs)) <= absolute_ns, f"{name}: max_ns {a['max_ns']}, expected {max(durs)}")
        within(a["p50_ns"], nearest_rank(durs, 0.50), 0.02, f"{name} p50_ns")
        within(a["p99_ns"], nearest_rank(durs, 0.99), 0.02, f"{name} p99_ns")
        want_variants = {k: v * calls_factor for k, v in variants.items()}
        check(a.get("variants") == want_variants, f"{name}: variants {a.get('variants')}, expected {want_variants}")


def check_process(p, pid=4242, ppid=1, forked=False, truncated=False):
    check(p["pid"] == pid and p["ppid"] == ppid, f"pid/ppid {p['pid']}/{p['ppid']}")
    check(p["exe"] == "/usr/bin/python3", f"exe {p['exe']!r}")
    check(p["wsl"] is True and p["host"] == "testhost", f"wsl/host {p['wsl']} {p['host']}")
    check(p["argv"] == ARGV, f"argv {p['argv']!r}")
    check(p["forked"] is forked and p["truncated"] is truncated, f"forked/truncated {p['forked']} {p['truncated']}")
    check(p["driver_version"] == 13000, f"driver_version {p['driver_version']}")
    check(p["gpus"] == [{"name": "NVIDIA H200", "total_mem": 150754820096, "cc": "9.0"}], f"gpus {p['gpus']}")
    if not truncated:
        check(p["events"] == EVENTS_PER_TRACE and p["dropped"] == 0, f"events/dropped {p['events']} {p['dropped']}")


# ---- cases ----
def case_json_known(env):
    t, info = env.trace("known.trace.zst")
    rep, err = env.json_report(t)
    check(err == "", f"unexpected stderr: {err}")
    check(rep["schema"] == 1, "schema")
    check(rep["wall_ns"] == info["end_ns"] - info["start_ns"], f"wall_ns {rep['wall_ns']}, expected "
          f"{info['end_ns'] - info['start_ns']}")
    check(len(rep["processes"]) == 1, "one process")
    check_process(rep["processes"][0])
    check_api(rep)
    check(rep["warnings"] == [], f"warnings {rep['warnings']}")


def case_json_tsc(env):
    t, info = env.trace("tsc.trace.zst", "--tsc")
    rep, err = env.json_report(t)
    check(err == "", f"unexpected stderr: {err}")
    check(rep["processes"][0]["clock"] == "tsc", "clock kind")
    check(abs(rep["wall_ns"] - (info["end_ns"] - info["start_ns"])) <= 2, f"wall_ns {rep['wall_ns']}")
    check_api(rep, rel_total=1e-6, absolute_ns=1)


def case_text_known(env):
    t, _ = env.trace("known.trace.zst")
    rc, out, err = env.run(t)
    check(rc == 0 and err == "", f"exit {rc}, stderr {err}")
    lines = out.splitlines()
    check(lines[0].startswith("wslshim report: 1 process, 6220 events, wall time "), f"header: {lines[0]}")
    for needle in ("pid 4242", "WSL2 (5.15.167.4-microsoft-standard-WSL2)", "driver 13.0 (13000)",
                   "GPU 0: NVIDIA H200, 140.4 GiB, compute 9.0", "6220 events, 0 dropped",
                   'python3 train.py --name="quoted"?and tab'):
        check(needle in out, f"text report lacks {needle!r}:\n{out}")
    table = lines[lines.index("Host time per CUDA driver API, by total") + 2:]
    names = [row.split()[0] for row in table]
    check(names == ["cuLaunchKernel", "cuMemAlloc", "cuStreamSynchronize", "cuMemFree"],
          f"table order {names}")
    row = table[0].split()
    check(row[1] == "6000" and row[-1] == "0", f"cuLaunchKernel row {table[0]}")
    check(table[1].split()[1] == "60" and table[1].split()[-1] == "5", f"cuMemAlloc row {table[1]}")
    check("_ptsz" not in out and "_v2" not in out, "variant names in the text table")


def expect_usage_error(env, args, needle, what):
    rc, out, err = env.run(*args)
    check(rc == 2, f"{what}: exit status {rc}, expected 2 (stderr: {err!r})")
    check(out == "", f"{what}: stdout not empty: {out!r}")
    lines = err.splitlines()
    check(len(lines) == 1 and err.endswith("\n"), f"{what}: expected one stderr line, got {err!r}")
    check(lines[0].startswith("wslshim-report: "), f"{what}: {lines[0]!r}")
    check(needle in lines[0], f"{what}: {lines[0]!r} lacks {needle!r}")


def case_exit_codes(env):
    good, _ = env.trace("good.trace.zst")
    newer, _ = env.trace("newer.trace.zst", "--major", "2")
    swapped, _ = env.trace("swapped.trace.zst", "--swap-order")
    bad, _ = env.trace("bad.trace.zst", "--bad-chunk")
    text = env.path("notes.txt")
    with open(text, "w") as f:
        f.write("not a trace\n")
    empty = env.path("empty.trace.zst")
    open(empty, "w").close()
    empty_dir = env.path("nothing_here")
    os.mkdir(empty_dir)
    with open(os.path.join(empty_dir, "README.txt"), "w") as f:
        f.write("no traces\n")
    missing = env.path("missing.trace.zst")
    cases = [
        (["--bogus", good], "unknown option '--bogus'", "unknown flag"),
        (["-x", good], "unknown option '-x'", "unknown short flag"),
        ([], "no trace given", "no arguments"),
        (["--json"], "no trace given", "no trace"),
        (["-o"], "'-o' needs a file name", "-o without a file"),
        ([missing], f"{missing}: cannot open: No such file or directory", "missing file"),
        ([text], f"{text}: not a zstd file (not a wslshim trace)", "text file"),
        ([empty], f"{empty}: empty file (not a wslshim trace)", "empty file"),
        ([newer], f"{newer}: newer format major version 2 (this reader reads 1)", "newer version"),
        ([swapped], f"{swapped}: trace written in the other byte order", "byte order"),
        ([bad], f"{bad}: corrupt chunk at byte", "absurd chunk size"),
        ([empty_dir], f"{empty_dir}: no *.trace.zst traces in this directory", "empty directory"),
        ([good, bad], f"{bad}: corrupt chunk", "one good, one bad"),
        (["--json", good, text], f"{text}: not a zstd file", "one good, one foreign"),
        (["-o", env.path("no/such/dir/out.json"), good], "cannot write: No such file or directory", "bad -o"),
        (["--compare", good, good], "'--compare' is not implemented yet", "later option"),
    ]
    for args, needle, what in cases:
        expect_usage_error(env, args, needle, what)
    rc, out, err = env.run("--help")
    check(rc == 0 and out.startswith("usage: wslshim-report") and err == "", f"--help: {rc} {err!r}")


def case_truncated_warns(env):
    t, _ = env.trace("killed.trace.zst", "--no-end", "--truncate-tail", "300")
    rep, err = env.json_report(t)
    lines = err.splitlines()
    check(len(lines) == 1 and lines[0].startswith(f"wslshim-report: warning: {t}: trace cut short"),
          f"stderr: {err!r}")
    p = rep["processes"][0]
    check(p["truncated"] is True, "truncated flag")
    check(0 < p["events"] < EVENTS_PER_TRACE, f"events {p['events']}")
    check(sum(a["calls"] for a in rep["api"].values()) == p["events"], "calls add up to events")
    check(len(rep["warnings"]) == 1, f"warnings {rep['warnings']}")

    t, _ = env.trace("dropping.trace.zst", "--dropped", "17")
    rep, err = env.json_report(t)
    check(rep["processes"][0]["dropped"] == 17, "dropped count")
    check(err == f"wslshim-report: warning: {t}: 17 events dropped (the shim's buffers were full)\n",
          f"stderr: {err!r}")
    rc, out, err2 = env.run(t)
    check(rc == 0 and "(17 dropped)" in out and err2 == err, f"text: {rc} {err2!r}")


def case_directory(env):
    d = env.path("run")
    os.mkdir(d)
    os.mkdir(os.path.join(d, "sub.trace.zst"))  # a directory with the suffix is not a trace
    with open(os.path.join(d, "README.txt"), "w") as f:
        f.write("notes\n")
    starts = [5000000000, 5100000000, 5050000000]
    ends = []
    for i, start in enumerate(starts):
        _, info = env.trace(f"run/wslshim-host-{i + 10}.trace.zst", "--pid", str(i + 10), "--start-ns",
                            str(start))
        ends.append(info["end_ns"])
    rep, err = env.json_report(d)
    check(err == "", f"stderr {err!r}")
    check([p["pid"] for p in rep["processes"]] == [10, 12, 11], f"pids by start {rep['processes']}")
    check(rep["wall_ns"] == max(ends) - min(starts), f"wall_ns {rep['wall_ns']}")
    check_api(rep, calls_factor=3)
    # a directory and a file in it: the file is read once
    rep, _ = env.json_report(d, os.path.join(d, "wslshim-host-10.trace.zst"))
    check(len(rep["processes"]) == 3, "a trace named twice is read once")


def case_two_processes(env):
    parent, pi = env.trace("parent.trace.zst", "--pid", "100", "--start-ns", "5000000000")
    child, ci = env.trace("child.trace.zst", "--pid", "101", "--ppid", "100", "--forked", "--start-ns",
                          "5200000000", "--tsc")
    rep, err = env.json_report(child, parent)
    check(err == "", f"stderr {err!r}")
    procs = rep["processes"]
    check([p["pid"] for p in procs] == [100, 101], f"order {[p['pid'] for p in procs]}")
    check_process(procs[0], pid=100)
    check_process(procs[1], pid=101, ppid=100, forked=True)
    want_wall = ci["end_ns"] - pi["start_ns"]
    check(ci["end_ns"] > pi["end_ns"], "the child ends last")
    check(abs(rep["wall_ns"] - want_wall) <= 2, f"wall_ns {rep['wall_ns']}, expected {want_wall}")
    check(procs[1]["start_ns"] == 200000000, f"child start_ns {procs[1]['start_ns']}")
    check_api(rep, calls_factor=2, rel_total=1e-6, absolute_ns=1)


def case_output_file(env):
    t, _ = env.trace("known.trace.zst")
    out_path = env.path("report.json")
    rc, out, err = env.run("--json", "-o", out_path, t)
    check(rc == 0 and out == "" and err == "", f"exit {rc}, stdout {out!r}, stderr {err!r}")
    with open(out_path) as f:
        rep = json.load(f)
    check_api(rep)
    rc, out, err = env.run(f"--output={out_path}", t)
    check(rc == 0 and out == "", "--output=FILE")
    with open(out_path) as f:
        check(f.read().startswith("wslshim report: 1 process"), "text report in the file")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--make-trace", required=True)
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wslshim-report-test-") as work:
        CASES[args.case](Env(args, work))
    print(f"{args.case}: ok")


if __name__ == "__main__":
    main()
