#!/usr/bin/env python3
"""A launch's record holds what the program passed, whichever path of the hook wrote it.

    launch_records_check.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR

CLIENT is client_launch_args: kernel and graph launches through every launch
row and both routes (exported symbols, cuGetProcAddress pointers), every
argument varying, some failing; it prints each launch it made. The shim
records a function's first launches and the launches due for GPU timing in
its full hook and the others in the launch's fast path (shim/hooks/cuda_hooks.c),
or all in the full hook where the fast path is off (the monotonic clock). For
each setting, the trace's launch records (wslshim-report --sqlite: symbol,
result, stream, the four arguments) are, in order, exactly the ones the client
made, with grid and block packed as trace_format.h says (WSL_GRID, WSL_BLOCK).
Then launches interrupted by a timer's signal whose handler reads a file (run_signals).
Exit 77 where the report was built without SQLite.
"""
import os
import sqlite3
import subprocess
import sys

SHIM, REPORT, CLIENT, LIBDIR, WORK = sys.argv[1:6]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def expected(lines):
    out = []
    for line in lines:
        f = line.split()
        if f and f[0] == "L":
            sym, s, fn = f[1], int(f[2]), int(f[3])
            gx, gy, gz, bx, by, bz, shmem, rc = (int(x) for x in f[4:12])
            grid = gx | gy << 32
            block = (gz & 0xffff) | (bx & 0xffff) << 16 | (by & 0xffff) << 32 | (bz & 0xffff) << 48
            out.append((sym, rc, s, fn, grid, block, shmem))
        elif f and f[0] == "G":
            out.append((f[1], int(f[4]), int(f[2]), int(f[3]), 0, 0, 0))
    return out


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def run(tag, env_extra):
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, FAKE_CUDA_PROC_ALIASES="0",
               WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"), **env_extra)
    env.pop("WSLSHIM_PROGRESS", None)
    p = subprocess.run([CLIENT, "12"], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{tag}: client exit {p.returncode}: {p.stderr.strip()}")
    want = expected(p.stdout.splitlines())
    db = os.path.join(d, "t.db")
    r = subprocess.run([REPORT, "--sqlite", db, d], capture_output=True, text=True, timeout=120)
    if r.returncode == 2 and "SQLite" in r.stderr:
        print("SKIP: wslshim-report built without SQLite")
        sys.exit(77)
    check(r.returncode == 0, f"{tag}: --sqlite exit {r.returncode}: {r.stderr.strip()}")
    con = sqlite3.connect(db)
    got = con.execute("SELECT symbol, result, stream, a0, a1, a2, a3 FROM api_calls "
                      "WHERE category IN ('launch', 'graph') ORDER BY start_ns, rowid").fetchall()
    dropped = con.execute("SELECT coalesce(sum(dropped), 0) FROM processes").fetchone()[0]
    con.close()
    check(dropped == 0, f"{tag}: {dropped} events dropped")
    want = [(w[0], w[1]) + tuple(signed(v) for v in w[2:]) for w in want]
    check(len(got) == len(want), f"{tag}: {len(got)} launch records, the client made {len(want)}")
    bad = [(i, w, g) for i, (w, g) in enumerate(zip(want, got)) if tuple(g) != w]
    for i, w, g in bad[:5]:
        check(False, f"{tag}: launch {i}: recorded {g}, the client passed {w}")
    print(f"{tag}: {len(got)} launch records, {len(bad)} differ")


def run_signals(tag, env_extra, n=100000):
    """The program's launches while a timer's handler reads a file (a hooked call): every launch of
    the program's is recorded once, intact, in order; of the handler's reads those that did not
    interrupt a hooked call are recorded (the others pass through), none twice. Before, a handler's
    recorded call between the full hook's reservation of a slot and its publication took the same
    slot: the handler's event was overwritten and a stale slot published after it (a launch of 1024
    events before recorded twice, 4-7 in 100,000 here)."""
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, FAKE_CUDA_PROC_ALIASES="0",
               WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"), **env_extra)
    env.pop("WSLSHIM_PROGRESS", None)
    p = subprocess.run([CLIENT, "signals", str(n), os.path.join(d, "data.txt")], env=env, capture_output=True,
                       text=True, timeout=300)
    check(p.returncode == 0, f"{tag}: client exit {p.returncode}: {p.stderr.strip()}")
    made = [l.split() for l in p.stdout.splitlines() if l.startswith("SIGNALS")]
    handler = int(made[0][4]) if made else 0
    db = os.path.join(d, "t.db")
    r = subprocess.run([REPORT, "--sqlite", db, d], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"{tag}: --sqlite exit {r.returncode}: {r.stderr.strip()}")
    con = sqlite3.connect(db)
    rows = con.execute("SELECT symbol, result, stream, a0, a1, a2, a3 FROM api_calls "
                       "WHERE category = 'launch' ORDER BY start_ns, rowid").fetchall()
    dropped = con.execute("SELECT coalesce(sum(dropped), 0) FROM processes").fetchone()[0]
    reads = con.execute("SELECT coalesce(sum(c.calls), 0) FROM io_calls c JOIN files f ON f.process_id = c.process_id "
                        "AND f.path_id = c.path_id WHERE c.call = 'pread' AND f.path = ?",
                        (os.path.join(d, "data.txt"),)).fetchone()[0]
    con.close()
    main_fn = rows[0][3] if rows else None
    main, bad = [], []
    for sym, rc, s, fn, a1, a2, a3 in rows:
        gx, gy = a1 & 0xffffffff, a1 >> 32
        if (sym == "cuLaunchKernel" and rc == 0 and s == 0 and fn == main_fn and 1 <= gx <= n and gy == 1 and
                a2 == 1 | 32 << 16 | 1 << 32 | 1 << 48 and a3 == 0):
            main.append(gx)
        else:
            bad.append((sym, rc, s, fn, a1, a2, a3))
    check(not bad, f"{tag}: {len(bad)} launch records match no launch made, e.g. {bad[:3]}")
    if not dropped:
        check(main == list(range(1, n + 1)), f"{tag}: the program's {n} launches recorded as {len(main)} "
              f"({len(set(main))} distinct), or out of order")
    else:
        # a loaded machine starved the writer and a full ring dropped events (counted): the rest are
        # still each recorded once, in order
        check(all(a < b for a, b in zip(main, main[1:])) and len(main) + dropped >= n,
              f"{tag}: the program's {n} launches recorded as {len(main)} ({len(set(main))} distinct) "
              f"with {dropped} events dropped, or out of order")
        print(f"{tag}: {dropped} events dropped (a full ring)")
    check(handler > 0 and 0 < reads <= handler, f"{tag}: {reads} of the handler's {handler} reads recorded")
    print(f"{tag}: {len(main)} of the program's {n} launches recorded, {reads} of the handler's {handler} reads")


run("timing_off", {"WSLSHIM_GPU_TIMING": "off"})          # fast path after each function's first launch
run("timing_default", {})                                  # fast path but for the sampled launches
run("timing_every_3", {"WSLSHIM_GPU_TIMING": "3"})
run("timing_every_launch", {"WSLSHIM_GPU_TIMING": "1"})    # every launch in the full hook
run("mono_clock", {"WSLSHIM_CLOCK": "mono"})               # the fast path off: the full hook
run_signals("signals", {})
run_signals("signals_every_launch", {"WSLSHIM_GPU_TIMING": "1"}, 20000)
run_signals("signals_mono_clock", {"WSLSHIM_CLOCK": "mono"}, 50000)
sys.exit(1 if failures else 0)
