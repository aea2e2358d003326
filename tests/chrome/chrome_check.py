#!/usr/bin/env python3
"""Checks of `wslshim-report --chrome`, one case per ctest entry.

    chrome_check.py --report EXE --make EXE --workdir DIR [--shim LIB --fakedir DIR --client EXE --rows EXE] CASE

Cases: synthetic, synthetic_tsc, shared_stream, two_processes, window, limit, fake_client, bad_input, progress,
estimated, gzip, sample.

Every export is also checked for its structure (validate): B/E pairs on one thread, properly nested
with the thread's other slices; async b/e pairs; flows whose ends bind to slices that exist;
estimated kernels flagged on their own tracks.
"""
import argparse
import gzip
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
    opener = gzip.open if out.endswith(".gz") else open
    with opener(out, "rt") as f:
        doc = json.load(f)     # valid JSON or an exception (the test fails)
    validate(doc, out)
    return doc, r


EPS = 0.0015    # us: times are written with ns decimals


def validate(doc, what):
    """The structure Perfetto and chrome://tracing rely on."""
    bad = []
    names, _ = tracks(doc)
    per_thread = {}     # (pid, tid) -> [(start, end, what)]
    open_b = {}         # (pid, tid) -> stack of B events
    async_open = {}
    for e in doc["traceEvents"]:
        key = (e.get("pid"), e.get("tid"))
        ph = e["ph"]
        if ph == "X":
            if e["dur"] < 0:
                bad.append(f"negative duration {e}")
            per_thread.setdefault(key, []).append((e["ts"], e["ts"] + e["dur"], e["name"]))
            est = e.get("args", {}).get("estimated")
            if e.get("cat") == "kernel_estimated":
                if est is not True or "(estimated" not in names.get(key, ""):
                    bad.append(f"an estimated kernel not flagged or not on an estimated track: {e}")
            elif est:
                bad.append(f"args.estimated on a {e.get('cat')} slice: {e}")
        elif ph == "B":
            if not e.get("name"):
                bad.append(f"B without a name: {e}")
            open_b.setdefault(key, []).append(e)
        elif ph == "E":
            st = open_b.get(key)
            if not st:
                bad.append(f"E with no open B on its thread: {e}")
                continue
            b = st.pop()
            if e["ts"] + EPS < b["ts"]:
                bad.append(f"E before its B: {b} -> {e}")
            per_thread.setdefault(key, []).append((b["ts"], e["ts"], b["name"]))
        elif ph == "b":
            async_open[(e["pid"], e["cat"], e["id"])] = e
        elif ph == "e":
            if async_open.pop((e["pid"], e["cat"], e["id"]), None) is None:
                bad.append(f"async e without its b: {e}")
    for key, st in open_b.items():
        if st:
            bad.append(f"{len(st)} B events never ended on {key}: {st[0]}")
    if async_open:
        bad.append(f"{len(async_open)} async b events never ended")
    # nesting: every slice of a thread inside the one open around it, or after it
    for key, sl in per_thread.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s in sl:
            while stack and stack[-1][1] <= s[0] + EPS:
                stack.pop()
            if stack and s[1] > stack[-1][1] + EPS:
                bad.append(f"{key}: {s} overlaps {stack[-1]} without nesting")
                break
            stack.append(s)
    # flows: s and f pair by id; each binds to a slice of its thread (s: enclosing its ts; f, bp e: enclosing)
    starts = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "s"}
    ends = {e["id"]: e for e in doc["traceEvents"] if e["ph"] == "f"}
    if set(starts) != set(ends):
        bad.append(f"{len(set(starts) ^ set(ends))} flow ids without both ends")
    index = {k: sorted(v) for k, v in per_thread.items()}

    def encloses(key, ts):
        import bisect
        sl = index.get(key, [])
        i = bisect.bisect_right(sl, (ts + EPS, float("inf"), ""))
        return any(a <= ts + EPS and ts <= b + EPS for a, b, _ in sl[max(0, i - 64):i])
    for i, s in starts.items():
        f = ends.get(i)
        if not f:
            continue
        if f.get("bp") != "e":
            bad.append(f"flow end without bp e: {f}")
        if not encloses((s["pid"], s["tid"]), s["ts"]) or not encloses((f["pid"], f["tid"]), f["ts"]):
            bad.append(f"flow {i} does not bind to slices: {s} -> {f}")
    for b in bad[:5]:
        fail(f"{os.path.basename(what)}: {b}")
    if len(bad) > 5:
        fail(f"{os.path.basename(what)}: ... {len(bad) - 5} more structural problems")


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
    measured = {(k["tid"], k["ts"]) for k in kernels}
    ends = {e["id"]: e for e in ev if e["ph"] == "f" and (e["tid"], e["ts"]) in measured}
    starts = {e["id"]: e for e in ev if e["ph"] == "s" and e["id"] in ends}
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


def case_shared_stream():
    """A timed kernel whose pair reached into the next kernel's on its stream (threads sharing a
    stream): that next one is drawn from the first one's end, so the track's slices follow each
    other (validate), and says its measure (args.measured_ns)."""
    d = workdir("shared_stream")
    path, _ = make(d, "a.trace.zst", "--pid", "5000", "--launches", "8", "--first-reaches-on")
    doc, _ = export(os.path.join(d, "out.json"), path)
    if not doc:
        return
    ks = sorted((e for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") == "kernel"
                 and e["args"]["stream"] == "0x5000"), key=lambda e: e["ts"])
    if len(ks) != 4:
        fail(f"shared_stream: {len(ks)} kernels on stream 0x5000, not 4")
        return
    first_end = ks[0]["ts"] + ks[0]["dur"]
    if abs(ks[1]["ts"] - first_end) > 1e-3:
        fail(f"shared_stream: the second kernel starts at {ks[1]['ts']}, not at the first one's end {first_end}")
    if ks[1]["args"].get("measured_ns") != 3000:
        fail(f"shared_stream: the second kernel's measure not said: {ks[1]['args']}")


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
                      if e["ph"] == "X" and e.get("cat") != "phase")   # phases are clipped to the window
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
    if doc and not 0 < sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") in ("cuda", "io", "kernel")) <= 1000:
        fail("a window under the limit was not exported")
    _, r = export(out + "2", "--max-events", "1000", "--from", "0", "--to", "0.02", path, expect_ok=False)
    if r.returncode != 2 or "window" not in r.stderr:
        fail(f"a window over the limit: exit {r.returncode}: {r.stderr!r}")
    doc, _ = export(out, "--max-events", str(total), path)
    if doc and sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and e.get("cat") in ("cuda", "io", "kernel")) != total:
        fail("exactly at the limit: not exported whole")


def case_estimated():
    """Launches that were not timed: on an estimated track per stream, each lasting the function's mean
    timed duration, after its launch and after the previous estimate of its stream, tied by a flow."""
    d = workdir("estimated")
    path, info = make(d, "a.trace.zst", "--launches", "40", "--timed-every", "4")
    doc, _ = export(os.path.join(d, "out.json"), path)
    if not doc:
        return
    names, _ = tracks(doc)
    ev = doc["traceEvents"]
    launches = sorted((e for e in ev if e["ph"] == "X" and e["name"] == "cuLaunchKernel"), key=lambda e: e["ts"])
    est = [e for e in ev if e["ph"] == "X" and e.get("cat") == "kernel_estimated"]
    if len(est) != info["launches"] - info["kernels"] or info["kernels"] != 10:
        fail(f"{len(est)} estimated kernels, expected {info['launches'] - info['kernels']}")
    by_launch = {e["id"]: e for e in ev if e["ph"] == "s"}
    flows_to = {(f["tid"], f["ts"]): by_launch.get(f["id"]) for f in ev if f["ph"] == "f"}
    last_end = {}
    for k in sorted(est, key=lambda e: e["ts"]):
        track = names.get((k["pid"], k["tid"]), "")
        if track != f"GPU stream {k['args']['stream']} (estimated, not timed)":
            fail(f"estimated kernel on track {track!r}")
            break
        if k["name"] != "kernel(float*, int)" or abs(k["dur"] - 3.0) > 1e-6 or k["args"]["based_on_timed"] != 10:
            fail(f"estimated kernel {k} (expected 3 us, the mean of the 10 timed)")
            break
        s = flows_to.get((k["tid"], k["ts"]))
        if not s:
            fail(f"no flow from a launch to {k}")
            break
        launch = [l for l in launches if l["ts"] == s["ts"] and l["tid"] == s["tid"]]
        if not launch or k["ts"] + EPS < launch[0]["ts"] + launch[0]["dur"] or \
                k["ts"] + EPS < last_end.get(k["tid"], 0):
            fail(f"estimated kernel {k} not after its launch {launch[:1]} and its stream's previous work")
            break
        last_end[k["tid"]] = k["ts"] + k["dur"]
    # nothing timed: nothing to base an estimate on, so none is made
    path0, info0 = make(d, "b.trace.zst", "--launches", "4", "--timed-every", "5")
    doc, _ = export(os.path.join(d, "none.json"), path0)
    if doc and any(e.get("cat") == "kernel_estimated" for e in doc["traceEvents"]):
        fail("estimates made with no timed kernel to base them on")


def case_gzip():
    """FILE.json.gz: gzip of the same JSON; no event cap unless one is asked for."""
    d = workdir("gzip")
    path, info = make(d, "a.trace.zst", "--launches", "3000")
    plain, _ = export(os.path.join(d, "out.json"), path)
    gz, _ = export(os.path.join(d, "out.json.gz"), path)
    with open(os.path.join(d, "out.json.gz"), "rb") as f:
        magic = f.read(2)
    if magic != b"\x1f\x8b":
        fail(f"out.json.gz is not gzip (starts {magic!r})")
    if plain is None or gz != plain:
        fail("the gzip export does not decompress to the plain export")
    if os.path.getsize(os.path.join(d, "out.json.gz")) * 4 > os.path.getsize(os.path.join(d, "out.json")):
        fail("the gzip export is not smaller than a quarter of the plain one")
    total = info["calls"] + info["kernels"]
    _, r = export(os.path.join(d, "capped.json.gz"), "--max-events", "1000", path, expect_ok=False)
    if r.returncode != 2 or str(total) not in r.stderr:
        fail(f"--max-events with .gz: exit {r.returncode}: {r.stderr!r}")
    _, r = export(os.path.join(d, "no", "dir", "x.json.gz"), path, expect_ok=False)
    if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1:
        fail(f"an unwritable .gz output: exit {r.returncode}: {r.stderr!r}")
    r = run([A.report, "--chrome", "/dev/full", path])
    if r.returncode != 2:
        fail(f"writing to /dev/full: exit {r.returncode}")
    left = sorted(f for f in os.listdir(d) if "tmp" in f)
    if left:
        fail(f"temporary files left: {left}")


def case_sample():
    """The real H200 run (tests/demo/sample): named NVTX ranges, every launch on a GPU track, phases, paths."""
    if not A.sample or not os.path.isdir(A.sample):
        print("SKIP: no sample")
        return
    d = workdir("sample")
    doc, _ = export(os.path.join(d, "sample.json.gz"), A.sample)
    if not doc:
        return
    ev = doc["traceEvents"]
    b = [e for e in ev if e["ph"] == "B"]
    names = {e["name"] for e in b}
    if len(b) != 800 or not {"step", "forward"} <= names or any(e["args"].get("domain") is None for e in b):
        fail(f"{len(b)} NVTX ranges named {sorted(names)[:5]} (expected 800, step and forward, with domains)")
    if any(e["ph"] == "X" and e["name"].startswith("nvtxRange") for e in ev):
        fail("NVTX push/pop calls still written as slices")
    launches = sum(1 for e in ev if e["ph"] == "X" and e["name"] in ("cuLaunchKernel", "cuLaunchKernelEx")
                   and "result" not in e["args"])
    measured = sum(1 for e in ev if e["ph"] == "X" and e.get("cat") == "kernel")
    est = sum(1 for e in ev if e["ph"] == "X" and e.get("cat") == "kernel_estimated")
    if measured != 400 or measured + est != launches:
        fail(f"{measured} measured + {est} estimated kernels for {launches} launches")
    flows = sum(1 for e in ev if e["ph"] == "s")
    if flows != launches:
        fail(f"{flows} flows for {launches} launches")
    phases = {(e["pid"], e["name"]) for e in ev if e.get("cat") == "phase"}
    if not {"start-up", "warm-up", "steady state", "teardown"} <= {n for _, n in phases}:
        fail(f"phases {sorted(phases)}")
    paths = [e["args"]["path"] for e in ev if e["ph"] == "X" and "path" in e.get("args", {})]
    if any("path id" in p for p in paths) or not any(p.startswith("fd ") for p in paths):
        fail(f"paths: {sorted(set(p for p in paths if 'path id' in p))[:3]}")


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
    ap.add_argument("--sample")
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
