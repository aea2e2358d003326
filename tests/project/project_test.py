#!/usr/bin/env python3
"""wslshim-report --project against the fake driver.

  project_test.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR

For each workload of client_project (launch-, sync-, allocation-dominated and
a mix) the run is recorded twice under the shim: with host costs A and with
costs B (FAKE_CUDA_*_NS; the simulated GPU's kernel time is the same in both).
Calibration files a.json and b.json hold those costs. Then:
  - the A run projected onto b.json (recorded costs read as a.json) must give
    a wall time within 10% of the B run actually recorded, and the B run
    projected onto a.json within 10% of the A run;
  - the two runs differ by more than 30%, so an identity "projection" fails;
  - projecting a run onto its own costs changes its wall time by less than 5%;
  - projection.wall_ns_recorded is the report's wall_ns, the breakdown adds up;
  - the built-in wsl2 profile (no sync_ns, no alloc figures) names the unknown
    figures and keeps those calls' recorded cost;
  - the JSON validates against docs/report-schema.json when that file exists;
  - file I/O (a synthetic trace: 200 files of 100 KB read on /mnt/c, 9p):
    with --project-fs ext4 the reads take the wsl2 profile's ext4 bandwidth
    instead of 9p's (to the ns), opens keep their cost with the figure named
    unknown; on the same filesystem nothing changes;
  - bad --project values give one line on stderr and exit 2.

  project_test.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR MAKE_IO_TRACE
"""
import json
import os
import subprocess
import sys

SHIM, REPORT, CLIENT, LIBDIR, WORK, MAKE_IO_TRACE = sys.argv[1:7]
SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
failures = []

COSTS = {
    "a": {"launch": 10000, "sync": 5000, "alloc": 20000, "free": 15000, "copy": 3000},
    "b": {"launch": 40000, "sync": 60000, "alloc": 150000, "free": 100000, "copy": 12000},
}
# workload -> (iterations, simulated GPU ns per kernel). No GPU time where the
# workload does not need it: the fake waits for its GPU with nanosleep, whose
# overshoot on a loaded machine is large and random.
RUNS = 5
WORKLOADS = {"launch": (6000, 0), "sync": (800, 50000), "alloc": (3000, 0), "mixed": (1000, 0)}  # alloc: long enough that a few ms of CPU noise stay small


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def calibration(name):
    c = COSTS[name]
    path = os.path.join(WORK, name + ".json")
    stat = lambda ns: {"median_ns": ns, "p10_ns": ns, "p90_ns": ns, "samples": 1}
    doc = {"schema": 1, "platform": "fake-" + name, "launch_ns": c["launch"], "memcpy_ns": c["copy"],
           "sync_ns": c["sync"], "alloc_ns": c["alloc"], "free_ns": c["free"],
           "event": {"record": stat(300), "query": stat(200)},
           "alloc_by_size": [{"bytes": 4 << 20, "alloc": stat(c["alloc"]), "free": stat(c["free"])}]}
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def record_once(workload, costs, attempt):
    n, kernel = WORKLOADS[workload]
    d = os.path.join(WORK, f"{workload}-{costs}-{attempt}")
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    c = COSTS[costs]
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"),
               FAKE_CUDA_LAUNCH_NS=str(c["launch"]), FAKE_CUDA_SYNC_NS=str(c["sync"]),
               FAKE_CUDA_ALLOC_NS=str(c["alloc"]), FAKE_CUDA_FREE_NS=str(c["free"]),
               FAKE_CUDA_COPY_NS=str(c["copy"]), FAKE_CUDA_KERNEL_NS=str(kernel), FAKE_CUDA_PROC_ALIASES="0")
    env.pop("WSLSHIM_GPU_TIMING", None)  # the default sampling
    p = subprocess.run([CLIENT, workload, str(n)], env=env, capture_output=True, text=True)
    check(p.returncode == 0, f"{workload}-{costs}: client exit {p.returncode}: {p.stderr.strip()}")
    return d


def disturbance(doc):
    """Host time in driver calls beyond what it would be if every call took its
    API's median (ns): about 0 for a run nothing interrupted. Busy-waits on a
    shared machine stretch when the thread is descheduled (p99 of milliseconds
    for a 150 us call when the load is high). A projection keeps the source
    run's disturbance as it is, so it lands whole on the other run's figure."""
    total = sum(a["total_ns"] for a in doc["api"].values())
    typical = sum(a["calls"] * a["p50_ns"] for a in doc["api"].values())
    return max(0, total - typical)


def record(workload, costs):
    """The least disturbed of RUNS recordings: (folder, wall_ns, disturbance)."""
    best = None
    for attempt in range(RUNS):
        d = record_once(workload, costs, attempt)
        doc = report([d])
        if doc and (best is None or disturbance(doc) < best[2]):
            best = (d, doc["wall_ns"], disturbance(doc))
    return best


def report(args):
    p = subprocess.run([REPORT, "--json"] + args, capture_output=True, text=True)
    if not check(p.returncode == 0, f"report {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}"):
        return None
    return json.loads(p.stdout)


def validate_schema(doc, what):
    schema_path = os.path.join(SRC, "docs", "report-schema.json")
    if not os.path.exists(schema_path):
        return
    try:
        import jsonschema
    except ImportError:  # unit.report_schema covers the schema where it is installed (CI)
        return
    with open(schema_path) as f:
        schema = json.load(f)
    try:
        jsonschema.validate(doc, schema)
    except jsonschema.ValidationError as e:
        check(False, f"{what}: report does not match docs/report-schema.json: {e.message}")


os.makedirs(WORK, exist_ok=True)
cal = {name: calibration(name) for name in COSTS}

ATTEMPTS = 4
MAX_DISTURBANCE = 0.06
untimed = []


def attempt(workload):
    """Records the workload with both costs and projects each run onto the
    other's costs; returns the run folders and the timing misses (the other
    checks go to failures directly)."""
    best = {name: record(workload, name) for name in COSTS}
    dirs = {name: best[name][0] for name in COSTS}
    walls = {name: best[name][1] for name in COSTS}
    misses = []
    a, b = walls["a"], walls["b"]
    print(f"{workload}: recorded wall A {a / 1e6:.1f} ms, B {b / 1e6:.1f} ms; disturbance "
          f"{best['a'][2] / 1e6:.2f} ms, {best['b'][2] / 1e6:.2f} ms")
    quiet = best["a"][2] + best["b"][2] <= MAX_DISTURBANCE * min(a, b)
    if not (a and b and abs(b - a) > 0.3 * min(a, b)):
        misses.append(f"{workload}: A and B runs too alike to test a projection")
    for src, dst in (("a", "b"), ("b", "a"), ("a", "a")):
        doc = report(["--project", cal[dst], "--project-from", cal[src], dirs[src]])
        if not doc:
            continue
        validate_schema(doc, f"{workload} {src}->{dst}")
        pr = doc.get("projection")
        if not check(isinstance(pr, dict), f"{workload} {src}->{dst}: no projection object"):
            continue
        check(pr["wall_ns_recorded"] == doc["wall_ns"],
              f"{workload} {src}->{dst}: wall_ns_recorded {pr['wall_ns_recorded']} != wall_ns {doc['wall_ns']}")
        check(pr["target"] == "fake-" + dst and pr["source"] == "fake-" + src,
              f"{workload} {src}->{dst}: target/source {pr['target']}/{pr['source']}")
        check(not pr["unknown_figures"], f"{workload} {src}->{dst}: unknown figures {pr['unknown_figures']}")
        actual = walls[dst]
        err = (pr["wall_ns"] - actual) / actual if actual else 1
        bd = pr["breakdown"]
        print(f"  {src}->{dst}: projected {pr['wall_ns'] / 1e6:.1f} ms vs recorded {actual / 1e6:.1f} ms "
              f"({err * 100:+.1f}%); " + ", ".join(f"{k} {v['recorded_ns'] / 1e6:.1f}->{v['projected_ns'] / 1e6:.1f}"
                                                   for k, v in bd.items() if v["recorded_ns"] or v["projected_ns"]))
        tol = 0.05 if src == dst else 0.10
        if abs(err) > tol:
            misses.append(f"{workload} {src}->{dst}: projected {pr['wall_ns']} vs recorded {actual} "
                          f"({err * 100:+.1f}%, allowed {tol * 100:.0f}%)")
        for k, v in bd.items():
            check(v["delta_ns"] == v["projected_ns"] - v["recorded_ns"], f"{workload}: {k} delta_ns inconsistent")
        check(bd["cpu"]["recorded_ns"] == bd["cpu"]["projected_ns"], f"{workload}: CPU time changed")
        if src != dst:
            check(pr["gpu"]["launches"] > 0 and pr["gpu"]["launches_no_gpu_time"] == 0,
                  f"{workload}: launches without GPU durations: {pr['gpu']}")
    return dirs, misses, quiet


for workload in WORKLOADS:
    # Busy-waits on a shared machine stretch when the thread is descheduled, by
    # more than the 10% allowed when the machine is busy: the workload is
    # recorded again (up to ATTEMPTS times) and fails when no attempt fits.
    # Only runs that were not disturbed are held to the 10%: when the machine
    # stays too busy for every attempt, the timing part is skipped (said so).
    timed = False
    for n in range(ATTEMPTS):
        dirs, misses, quiet = attempt(workload)
        if not quiet:
            print(f"  attempt {n + 1}: runs disturbed by other load (more than {MAX_DISTURBANCE:.0%} of the shorter run)")
            continue
        timed = True
        if not misses:
            break
        print(f"  attempt {n + 1}: " + "; ".join(misses))
    if timed:
        for m in misses:
            check(False, m)
    else:
        untimed.append(workload)
    # The B run's sync waits must shrink when launches get cheaper (GPU-bound part unchanged).
    if workload == "sync":
        doc = report(["--project", cal["a"], "--project-from", cal["b"], dirs["b"]])
        if doc:
            s = doc["projection"]["breakdown"]["sync"]
            check(s["gpu_wait_recorded_ns"] > 0, f"sync: no GPU wait found in the recorded syncs: {s}")

    # The built-in wsl2 profile lacks sync_ns and allocation costs: named, kept.
    doc = report(["--project", "wsl2", "--project-from", cal["a"], dirs["a"]])
    if doc:
        pr = doc["projection"]
        names = [u["figure"] for u in pr["unknown_figures"]]
        if workload in ("sync", "mixed", "launch"):
            check("target wsl2: sync_ns" in names, f"{workload}: wsl2 sync_ns not named unknown: {names}")
            check(pr["breakdown"]["sync"]["kept_calls"] == pr["breakdown"]["sync"]["calls"],
                  f"{workload}: syncs with an unknown figure were not kept")
        if workload in ("alloc", "mixed"):
            check(any("alloc" in n for n in names), f"{workload}: wsl2 allocation figure not named unknown: {names}")
        check(pr["breakdown"]["launch"]["changed_calls"] > 0, f"{workload}: launches not moved with wsl2 launch_ns")

# File I/O moved from 9p to ext4 (the wsl2 profile's figures, docs/platform-costs.md).
io_trace = os.path.join(WORK, "drvfs.trace.zst")
if os.path.exists(io_trace):
    os.unlink(io_trace)
subprocess.run([MAKE_IO_TRACE, io_trace, "drvfs"], check=True)
moved = report(["--project", "wsl2", "--project-fs", "ext4", io_trace])
same = report(["--project", "wsl2", io_trace])
if moved and same:
    f = moved["projection"]["breakdown"]["file_io"]
    want = -200 * 100000 * (1e9 / 330e6 - 1e9 / 1.5e9)  # 200 reads of 100000 bytes
    print(f"file_io 9p -> ext4: delta {f['delta_ns'] / 1e6:.3f} ms, expected {want / 1e6:.3f} ms")
    check(abs(f["delta_ns"] - want) <= 200 * 2, f"file_io delta {f['delta_ns']} vs {want:.0f}")
    check(moved["projection"]["target_fs"] == "ext4", "target_fs not ext4")
    names = [u["figure"] for u in moved["projection"]["unknown_figures"]]
    check("target wsl2: file ext4 open_read_close_ns" in names and
          "source wsl2: file 9p open_read_close_ns" in names, f"open figures not named unknown: {names}")
    check(same["projection"]["breakdown"]["file_io"]["delta_ns"] == 0 and same["projection"]["target_fs"] is None,
          f"same filesystem changed file I/O: {same['projection']['breakdown']['file_io']}")
    check(abs(moved["projection"]["wall_ns"] - moved["projection"]["wall_ns_recorded"] - f["delta_ns"]) <= 1000,
          "one thread: the wall time must move by the file I/O delta")

# Text output has the section.
p = subprocess.run([REPORT, "--project", cal["b"], "--project-from", cal["a"], os.path.join(WORK, "launch-a-0")],
                   capture_output=True, text=True)
check(p.returncode == 0 and "Projection onto fake-b" in p.stdout and "launch" in p.stdout,
      f"text report lacks the projection section: {p.stdout[-500:]} {p.stderr}")

# Bad values: one line on stderr, exit 2.
bad_json = os.path.join(WORK, "bad.json")
with open(bad_json, "w") as f:
    f.write('{"schema": 1, "platform": "x", "launch_ns": "fast"}')
trace_dir = os.path.join(WORK, "launch-a-0")
for args in (["--project", "nosuch"], ["--project", "/nonexistent/cal.json"], ["--project", bad_json],
             ["--project"], ["--project="], ["--project", "wsl2", "--project-from", "mars"],
             ["--project-from", cal["a"]], ["--project-fs", "ext4"], ["--project", "wsl2", "--project-fs", "bad fs!"],
             ["--project", WORK]):
    full = args + ([trace_dir] if args != ["--project"] else [])
    p = subprocess.run([REPORT] + full, capture_output=True, text=True)
    lines = p.stderr.strip().splitlines()
    check(p.returncode == 2 and len(lines) == 1 and not p.stdout,
          f"{args}: exit {p.returncode}, stderr {p.stderr!r}, stdout {len(p.stdout)} bytes")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
if untimed:
    print(f"SKIP: the machine was too busy to time {', '.join(untimed)} (every other check passed)")
    sys.exit(77)
print("ok")
