#!/usr/bin/env python3
"""Report tests: runs wslshim-report on traces written by make_trace and checks
its output against figures recomputed here from make_trace's workload formulas.

usage: check_report.py --report PATH --make-trace PATH [--make-io-trace PATH] CASE
"""
import argparse
import json
import math
import os
import re
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
        self.make_io_trace = args.make_io_trace
        self.make_mem_trace = args.make_mem_trace
        self.work = work

    def path(self, name):
        return os.path.join(self.work, name)

    def trace(self, name, *opts):
        out = self.path(name)
        r = subprocess.run([self.make_trace, out, *opts], capture_output=True, text=True)
        check(r.returncode == 0, f"make_trace {name} {opts} failed: {r.stderr}")
        return out, json.loads(r.stdout)

    def io_trace(self, scenario):
        check(self.make_io_trace, "this case needs --make-io-trace")
        out = self.path(scenario + ".trace.zst")
        r = subprocess.run([self.make_io_trace, out, scenario], capture_output=True, text=True)
        check(r.returncode == 0, f"make_io_trace {scenario} failed: {r.stderr}")
        return out

    def mem_trace(self, scenario):
        check(self.make_mem_trace, "this case needs --make-mem-trace")
        out = self.path("mem-" + scenario + ".trace.zst")
        r = subprocess.run([self.make_mem_trace, out, scenario], capture_output=True, text=True)
        check(r.returncode == 0, f"make_mem_trace {scenario} failed: {r.stderr}")
        return out

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
    table = table[:table.index("")] if "" in table else table
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
        (["--project", "mars", good], "--project:", "unknown --project target"),
        (["--project", "wsl2", "--compare", good, good], "leave out --compare", "--project with --compare"),
        (["--compare", good], "'--compare' needs two runs", "--compare with one run"),
        (["--compare", good, good, good], "give no other traces", "--compare with three runs"),
        (["--compare", good, bad], f"{bad}: corrupt chunk", "--compare with a bad B"),
        (["--compare", missing, good], f"{missing}: cannot open", "--compare with a missing A"),
        (["--color=sometimes", good], "takes auto, always or never", "bad --color"),
        (["--gpu-pair-correction=half", good], "expected fixed[:IDLE_NS,QUEUED_NS]", "bad --gpu-pair-correction"),
        (["--gpu-pair-correction=fixed:800", good], "expected fixed:IDLE_NS,QUEUED_NS", "fixed with one part"),
        (["--gpu-pair-correction=fixed:800,-1", good], "expected fixed:IDLE_NS,QUEUED_NS", "fixed, a negative part"),
        (["--gpu-pair-correction=fixed:1e9,0", good], "expected fixed:IDLE_NS,QUEUED_NS", "fixed, a part past 1 ms"),
        (["--gpu-pair-correction=fixedx", good], "expected fixed[:IDLE_NS,QUEUED_NS]", "fixed, then junk"),
    ]
    for mode in ("fixed", "fixed:0,0", "fixed:1000,2500.5", "split", "queued", "none"):
        rc, out, err = env.run("--gpu-pair-correction=" + mode, "--json", good)
        check(rc == 0 and json.loads(out)["gpu"]["pair_correction"] == mode.split(":")[0],
              f"--gpu-pair-correction={mode}: {rc} {err!r}")
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


IO_COUNT_KEYS = ["reads", "bytes_read", "opens", "files_opened", "stats", "seeks", "closes", "mmaps",
                 "bytes_mapped", "errors", "read_ns", "meta_ns", "mmap_ns"]
BUCKETS = ["0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M", "10M-100M", "100M-1G", "1G+"]


def check_int_keys(obj, keys, what):
    for key in keys:
        check(isinstance(obj.get(key), int) and not isinstance(obj.get(key), bool),
              f"{what}.{key} missing or not an integer: {obj.get(key)!r}")


def check_io_shape(io):
    check_int_keys(io, IO_COUNT_KEYS + ["span_ns", "dirs", "unnamed_path_events"], "io")
    check(isinstance(io["wsl"], bool), "io.wsl")
    check(isinstance(io["files_per_s"], (int, float)), "io.files_per_s")
    for fstype, fs in io["by_fs"].items():
        check_int_keys(fs, IO_COUNT_KEYS, f"io.by_fs.{fstype}")
        check(isinstance(fs["crosses_windows"], bool) and isinstance(fs["system"], bool), f"by_fs.{fstype} flags")
        check(all(isinstance(m, str) for m in fs["mount_points"]), f"by_fs.{fstype}.mount_points")
    for m in io["mounts"]:
        for key in ("mount_point", "fstype", "source", "kind"):
            check(isinstance(m[key], str), f"mounts[].{key}")
        check_int_keys(m, IO_COUNT_KEYS, "mounts[]")
        check_int_keys(m["data"], IO_COUNT_KEYS, "mounts[].data")
        check(m["data_root"] is None or isinstance(m["data_root"], str), "mounts[].data_root")
    check([b["bucket"] for b in io["size_histogram"]] == BUCKETS, f"buckets {io['size_histogram']}")
    check(all(isinstance(b["reads"], int) for b in io["size_histogram"]), "bucket reads")
    sf = io["small_files"]
    check(isinstance(sf["files"], int) and 0 <= sf["share_files"] <= 1 and 0 <= sf["share_bytes"] <= 1,
          f"small_files {sf}")
    check(len(io["top_dirs"]) <= 10, "at most 10 top_dirs")
    times = [d["time_ns"] for d in io["top_dirs"]]
    check(times == sorted(times, reverse=True), f"top_dirs by time {times}")
    for d in io["top_dirs"]:
        check(isinstance(d["dir"], str) and isinstance(d["fstype"], str), "top_dirs[] names")
        check_int_keys(d, ["reads", "bytes_read", "files", "time_ns"], "top_dirs[]")
    check_int_keys(io["untracked_dirs"], ["reads", "bytes_read", "files", "time_ns"], "untracked_dirs")
    check_int_keys(io["system"], IO_COUNT_KEYS, "io.system")
    check_int_keys(io["unknown_fd"], IO_COUNT_KEYS, "io.unknown_fd")
    check_int_keys(sf, ["files", "sized_files", "unknown_size", "median_file_size"], "small_files")
    check_int_keys(io["small_reads"], ["reads", "bytes", "time_ns"], "small_reads")


def check_bottlenecks_shape(rep):
    b = rep["bottlenecks"]
    check(isinstance(b, list), "bottlenecks is a list")
    lost = [x["time_lost_ns"] for x in b]
    check(lost == sorted(lost, reverse=True), f"bottlenecks by time lost {lost}")
    for x in b:
        check(isinstance(x["id"], str) and x["severity"] in ("high", "medium", "low"), f"finding {x}")
        check(isinstance(x["time_lost_ns"], int) and 0 <= x["time_lost_ns"] <= rep["wall_ns"], "time_lost_ns")
        for key in ("summary", "advice", "how_computed"):
            check(isinstance(x[key], str) and x[key], f"finding.{key}")
        check(isinstance(x["evidence"], dict), "finding.evidence")


def case_io_json(env):
    rep, err = env.json_report(env.io_trace("drvfs"))
    check(err == "", f"unexpected stderr: {err}")
    io = rep["io"]
    check_io_shape(io)
    check(io["wsl"] is True and rep["processes"][0]["wsl"] is True, "wsl")
    # The 20 Python modules read at start-up are code, not data: counted apart.
    check(io["files_opened"] == 200 and io["reads"] == 400, f"files_opened {io['files_opened']}, reads {io['reads']}")
    check(io["bytes_read"] == 200 * 100000, f"bytes_read {io['bytes_read']}")
    check(io["code"]["files_opened"] == 20 and io["code"]["bytes_read"] == 20 * 8000, f"code {io['code']}")
    check(set(io["by_fs"]) == {"9p", "ext4"}, f"by_fs {sorted(io['by_fs'])}")
    p9 = io["by_fs"]["9p"]
    check(p9["crosses_windows"] is True and p9["mount_points"] == ["/mnt/c"], f"9p {p9}")
    check(p9["reads"] == 400 and p9["bytes_read"] == 20000000 and p9["files_opened"] == 200, f"9p {p9}")
    check(io["by_fs"]["ext4"]["crosses_windows"] is False, "ext4 crosses")
    check(io["mounts"][0]["mount_point"] == "/mnt/c" and io["mounts"][0]["kind"] == "windows_drive", "mounts[0]")
    check(io["mounts"][0]["data_root"] == "/mnt/c/Users/me/datasets/cats", f"data_root {io['mounts'][0]}")
    check(io["top_dirs"][0]["dir"] == "/mnt/c/Users/me/datasets/cats" and io["top_dirs"][0]["files"] == 200,
          f"top_dirs {io['top_dirs'][:1]}")
    check(sum(b["reads"] for b in io["size_histogram"]) == 400, "histogram adds up to the data reads")
    check(rep["processes"][0]["io"]["files_opened"] == 200, "per-process io")
    check(not any(name in rep["api"] for name in ("read", "openat", "close")), f"file calls in api: {list(rep['api'])}")
    check(rep["io_calls"]["openat"]["calls"] == 220 and rep["io_calls"]["read"]["calls"] == 420, "io_calls")
    check_bottlenecks_shape(rep)
    check([x["id"] for x in rep["bottlenecks"]] == ["cross_os_reads"], f"bottlenecks {rep['bottlenecks']}")
    f = rep["bottlenecks"][0]
    check(f["severity"] == "high" and f["time_lost_ns"] == 450000000 - 24533333, f"finding {f}")
    check(f["evidence"]["mounts"] == ["/mnt/c (9p)"], f"evidence {f['evidence']}")
    check("rsync -a /mnt/c/Users/me/datasets/cats/ ~/data/cats/" in f["advice"], f["advice"])

    rep, _ = env.json_report(env.io_trace("small_files"))
    check_io_shape(rep["io"])
    check_bottlenecks_shape(rep)
    check([x["id"] for x in rep["bottlenecks"]] == ["small_file_reads"], f"bottlenecks {rep['bottlenecks']}")
    check(rep["io"]["small_files"]["files"] == 5000 and rep["io"]["small_files"]["share_files"] == 1.0,
          f"small_files {rep['io']['small_files']}")
    check(len(rep["io"]["top_dirs"]) == 10, "ten top folders of fifty")

    for scenario in ("ext4", "large_files"):
        rep, _ = env.json_report(env.io_trace(scenario))
        check_io_shape(rep["io"])
        check(rep["bottlenecks"] == [], f"{scenario}: bottlenecks {rep['bottlenecks']}")


def case_io_text(env):
    rc, out, err = env.run(env.io_trace("drvfs"))
    check(rc == 0 and err == "", f"exit {rc}, stderr {err}")
    section = out[out.index("\nFile I/O"):]
    for needle in ("data files   200 opened", "code         60 calls on Python modules", "9p", "/mnt/c  Windows drive", "ext4", "top folders by I/O time",
                   "/mnt/c/Users/me/datasets/cats (9p)", "read sizes", "10K-100K: 20",
                   "Bottlenecks, by time lost", "[high] cross_os_reads", "advice: Copy the data"):
        check(needle in section, f"text report lacks {needle!r}:\n{section}")
    check(len(section[:section.index("Bottlenecks")].splitlines()) <= 25, "the File I/O section fits a screen")
    rc, out, _ = env.run(env.make_trace and env.trace("cuda_only.trace.zst")[0])
    # the known workload's only finding is vram_headroom (its cuMemAlloc_v2 fail with out of memory)
    check("(no file I/O recorded)" in out and "[high] vram_headroom" in out, "empty sections")


def case_io_corrupt(env):
    for scenario, what in (("bad_paths_length", "PATHS entry 0 (id 1) has length 4097"),
                           ("bad_paths_past_end", "runs past the chunk"),
                           ("bad_paths_zero_id", "has path id 0"),
                           ("bad_paths_cut", "is cut short"),
                           ("bad_paths_nul", "holds a NUL byte"),
                           ("bad_mounts_text", "MOUNTS is not a mount table"),
                           ("bad_mounts_nul", "MOUNTS is not a mount table")):
        t = env.io_trace(scenario)
        for args in ([t], ["--json", t]):
            expect_usage_error(env, args, f"{t}: corrupt chunk at byte ", scenario)
            rc, out, err = env.run(*args)
            check(what in err, f"{scenario}: {err!r} lacks {what!r}")


def case_json_no_io(env):
    t, _ = env.trace("known.trace.zst")
    rep, _ = env.json_report(t)
    check_io_shape(rep["io"])
    check(rep["io"]["reads"] == 0 and rep["io"]["by_fs"] == {}, "no I/O")
    # the known workload's cuMemAlloc_v2 fail with CUDA_ERROR_OUT_OF_MEMORY: only vram_headroom fires
    check([b["id"] for b in rep["bottlenecks"]] == ["vram_headroom"], f"findings {rep['bottlenecks']}")
    check(rep["io_calls"] == {}, "no io_calls")


MEM_KEYS = ["peak_device_bytes", "peak_at_ns", "allocations", "allocated_bytes", "frees", "unknown_frees",
            "failed_frees", "live_at_exit_bytes", "live_at_exit_allocations", "failed_allocations", "oom_failures",
            "largest_failed_bytes", "failed_ns", "async_allocations", "async_bytes", "async_frees",
            "page_locked_peak_bytes", "untracked_allocations", "reused_pointers", "late_events"]
MEM_KIND_KEYS = ["allocations", "bytes", "peak_bytes", "frees", "unknown_frees", "failed", "live_at_exit_bytes"]


def check_memory_shape(m):
    check_int_keys(m, MEM_KEYS + ["sum_of_process_peaks_bytes"], "memory")
    for kind in ("pinned", "registered", "managed"):
        check_int_keys(m[kind], MEM_KIND_KEYS, f"memory.{kind}")
    check(m["device_total_bytes"] is None or isinstance(m["device_total_bytes"], int), "device_total_bytes")
    check(m["peak_share_of_device"] is None or isinstance(m["peak_share_of_device"], (int, float)),
          "peak_share_of_device")
    h = m["size_histogram"]
    check(len(h) == 25 and h[0]["bucket"] == "<2K" and h[-1]["bucket"] == "16G+", f"size_histogram {h}")
    for b in h:
        check_int_keys(b, ["count", "min_bytes"], "size_histogram[]")
    check(isinstance(m["per_process"], list), "per_process")
    for p in m["per_process"]:
        check_int_keys(p, ["pid"] + MEM_KEYS, "per_process[]")


def case_memory_json(env):
    rep, err = env.json_report(env.mem_trace("mixed"))
    check(err == "", f"unexpected stderr: {err}")
    m = rep["memory"]
    check_memory_shape(m)
    MiB, GiB = 1 << 20, 1 << 30
    want = {"peak_device_bytes": 1274 * MiB, "device_total_bytes": 80 * GiB, "allocations": 5,
            "allocated_bytes": 1384 * MiB, "frees": 5, "unknown_frees": 1, "live_at_exit_bytes": 50 * MiB,
            "failed_allocations": 2, "oom_failures": 2, "largest_failed_bytes": 96 * GiB, "async_allocations": 1,
            "page_locked_peak_bytes": 600 * MiB}
    for k, v in want.items():
        check(m[k] == v, f"memory.{k} = {m[k]}, expected {v}")
    check(m["peak_at_ns"] == 4100, f"peak_at_ns {m['peak_at_ns']}")  # the run starts with the process
    check(abs(m["peak_share_of_device"] - 1274 / (80 * 1024)) < 1e-9, f"share {m['peak_share_of_device']}")
    check(m["pinned"]["peak_bytes"] == 600 * MiB and m["pinned"]["allocations"] == 2, f"pinned {m['pinned']}")
    check(m["managed"]["allocations"] == 1 and m["managed"]["bytes"] == 2 * MiB, f"managed {m['managed']}")
    check(m["registered"]["peak_bytes"] == 64 * MiB, f"registered {m['registered']}")
    counts = {b["bucket"]: b["count"] for b in m["size_histogram"] if b["count"]}
    check(counts == {"8M-16M": 1, "32M-64M": 1, "64M-128M": 1, "128M-256M": 1, "1G-2G": 1}, f"histogram {counts}")
    check(len(m["per_process"]) == 1 and m["per_process"][0]["pid"] == 5151, "per_process")
    check_bottlenecks_shape(rep)
    ids = [b["id"] for b in rep["bottlenecks"]]
    check(ids[0] == "vram_headroom" and sorted(ids) == ["managed_memory", "pinned_memory", "vram_headroom"],
          f"bottlenecks {ids}")
    v = rep["bottlenecks"][0]
    check(v["severity"] == "high" and v["time_lost_ns"] == 10000, f"vram_headroom {v}")
    check(v["evidence"]["oom_failures"] == 2, "evidence")
    # the known trace: memory with no DRIVER-less nulls, shape only
    t, _ = env.trace("known.trace.zst")
    rep, _ = env.json_report(t)
    check_memory_shape(rep["memory"])
    check(rep["memory"]["failed_allocations"] == 5 and rep["memory"]["oom_failures"] == 5, "known OOMs")
    t, _ = env.trace("nodriver.trace.zst", "--no-driver")
    rep, _ = env.json_report(t)
    check_memory_shape(rep["memory"])
    check(rep["memory"]["device_total_bytes"] is None and rep["memory"]["peak_share_of_device"] is None, "no driver")


def case_memory_text(env):
    rc, out, err = env.run(env.mem_trace("mixed"))
    check(rc == 0 and err == "", f"exit {rc}, stderr {err}")
    for needle in ("\nMemory\n", "peak 1.24 GiB of 80.0 GiB (1.6% of the card)", "2 allocations (2 out of memory)",
                   "pinned host  peak 600 MiB", "managed      1 allocations", "[high] vram_headroom",
                   "[low] pinned_memory", "[low] managed_memory"):
        check(needle in out, f"text report lacks {needle!r}:\n{out}")


GPU_KEYS = ["launches", "kernels_distinct", "unnamed_launches", "untracked_launches", "failed_launches",
            "graph_launches", "named_handles"]


def check_gpu_shape(g):
    check_int_keys(g, GPU_KEYS, "gpu")
    check(isinstance(g["kernels"], list) and len(g["kernels"]) <= 50, "gpu.kernels")
    counts = [k["count"] for k in g["kernels"]]
    check(counts == sorted(counts, reverse=True), f"gpu.kernels not by count: {counts}")
    for k in g["kernels"]:
        check(isinstance(k["name"], str) and (k["mangled"] is None or isinstance(k["mangled"], str)), f"kernel {k}")
        check_int_keys(k, ["count"], "gpu.kernels[]")
        check(isinstance(k["launch_apis"], dict) and sum(k["launch_apis"].values()) == k["count"],
              f"launch_apis {k}")


def case_kernels_json(env):
    rep, err = env.json_report(env.mem_trace("kernels"), env.mem_trace("kernels_b"))
    check(err == "", f"unexpected stderr: {err}")
    g = rep["gpu"]
    check_gpu_shape(g)
    want = {"launches": 35, "kernels_distinct": 7, "unnamed_launches": 7, "untracked_launches": 0,
            "failed_launches": 1, "graph_launches": 3, "named_handles": 7}
    for k, v in want.items():
        check(g[k] == v, f"gpu.{k} = {g[k]}, expected {v}")
    got = [(k["name"], k["mangled"], k["count"], k["launch_apis"]) for k in g["kernels"]]
    expected = [
        ("vector_add", "vector_add", 14, {"cuLaunchKernel": 11, "cuLaunchKernelEx": 3}),
        ("kernel(float*, int)", "_Z6kernelPfi", 7, {"cuLaunchKernel": 7}),
        ("function 0x9000", None, 6, {"cuLaunchKernel": 6}),
        ("other_kernel", "other_kernel", 4, {"cuLaunchKernel": 4}),
        ("at::native::reduce_kernel()", "_ZN2at6native13reduce_kernelEv", 2, {"cuLaunchCooperativeKernel": 2}),
        ("_Zfoo", "_Zfoo", 1, {"cuLaunchKernel": 1}),
        ("function 0x9000", None, 1, {"cuLaunchKernel": 1}),
    ]
    check(got == expected, f"gpu.kernels {got}")
    check(g["kernels"][2]["pid"] == 8181 and g["kernels"][6]["pid"] == 8282 and g["kernels"][2]["handle"] == 0x9000,
          "unnamed handles per process")
    check(rep["api"]["cuModuleGetFunction"]["calls"] == 5, "cuModuleGetFunction in api")
    # no names at all: the known trace (launches without FUNC_NAME events), the memory one (no launches)
    t, _ = env.trace("known.trace.zst")
    rep, _ = env.json_report(t)
    check_gpu_shape(rep["gpu"])
    g = rep["gpu"]
    check(g["launches"] == g["unnamed_launches"] == 6000, f"known: {g['launches']} launches")
    rep, _ = env.json_report(env.mem_trace("mixed"))
    check_gpu_shape(rep["gpu"])
    check(rep["gpu"]["launches"] == 0 and rep["gpu"]["kernels"] == [], "no launches")


def case_kernels_text(env):
    rc, out, err = env.run(env.mem_trace("kernels"), env.mem_trace("kernels_b"))
    check(rc == 0 and err == "", f"exit {rc}, stderr {err}")
    for needle in ("\nKernels by launches (35 launches, 7 kernels, 7 launches unnamed, 3 graph launches)\n",
                   "          14  vector_add\n", "           7  kernel(float*, int)\n",
                   "function 0x9000 (pid 8282, unnamed)"):
        check(needle in out, f"text report lacks {needle!r}:\n{out}")
    check(out.index("Kernels by launches") < out.index("\nMemory\n"), "kernels after the API table")
    rc, out, err = env.run(env.mem_trace("mixed"))
    check("Kernels by launches" not in out, "no kernel section without launches")


# ---- summary, colour, host-side rules, --compare ----
def case_summary_text(env):
    rc, out, err = env.run(env.mem_trace("sync_item"))
    check(rc == 0 and err == "", f"exit {rc}, stderr {err}")
    check("\x1b" not in out, "colour in piped output")
    head = out[:out.index("\nProcesses\n")]
    for needle in ("  run       python3 train.py  (pid 7001)\n",
                   "  platform  WSL2 (6.6.87.2-microsoft-standard-WSL2), host memhost\n",
                   "  GPU       NVIDIA A100-SXM4-80GB (80.0 GiB); driver 12.8 (/usr/lib/wsl/lib/libcuda.so.1)\n",
                   "  wall      601.00 ms; host time in CUDA calls 526.05 ms",
                   "  GPU busy  not measured",
                   "    1. medium   sync_heavy             53.39 ms    9% (  9% of steady)  read GPU values",
                   "  not evaluated without GPU timing: launch_bound dispatch_bound gpu_idle\n"):
        check(needle in head, f"summary lacks {needle!r}:\n{head}")
    check(len(head.splitlines()) <= 24, "the summary fits one screen")
    check("      how: Waits: cuStreamSynchronize" in out, "how_computed in the bottleneck section")
    rc, out, err = env.run(env.mem_trace("quiet"))
    check("  top bottlenecks: none found\n" in out, f"no findings: {out[:800]}")


def run_in_pty(argv, env_extra):
    """Runs argv with stdout on a pseudo-terminal; returns what it wrote."""
    import pty
    import select
    master, slave = pty.openpty()
    env = dict(os.environ)
    env.pop("NO_COLOR", None)
    env.update(env_extra)
    p = subprocess.Popen(argv, stdout=slave, stderr=subprocess.PIPE, env=env)
    os.close(slave)
    chunks = []
    while True:
        r, _, _ = select.select([master], [], [], 10)
        if not r:
            break
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    p.wait(timeout=30)
    os.close(master)
    return p.returncode, b"".join(chunks).decode("utf-8", "replace")


def case_color(env):
    t = env.mem_trace("sync_item")
    rc, out, _ = env.run("--color=always", t)
    check(rc == 0 and "\x1b[1m" in out and "\x1b[33m" in out, "--color=always: bold and the medium colour")
    rc, out, _ = env.run("--color=never", t)
    check("\x1b" not in out, "--color=never")
    rc, out, _ = env.run("--json", "--color=always", t)
    check("\x1b" not in out, "no colour in JSON")
    json.loads(out)
    rc, out = run_in_pty([env.report, t], {})
    check(rc == 0 and "\x1b[" in out, "auto on a terminal: colour")
    rc, out = run_in_pty([env.report, t], {"NO_COLOR": "1"})
    check(rc == 0 and "\x1b" not in out, "auto on a terminal with NO_COLOR: none")
    rc, out = run_in_pty([env.report, "--color=never", t], {})
    check(rc == 0 and "\x1b" not in out, "never on a terminal")
    rc, out = run_in_pty([env.report, "--color=always", t], {"NO_COLOR": "1"})
    check(rc == 0 and "\x1b[" in out, "always wins over NO_COLOR")
    out_file = env.path("colour.txt")
    rc, out = run_in_pty([env.report, "-o", out_file, t], {})
    check("\x1b" not in open(out_file).read(), "auto: no colour into a file")


def case_cli_forms(env):
    t, _ = env.trace("cli.trace.zst")
    # --opt VALUE and --opt=VALUE alike, for every option that takes a value
    chrome_a, chrome_b = env.path("a.json"), env.path("b.json")
    rc_a, _, err_a = env.run("--chrome", chrome_a, "--from", "0", "--to", "1000", t)
    rc_b, _, err_b = env.run("--chrome=" + chrome_b, "--from=0", "--to=1000", "--max-events=2000000", t)
    check(rc_a == 0 and rc_b == 0 and open(chrome_a).read() == open(chrome_b).read(),
          f"--from=0 --to=1000: {rc_a} {rc_b} {err_a!r} {err_b!r}")
    rc, out, err = env.run("--output=" + env.path("o.txt"), t)
    check(rc == 0 and os.path.exists(env.path("o.txt")), f"--output=FILE: {rc} {err!r}")
    rc, out, err = env.run("--color=never", "--project=native", t)
    check(rc == 0 and "\x1b" not in out, f"--project=native: {rc} {err!r}")
    expect_usage_error(env, ["--from=soon", "--chrome", chrome_a, t], "--from 'soon'", "--from=soon")
    expect_usage_error(env, ["--json=yes", t], "'--json'", "a value for --json")
    expect_usage_error(env, ["--html"], "'--html' needs a value", "--html without a value")
    for args in (["--version"], ["-V"]):
        rc, out, err = env.run(*args)
        check(rc == 0 and re.fullmatch(r"wslshim-report \d+\.\d+\.\d+\n", out) and err == "", f"{args}: {out!r}")
    rc, out, err = env.run("--help")
    for opt in ("--json", "--compare", "--color", "--output", "--html", "--chrome", "--from", "--to", "--max-events",
                "--project", "--project-from", "--project-fs", "--sqlite", "--version", "--help"):
        check(opt in out, f"--help does not list {opt}")
    # TERM=dumb: no colour on a terminal (NO_COLOR as before); --color=always still wins
    mt = env.mem_trace("sync_item")
    rc, out = run_in_pty([env.report, mt], {"TERM": "dumb"})
    check(rc == 0 and "\x1b" not in out, "TERM=dumb on a terminal: colour")
    rc, out = run_in_pty([env.report, mt], {"TERM": "xterm"})
    check(rc == 0 and "\x1b[" in out, "TERM=xterm on a terminal: no colour (control)")
    rc, out = run_in_pty([env.report, "--color=always", mt], {"TERM": "dumb"})
    check(rc == 0 and "\x1b[" in out, "--color=always with TERM=dumb")
    # --compare of two different programs: one warning line; the same program: none
    other, _ = env.trace("other.trace.zst", "--exe", "/usr/bin/ruby")
    rc, out, err = env.run("--compare", t, other)
    check(rc == 0 and err.count("\n") == 1 and "ran different programs" in err and "ruby" in err,
          f"--compare of different programs: {rc} {err!r}")
    rc, out, err = env.run("--compare", t, t)
    check(rc == 0 and "different programs" not in err, f"--compare of one program: {err!r}")


def case_host_json(env):
    expected = {"sync_item": "sync_heavy", "alloc_churn": "alloc_churn", "small_copies": "small_transfers",
                "pageable": "pageable_transfers"}
    for scenario, rule in expected.items():
        rep, _ = env.json_report(env.mem_trace(scenario))
        ids = [b["id"] for b in rep["bottlenecks"]]
        check(ids == [rule], f"{scenario}: bottlenecks {ids}, expected [{rule}]")
        b = rep["bottlenecks"][0]
        for key in ("severity", "time_lost_ns", "summary", "advice", "how_computed", "fix", "evidence"):
            check(key in b, f"{scenario}: {key} missing")
        check(0 < b["time_lost_ns"] <= rep["wall_ns"] and b["scaled_to_wall"] is False, f"{scenario}: {b}")
        check(rep["not_evaluated"] == ["launch_bound", "dispatch_bound", "gpu_idle"], "not_evaluated")
        check(rep["gpu"]["busy_ns"] is None and rep["gpu"]["busy_share"] is None, "gpu busy unknown")
    rep, _ = env.json_report(env.mem_trace("sync_item"))
    w = rep["cuda_host"]["waits"]
    check(w["stream_sync"]["count"] == 500 and w["blocking_copy"]["count"] == 500, f"waits {w}")
    check(w["blocking_copy"]["blocked_ns"] == 500 * 1000000, "blocked")
    c = rep["cuda_host"]["copies"]
    check(c["count"] == 500 and c["dtoh"] == 500 and c["pageable_dtoh"] == 500 and c["small"] == 500, f"copies {c}")
    rep, _ = env.json_report(env.mem_trace("quiet"))
    check(rep["bottlenecks"] == [], "quiet: nothing")


def case_compare_text(env):
    a, b = env.mem_trace("cmp_a"), env.mem_trace("cmp_b")
    rc, out, err = env.run("--compare", a, b)
    check(rc == 0 and err == "", f"exit {rc}, stderr {err}")
    for needle in ("wslshim comparison: A is the baseline, B the other run\n",
                   f"  A: {a}\n", f"  B: {b}\n",
                   "  wall        A 11.90 ms, B 61.90 ms: +50.00 ms (+420%)\n",
                   "   +10.00 ms  2000 more launches in B (1000 -> 3000) x 5.00 us each\n",
                   "    +9.00 ms  launches 3.00 us slower each in B (5.00 us -> 8.00 us) x 3000 calls\n",
                   "   +31.00 ms  unexplained",
                   "  cuLaunchKernel                     1000       3000    5.00 us    8.00 us"):
        check(needle in out, f"compare text lacks {needle!r}:\n{out}")
    # reversed: B faster
    rc, out, err = env.run("--compare", b, a)
    check("Why B took 50.00 ms less" in out and "-16.00 ms  2000 fewer launches" in out, out)


def case_compare_json(env):
    a_dir, b_dir = env.path("run_a"), env.path("run_b")
    os.mkdir(a_dir)
    os.mkdir(b_dir)
    os.replace(env.mem_trace("cmp_a"), os.path.join(a_dir, "1.trace.zst"))
    os.replace(env.io_trace("ext4"), os.path.join(a_dir, "2.trace.zst"))
    os.replace(env.mem_trace("cmp_b_parallel"), os.path.join(b_dir, "1.trace.zst"))
    os.replace(env.io_trace("drvfs"), os.path.join(b_dir, "2.trace.zst"))
    rep, err = env.json_report("--compare", a_dir, b_dir)
    ra, _ = env.json_report(a_dir)
    rb, _ = env.json_report(b_dir)
    c = rep["compare"]
    check(rep["wall_ns"] == rb["wall_ns"], "the report is B's")
    check(c["wall_ns_a"] == ra["wall_ns"] and c["wall_ns_b"] == rb["wall_ns"], "walls")
    check(c["wall_diff_ns"] == rb["wall_ns"] - ra["wall_ns"], "difference")
    check(len(c["traces_a"]) == 2 and len(c["traces_b"]) == 2, "both traces of each run")
    api = c["api"]["cuLaunchKernel"]
    check(api["calls_a"] == 1000 and api["calls_b"] == 4000 and api["mean_ns_a"] == 5000 and
          api["mean_ns_b"] == 50000 and api["p50_ns_b"] == 50000 and api["p99_ns_a"] == 5000, f"api {api}")
    fs = c["io"]["by_fs"]
    check("9p" in fs and "ext4" in fs and fs["9p"]["crosses_windows"] is True, f"by_fs {sorted(fs)}")
    check(fs["9p"]["time_ns_a"] == 0 and fs["9p"]["time_ns_b"] == rb["io"]["by_fs"]["9p"]["read_ns"] +
          rb["io"]["by_fs"]["9p"]["meta_ns"] + rb["io"]["by_fs"]["9p"]["mmap_ns"], "9p time")
    kinds = {(k["kind"], k["name"]) for k in c["causes"]}
    check(("api_calls", "launches") in kinds and ("api_time", "launches") in kinds and ("io", "9p") in kinds,
          f"causes {kinds}")
    total = sum(k["attributed_ns"] for k in c["causes"])
    check(total == c["explained_ns"] and c["explained_ns"] + c["unexplained_ns"] == c["wall_diff_ns"],
          "explained + unexplained = difference")
    d = c["wall_diff_ns"]
    check((d >= 0 and 0 <= c["unexplained_ns"] <= d) or (d < 0 and d <= c["unexplained_ns"] <= 0),
          f"never more than the difference: {c['explained_ns']} of {d}")
    check(0 < c["scale"] <= 1, "scale")
    ids = {x["id"] for x in c["bottlenecks"]}
    check(ids == {x["id"] for x in ra["bottlenecks"]} | {x["id"] for x in rb["bottlenecks"]}, f"bottlenecks {ids}")


CASES = {name[5:]: fn for name, fn in globals().items() if name.startswith("case_")}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--make-trace", required=True)
    ap.add_argument("--make-io-trace")
    ap.add_argument("--make-mem-trace")
    ap.add_argument("case", choices=sorted(CASES))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="wslshim-report-test-") as work:
        CASES[args.case](Env(args, work))
    print(f"{args.case}: ok")


if __name__ == "__main__":
    main()
