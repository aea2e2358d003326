#!/usr/bin/env python3
"""Checks of `wslshim-report --chrome`, one case per ctest entry.

    chrome_check.py --report EXE --make EXE --workdir DIR [--shim LIB --fakedir DIR --client EXE --rows EXE] CASE

Cases: synthetic, synthetic_tsc, two_processes, window, limit, fake_client, bad_input, progress.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

A = None
FAILS = []


def fail(msg):
    FAILS.append(msg)


def run(args, env=None, **kw):
    e = dict(os.environ)
    e.pop("WSLSHIM_PROGRESS", None)
    if env:
        e.update(env)
    return subprocess.run(args, env=e, capture_output=True, text=True, timeout=120, **kw)


def workdir(name):
    d = os.path.join(A.workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def make(d, name, *args):
    path = os.path.join(d, name)
    r = run([A.make, path, *args])
    if r.returncode != 0:
        raise SystemExit(f"make_chrome_trace failed: {r.stderr}")
    return path, json.loads(r.stdout)


def export(out, *args, expect_ok=True):
    r = run([A.report, "--chrome", out, *args])
    if expect_ok and r.returncode != 0:
        fail(f"--chrome {args}: exit {r.returncode}: {r.stderr.strip()}")
        return None, r
    if not expect_ok:
        return None, r
    with open(out) as f:
        return json.load(f), r     # valid JSON or an exception (the test fails)


def tracks(doc):
    """(pid, tid) -> thread name; pid -> process name."""
    threads, procs = {}, {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
        if e["ph"] == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"]
    return threads, procs


def check_synthetic(doc, info, start_offset_ns=0):
    pid = info["pid"]
    ev = [e for e in doc["traceEvents"] if e.get("pid") == pid]
    threads, procs = tracks(doc)
    if procs.get(pid) != "python3 train.py":
        fail(f"process name {procs.get(pid)!r}")
    launches = [e for e in ev if e["ph"] == "X" and e["name"] == "cuLaunchKernel"]
    kernels = [e for e in ev if e["ph"] == "X" and e.get("cat") == "kernel"]
    if len(launches) != info["launches"]:
        fail(f"{len(launches)} launch slices, expected {info['launches']}")
    if len(kernels) != info["kernels"]:
        fail(f"{len(kernels)} kernel slices, expected {info['kernels']}")
    # times: launch i at +10000 + 10000 i ns, 4 us long; microseconds with the ns as decimals
    for i, l in enumerate(sorted(launches, key=lambda e: e["ts"])):
        want = (start_offset_ns + 10000 + 10000 * i) / 1000
        if abs(l["ts"] - want) > 1e-6 or abs(l["dur"] - 4.0) > 1e-6:
            fail(f"launch {i}: ts {l['ts']} dur {l['dur']}, expected {want} and 4.0")
            break
        if l["tid"] != pid or l["args"].get("kernel") != "kernel(float*, int)" or l["args"].get("grid") != "64,2,1":
            fail(f"launch {i}: {l}")
            break
    for k in kernels:
        name = threads.get((pid, k["tid"]))
        if name != f"GPU stream {k['args']['stream']}" or k["args"]["stream"] not in ("0x5000", "0x6000"):
            fail(f"kernel on track {name!r}, stream {k['args']['stream']}")
            break
        if k["name"] != "kernel(float*, int)" or abs(k["dur"] - 3.0) > 1e-6:
            fail(f"kernel slice {k}")
            break
    if len({k["tid"] for k in kernels}) != 2:
        fail(f"kernels on {len({k['tid'] for k in kernels})} tracks, expected 2 (two streams)")
    idle = sum(1 for k in kernels if k["args"]["idle_at_submit"])
    if idle != sum(1 for i in range(info["kernels"]) if i % 4 == 3):
        fail(f"{idle} kernels idle at submit")
    # flows: each s pairs with one f; s sits at a launch's start on its thread, f at a kernel's start on its track
    starts = {e["id"]: e for e in ev if e["ph"] == "s"}
    ends = {e["id"]: e for e in ev if e["ph"] == "f"}
    if len(starts) != info["kernels"] or set(starts) != set(ends):
        fail(f"{len(starts)} flow starts, {len(ends)} flow ends, expected {info['kernels']} pairs")
    launch_at = {(l["tid"], l["ts"]) for l in launches}
    kernel_at = {(k["tid"], k["ts"]) for k in kernels}
    for i, s in starts.items():
        f = ends.get(i)
        if not f:
            continue
        if (s["tid"], s["ts"]) not in launch_at or (f["tid"], f["ts"]) not in kernel_at or f.get("bp") != "e" \
                or s["cat"] != f["cat"] or s["name"] != f["name"]:
            fail(f"flow {i} does not join a launch to a kernel: {s} -> {f}")
            break
        if abs(f["ts"] - s["ts"] - 6.0) > 1e-6:     # the kernel started 2 us after the 4 us launch
            fail(f"flow {i}: from {s['ts']} to {f['ts']}")
            break
    # counters
    mem = [e["args"]["bytes"] for e in sorted((e for e in ev if e["ph"] == "C" and e["name"] == "GPU memory in use"),
                                              key=lambda e: e["ts"])]
    if mem != info["memory"]:
        fail(f"memory counter {mem}, expected {info['memory']}")
    io = [e for e in ev if e["ph"] == "C" and e["name"].startswith("file bytes read")]
    if sum(e["args"]["bytes"] for e in io) != info["bytes_read"]:
        fail(f"I/O counter sums to {sum(e['args']['bytes'] for e in io)}, expected {info['bytes_read']}")
    reads = [e for e in ev if e["ph"] == "X" and e["name"] == "read"]
    if len(reads) != info["reads"] or any(r["args"].get("path") != "/data/x.bin" or r["args"].get("bytes") != 4096
                                         for r in reads):
        fail(f"read slices: {reads[:2]}")
    calls = [e for e in ev if e["ph"] == "X" and e.get("cat") in ("cuda", "io")]
    if len(calls) != info["calls"]:
        fail(f"{len(calls)} call slices, expected {info['calls']}")


def case_synthetic(tsc=False):
    d = workdir("synthetic" + ("_tsc" if tsc else ""))
    path, info = make(d, "a.trace.zst", "--pid", "5000", *(["--tsc"] if tsc else []))
    doc, r = export(os.path.join(d, "out.json"), path)
    if doc:
        check_synthetic(doc, info)
        if "wrote " not in r.stderr:
            fail(f"no summary line: {r.stderr!r}")
    # stdout as the file
    r = run([A.report, "--chrome", "-", path])
    if r.returncode != 0 or json.loads(r.stdout) != doc:
        fail("--chrome - (stdout) differs from the file")


def case_synthetic_tsc():
    case_synthetic(tsc=True)


def case_two_processes():
    d = workdir("two_processes")
    a, ia = make(d, "a.trace.zst", "--pid", "5000", "--start-ns", "7000000000")
    b, ib = make(d, "b.trace.zst", "--pid", "6000", "--start-ns", "7050000000", "--tsc")
    doc, _ = export(os.path.join(d, "out.json"), d)
    if not doc:
        return
    check_synthetic(doc, ia)
    check_synthetic(doc, ib, start_offset_ns=50000000)   # one clock: b started 50 ms after a
    sort = {e["pid"]: e["args"]["sort_index"] for e in doc["traceEvents"] if e["name"] == "process_sort_index"}
    if not sort.get(5000, 1) < sort.get(6000, 0):
        fail(f"process sort order {sort}")


def case_window():
    d = workdir("window")
    path, info = make(d, "a.trace.zst", "--launches", "1000")
    full, _ = export(os.path.join(d, "full.json"), path)
    part, _ = export(os.path.join(d, "part.json"), "--from", "0.002", "--to", "0.0055", path)
    if not full or not part:
        return
    lo, hi = 2000.0, 5500.0

    def slices(doc):
        names, _ = tracks(doc)
        return sorted((e["name"], names.get((e["pid"], e["tid"])), e["ts"]) for e in doc["traceEvents"]
                      if e["ph"] == "X")
    want = [s for s in slices(full) if lo <= s[2] < hi]
    got = slices(part)
    if got != want or not got:
        fail(f"window: {len(got)} slices, expected the {len(want)} of the full export that start in it")
    starts = {e["id"] for e in part["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"] for e in part["traceEvents"] if e["ph"] == "f"}
    if starts != ends or not starts:
        fail(f"window: {len(starts)} flow starts and {len(ends)} ends do not pair")
    mem = [e for e in part["traceEvents"] if e["ph"] == "C" and e["name"] == "GPU memory in use"]
    # the allocations at 2, 3, 4 ms and the free at 5 ms are inside; nothing before the window
    if [e["args"]["bytes"] for e in mem] != info["memory"]:
        fail(f"window memory counter {[e['args']['bytes'] for e in mem]}")
    late, _ = export(os.path.join(d, "late.json"), "--from", "0.0035", path)
    mem = [(e["ts"], e["args"]["bytes"]) for e in late["traceEvents"] if e["ph"] == "C" and e["name"] ==
           "GPU memory in use"] if late else []
    if mem[:1] != [(3500.0, 3 << 20)]:
        fail(f"a window from 3.5 ms starts the memory counter with what was live: {mem[:3]}")


def case_limit():
    d = workdir("limit")
    path, info = make(d, "a.trace.zst", "--launches", "3000")
    total = info["calls"] + info["kernels"]
    out = os.path.join(d, "out.json")
    _, r = export(out, "--max-events", "1000", path, expect_ok=False)
    lines = r.stderr.strip().splitlines()
    if r.returncode != 2 or len(lines) != 1 or str(total) not in lines[0] or "1000" not in lines[0] \
            or "--from" not in lines[0]:
        fail(f"over the limit: exit {r.returncode}, stderr {r.stderr!r} (expected 2, one line with {total}, "
             "the limit and --from)")
    if os.listdir(d) != ["a.trace.zst"]:
        fail(f"a refused export left files: {os.listdir(d)}")
    # a window that fits passes; one that does not is refused with its own numbers
    doc, _ = export(out, "--max-events", "1000", "--from", "0.01", "--to", "0.014", path)
    if doc and not 0 < sum(1 for e in doc["traceEvents"] if e["ph"] == "X") <= 1000:
        fail("a window under the limit was not exported")
    _, r = export(out + "2", "--max-events", "1000", "--from", "0", "--to", "0.02", path, expect_ok=False)
    if r.returncode != 2 or "window" not in r.stderr:
        fail(f"a window over the limit: exit {r.returncode}: {r.stderr!r}")
    doc, _ = export(out, "--max-events", str(total), path)
    if doc and sum(1 for e in doc["traceEvents"] if e["ph"] == "X") != total:
        fail("exactly at the limit: not exported whole")


def case_fake_client():
    d = workdir("fake_client")
    rows = run([A.rows]).stdout.split("\n")
    base_of = {line.split()[0]: line.split()[1] for line in rows if line.strip()}
    env = {"LD_PRELOAD": A.shim, "LD_LIBRARY_PATH": A.fakedir, "WSLSHIM_OUTPUT": os.path.join(d, "%p.trace.zst")}
    for client in A.client:
        client = client.split()
        r = run(client, env=env)
        if r.returncode != 0:
            fail(f"{client}: exit {r.returncode}: {r.stderr[-300:]}")
            return
        expect = json.loads([l for l in r.stdout.splitlines() if l.startswith("EXPECT ")][-1][7:])
        doc, _ = export(os.path.join(d, "out.json"), d)
        if not doc:
            return
        shutil.move(os.path.join(d, "out.json"), os.path.join(d, os.path.basename(client[0]) + ".json"))
        for f in os.listdir(d):
            if f.endswith(".trace.zst"):
                os.unlink(os.path.join(d, f))
        if not doc:
            return
        want = {}
        for sym, n in expect.items():
            if sym in base_of:
                want[base_of[sym]] = want.get(base_of[sym], 0) + n
        got = {}
        for e in doc["traceEvents"]:
            if e["ph"] == "X" and e.get("cat") == "cuda":
                got[e["name"]] = got.get(e["name"], 0) + 1
        launch_names = [b for b in want if b.startswith("cuLaunch") and "HostFunc" not in b]
        if not launch_names or any(got.get(b, 0) != want[b] for b in launch_names):
            fail(f"{client}: launch slices {[(b, got.get(b, 0)) for b in launch_names]}, "
                 f"the client made {[(b, want[b]) for b in launch_names]}")
        if got != want:
            diff = {b: (got.get(b, 0), want.get(b, 0)) for b in set(got) | set(want) if got.get(b, 0) != want.get(b, 0)}
            fail(f"{client}: slices per API differ from the client's calls: {diff}")


def case_bad_input():
    d = workdir("bad_input")
    path, _ = make(d, "a.trace.zst")
    junk = os.path.join(d, "junk.trace.zst")
    with open(junk, "w") as f:
        f.write("not a trace\n")
    out = os.path.join(d, "out.json")
    for args, what in [
        (["--chrome"], "--chrome without a file"),
        (["--chrome", out], "no trace"),
        (["--chrome", out, junk], "a file that is not a trace"),
        (["--chrome", out, path, junk], "a good trace and a bad one"),
        (["--chrome", out, os.path.join(d, "missing.trace.zst")], "a missing trace"),
        (["--chrome", out, "--from", "-1", path], "--from -1"),
        (["--chrome", out, "--from", "abc", path], "--from abc"),
        (["--chrome", out, "--to", "nan", path], "--to nan"),
        (["--chrome", out, "--from", "0.3", "--to", "0.1", path], "--from after --to"),
        (["--chrome", out, "--from", "1000", path], "--from past the end"),
        (["--chrome", out, "--max-events", "0", path], "--max-events 0"),
        (["--chrome", out, "--max-events", "-5", path], "--max-events -5"),
        (["--chrome", out, "--max-events"], "--max-events without a value"),
        (["--from", "1", path], "--from without --chrome"),
        (["--chrome", out, "--json", path], "--chrome with --json"),
        (["--chrome", os.path.join(d, "no", "dir", "out.json"), path], "an unwritable output"),
    ]:
        r = run([A.report, *args])
        lines = r.stderr.strip().splitlines()
        if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("wslshim-report: "):
            fail(f"{what}: exit {r.returncode}, stderr {r.stderr!r}")
    left = sorted(set(os.listdir(d)) - {"a.trace.zst", "junk.trace.zst"})
    if left:
        fail(f"failed exports left files: {left}")


def case_progress():
    d = workdir("progress")
    path, _ = make(d, "a.trace.zst", "--launches", "20000")
    for args in ([path], ["--chrome", os.path.join(d, "o.json"), path]):
        r = run([A.report, *args])
        if "\r" in r.stderr or "%" in r.stderr:
            fail(f"progress shown with stderr not a terminal: {r.stderr!r}")
        env = dict(os.environ, WSLSHIM_PROGRESS="1")
        r = subprocess.run([A.report, *args], env=env, capture_output=True, timeout=120)
        if r.returncode != 0 or b"\rwslshim-report: " not in r.stderr or b"%" not in r.stderr or \
                b"\r\033[K" not in r.stderr:
            fail(f"forced progress: {r.stderr[:200]!r} (expected a \\r line with a percentage, then cleared)")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--make", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--shim")
    ap.add_argument("--fakedir")
    ap.add_argument("--client", action="append", default=[])
    ap.add_argument("--rows")
    ap.add_argument("case")
    A = ap.parse_args()
    os.makedirs(A.workdir, exist_ok=True)
    fn = globals().get("case_" + A.case)
    if not fn:
        print(f"unknown case {A.case}")
        return 2
    fn()
    if FAILS:
        print("FAIL:\n  " + "\n  ".join(FAILS))
        return 1
    print(f"OK: {A.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
