#!/usr/bin/env python3
"""A burst of launches against the fake driver, and the trace's account of it.

    burst_check.py stall SHIM REPORT FAKE_LIB_DIR CLIENT WORKDIR
        The writer (a tiny-rings test build) stalls 1.5 s at its first drain
        (WSLSHIM_TEST_STALL_MS) while the client makes 200,000 launches: the
        ring fills. Checks the program waited for room once for the burst, not
        once per event (WSLSHIM_LOG=debug's count of waits), that the drops are
        counted and written to the trace (the report's `dropped`), and that
        launches in the trace plus drops are exactly the launches made.
    burst_check.py startup SHIM REPORT FAKE_LIB_DIR CLIENT WORKDIR
        Short runs (GPU timing on, its default) that launch 60,000 times from
        their start: each run's launches and drops add up to the launches
        made, and the program waited for room a few times at most (once per
        time the ring filled; the writer may catch up in between), never once
        per dropped event. Whether any were
        dropped depends on whether the writer got a core in time (the writer's
        clock calibration no longer sleeps before its first drain, but a busy
        machine can still starve it for 10 ms): printed, not asserted.
    burst_check.py paths SHIM REPORT FAKE_LIB_DIR PATH_CLIENT WORKDIR
        The writer stalls 1.5 s at its first drain while the client opens 5,000
        distinct paths of about 200 bytes: the path ring (256 KiB) fills. Checks
        the program waited for room in it at most 10 times for the burst (100 ms
        in all), not once per path, that the paths it had no room for are counted
        in the trace (the report's `paths_dropped` and its warning), and that
        every open is in the trace, named or not.
    burst_check.py paths-wait SHIM REPORT FAKE_LIB_DIR PATH_CLIENT WORKDIR
        The writer stalls 40 ms at its first drain while the client opens 400
        paths of 4,000 bytes (the rings fill after a few dozen): the burst waits
        it out (100 ms in all), no path dropped, every open named.
    burst_check.py paths-killed SHIM REPORT FAKE_LIB_DIR PATH_CLIENT WORKDIR
        As `paths` (the writer stalled 1.5 s, 5,000 opens of 200-byte paths),
        but the client then sleeps and is killed (SIGKILL) once the trace holds
        all its opens: the trace has no END chunk, and still counts the paths
        dropped (PATHS_DROPPED chunks, format 1.12): the report's
        `paths_dropped` > 0 and equal to the opens without a path (each
        dropped path is one open's), its warning, `truncated`. Before 1.12 the
        count was only in END: a killed process's trace said 0.
No timing is asserted.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

mode, shim, report, libdir, client, work = sys.argv[1:7]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
fails = []


def paths_said(got, n, what):
    """The trace counts the paths dropped, one per open without its path (each open has a path of
    its own), warns of them, and holds all n opens."""
    if not got["paths_dropped"]:
        fails.append(f"{what} counts no path dropped ({got['paths_dropped']!r})")
    elif got["paths_dropped"] != got["unnamed"]:
        fails.append(f"{got['paths_dropped']} paths dropped, {got['unnamed']} opens without a path")
    elif not any("dropped %d paths or names" % got["paths_dropped"] in w for w in got["warnings"]):
        fails.append("no warning of the dropped paths")
    if got["opens"] != n:
        fails.append(f"the trace holds {got['opens']} opens, {n} were made")


def run(n, tag, extra, args=()):
    out = os.path.join(work, tag)
    os.makedirs(out)
    env = dict(os.environ, LD_LIBRARY_PATH=libdir, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(out, "%p.trace.zst"),
               WSLSHIM_LOG="debug", **extra)
    p = subprocess.run([client, str(n)] + list(args), env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or f"{'PATHS' if mode.startswith('paths') else 'BURST'} {n}" not in p.stdout:
        fails.append(f"{tag}: client exited {p.returncode}: {p.stderr[-400:]}")
        return None
    r = subprocess.run([report, "--json", out], capture_output=True, text=True)
    if r.returncode != 0:
        fails.append(f"{tag}: report exited {r.returncode}: {r.stderr.strip()[-400:]}")
        return None
    return summary(json.loads(r.stdout), p.stderr)


def summary(d, stderr):
    waits = re.findall(r"waited for room in a full ring: (\d+)", stderr)
    path_waits = re.findall(r"in a full path ring: (\d+)", stderr)
    launches = (d["api"].get("cuLaunchKernel") or {}).get("calls", 0)
    return {"dropped": d["processes"][0]["dropped"], "launches": launches,
            "waits": int(waits[-1]) if waits else None,
            "paths_dropped": d["processes"][0].get("paths_dropped"),
            "path_waits": int(path_waits[-1]) if path_waits else None,
            "opens": d["io"]["opens"], "unnamed": d["io"]["unnamed_path_events"],
            "truncated": d["processes"][0].get("truncated"), "warnings": d.get("warnings", [])}


def run_killed(n, tag, extra):
    """The client's N opens, then SIGKILL once the trace holds them all (the report polled); the
    killed trace's summary."""
    out = os.path.join(work, tag)
    os.makedirs(out)
    env = dict(os.environ, LD_LIBRARY_PATH=libdir, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(out, "%p.trace.zst"),
               **extra)
    p = subprocess.Popen([client, str(n), "212", "hold"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        line = p.stdout.readline()
        if not line.startswith(f"PATHS {n}"):
            fails.append(f"{tag}: client said {line!r}")
            return None
        deadline, opens = time.monotonic() + 30, None
        while time.monotonic() < deadline:  # the writer ends a frame at least every second
            r = subprocess.run([report, "--json", out], capture_output=True, text=True)
            if r.returncode == 0:
                opens = json.loads(r.stdout)["io"]["opens"]
                if opens == n:
                    break
            time.sleep(0.3)
        if opens != n:
            fails.append(f"{tag}: the trace held {opens} of {n} opens after 30 s")
            return None
    finally:
        p.send_signal(signal.SIGKILL)
        p.communicate()
    r = subprocess.run([report, "--json", out], capture_output=True, text=True)
    if r.returncode != 0:
        fails.append(f"{tag}: report exited {r.returncode}: {r.stderr.strip()[-400:]}")
        return None
    return summary(json.loads(r.stdout), "")


if mode == "stall":
    n = 200000
    got = run(n, "stall", {"WSLSHIM_TEST_STALL_MS": "1500", "WSLSHIM_GPU_TIMING": "off"})
    if got:
        print("stall:", got)
        if not got["dropped"]:
            fails.append("the writer stalled through a burst larger than the ring, and nothing was dropped")
        if got["launches"] + got["dropped"] != n:
            fails.append(f"trace {got['launches']} launches + {got['dropped']} dropped != {n} made")
        if got["waits"] is None:
            fails.append("no count of waits at WSLSHIM_LOG=debug")
        elif got["waits"] > 1:
            fails.append(f"{got['waits']} waits for room in one burst (one at most)")
elif mode == "startup":
    for i in range(5):
        got = run(60000, f"startup{i}", {})
        if got:
            print(f"startup {i}:", got)
            # one wait per burst; a start-up can fill the tiny ring more than once (the writer
            # catching up between), so a few waits, never one per dropped event as before
            w = got["waits"] or 0
            if w > 5 or (got["dropped"] and w * 100 > got["dropped"]):
                fails.append(f"run {i}: {w} waits for room for {got['dropped']} dropped events")
            if got["launches"] + got["dropped"] != 60000:
                fails.append(f"run {i}: trace {got['launches']} launches + {got['dropped']} dropped != 60000")
elif mode == "paths":
    n = 5000
    got = run(n, "paths", {"WSLSHIM_TEST_STALL_MS": "1500"})
    if got:
        print("paths:", {k: v for k, v in got.items() if k != "warnings"})
        if got["path_waits"] is None:
            fails.append("no count of path-ring waits at WSLSHIM_LOG=debug")
        elif not 1 <= got["path_waits"] <= 10:
            fails.append(f"{got['path_waits']} waits for room in the path ring in one burst (1 to 10)")
        paths_said(got, n, f"the writer stalled through {n} paths of 200 bytes (a 256 KiB ring), and the trace")
        if got["dropped"]:
            fails.append(f"{got['dropped']} events dropped (the event ring was not meant to fill)")
elif mode == "paths-wait":
    # 400 opens of 4,000-byte paths: a few dozen fill the rings (272 KiB in this build) at once,
    # well inside the writer's stall. A burst may wait 100 ms in all; a stall shorter than that
    # costs no path. Before 2026-11-28 each path gave up after 10 ms: 3 or 4 paths lost here.
    n = 400
    got = run(n, "paths-wait", {"WSLSHIM_TEST_STALL_MS": "40"}, ["4000"])
    if got:
        print("paths-wait:", {k: v for k, v in got.items() if k != "warnings"})
        if not got["path_waits"]:
            fails.append(f"the path ring never filled ({got['path_waits']!r} waits): nothing was tested")
        if got["paths_dropped"] or got["unnamed"]:
            fails.append(f"a 40 ms stall cost {got['paths_dropped']} paths ({got['unnamed']} opens without a path); "
                         "the burst may wait 100 ms")
        if got["opens"] != n:
            fails.append(f"the trace holds {got['opens']} opens, {n} were made")
elif mode == "paths-killed":
    n = 5000
    got = run_killed(n, "paths-killed", {"WSLSHIM_TEST_STALL_MS": "1500"})
    if got:
        print("paths-killed:", {k: v for k, v in got.items() if k != "warnings"})
        if not got["truncated"]:
            fails.append("the killed client's trace is not cut short (an END chunk?): nothing was tested")
        if not got["unnamed"]:
            fails.append("no open without its path: the path ring never overflowed, nothing was tested")
        paths_said(got, n, f"{got['unnamed']} opens without a path, and the killed client's trace")
        # The independent codec (tests/unit/relayout.py) reads the count alike, and the trace rewritten in
        # the 1.2 layout reports the same.
        relayout = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "relayout.py")
        if shutil.which("zstd"):
            src = os.path.join(work, "paths-killed")
            dst = os.path.join(work, "paths-killed-v12")
            os.makedirs(dst)
            reports = []
            for t in sorted(os.listdir(src)):
                r = subprocess.run([sys.executable, relayout, os.path.join(src, t), os.path.join(dst, t)],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    fails.append(f"relayout.py: exit {r.returncode}: {r.stderr[-300:]}")
                elif json.loads(r.stdout)["paths_dropped"] != got["paths_dropped"]:
                    fails.append(f"relayout.py read {json.loads(r.stdout)['paths_dropped']} paths dropped, the "
                                 f"report {got['paths_dropped']}")
                reports.append(subprocess.run([report, "--json", t], cwd=src, capture_output=True).stdout)
                reports.append(subprocess.run([report, "--json", t], cwd=dst, capture_output=True).stdout)
            if not reports or reports[0::2] != reports[1::2]:
                fails.append("the killed trace and its 1.2 layout give different reports")
else:
    sys.exit(f"unknown mode {mode}")
for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
