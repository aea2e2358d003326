#!/usr/bin/env python3
"""A process's last calls reach its trace however it ends (docs/reliability.md,
"However a process ends").

    endings_check.py --shim LIB --report EXE --client END_CLIENT --workdir DIR SCENARIO [options]

Scenarios (each a ctest entry, tests/io/CMakeLists.txt):
  open-at-exit   50,000 preads of a file left open (one offset; two alternating),
                 then return from main, exit() or _exit(): reads and bytes exact
  fork           10 preads, fork, 1,000 preads in the parent or the child, which
                 then ends by _exit, exit, SIGTERM or idles until SIGKILL 2.5 s
                 later; with and without a second thread: that process's trace
                 holds every read it made
  python-fork    Python's os.fork and multiprocessing: 200 opens in the child (and,
                 before CPython 3.12, in the parent), sleep, SIGKILL 2.5 s later:
                 every open in that process's trace
  pipeline       dash -c 'true | true; 300 x test -e': the shell's trace holds its
                 300 stats and is whole (ended, not cut short)
  sigpipe        N preads, then writes to a pipe nobody reads (SIGPIPE's default
                 action): reads exact, the trace ended by the signal flush; and
                 `cat FILE | head -1`: cat's trace whole, with its reads
  unwritable     WSLSHIM_OUTPUT in a folder that does not exist, 20,000 preads and
                 the fake driver's 20,000 launches: the shim says recording is off,
                 no call waited for room in a ring (WSLSHIM_LOG=debug's count), the
                 same output, and a run time within a generous bound
  paths-killed   one thread opens 2,000 files, another reads and closes them, in
                 rounds; exit, or SIGKILL at a random moment: no file call names a
                 path the trace does not hold (io.unnamed_path_events 0), unless
                 the trace says paths were dropped (processes[].paths_dropped > 0:
                 a writer kept off the cores past the path ring's wait; counted
                 in a trace cut by SIGKILL too since format 1.12); unnamed calls
                 with no path dropped are a path written after its events: a failure
  renamed        the trace's name is taken (file, symlink, directory, FIFO): one
                 line on stderr names the trace's other name; the same pid's
                 exec'd image (its name taken by its own earlier image) says nothing
Report keys read: io.reads, io.bytes_read, io.stats, io.unnamed_path_events,
processes[].{pid,truncated,dropped,paths_dropped}.
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time


class Check:
    def __init__(self):
        self.failures = []

    def fail(self, msg):
        self.failures.append(msg)

    def finish(self, ok_line):
        if self.failures:
            print("FAIL:\n  " + "\n  ".join(self.failures))
            return 1
        print("OK: " + ok_line)
        return 0


class Ctx:
    def __init__(self, a):
        self.a = a
        self.workdir = os.path.realpath(a.workdir)
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        self.data = os.path.join(self.workdir, "data.bin")
        with open(self.data, "wb") as f:
            f.write(os.urandom(8192))
        self.runs = 0

    def env(self, tdir, extra=None, pattern="%p.trace.zst"):
        env = dict(os.environ, WSLSHIM_OUTPUT=os.path.join(tdir, pattern), LD_PRELOAD=self.a.shim)
        for k in ("WSLSHIM_IO", "WSLSHIM_LOG", "WSLSHIM_IO_TIMING", "WSLSHIM_MOUNTINFO"):
            env.pop(k, None)
        env.update(extra or {})
        return env

    def tdir(self):
        self.runs += 1
        d = os.path.join(self.workdir, f"traces{self.runs}")
        os.makedirs(d)
        return d

    def report(self, paths, c, what):
        p = subprocess.run([self.a.report, "--json"] + list(paths), capture_output=True, text=True)
        if p.returncode != 0:
            c.fail(f"{what}: wslshim-report exited {p.returncode}: {p.stderr.strip()}")
            return None
        return json.loads(p.stdout)


def expect_line(text):
    for line in text.splitlines():
        if line.startswith("EXPECT "):
            return json.loads(line[7:])
    return None


def trace_of(tdir, pid):
    t = os.path.join(tdir, f"{pid}.trace.zst")
    return t if os.path.exists(t) else None


def check_reads(ctx, c, what, tdir, e, whole=True):
    t = trace_of(tdir, e["pid"])
    if not t:
        c.fail(f"{what}: no trace for pid {e['pid']} in {sorted(os.listdir(tdir))}")
        return None
    rep = ctx.report([t], c, what)
    if rep is None:
        return None
    io = rep.get("io") or {}
    got = (io.get("reads"), io.get("bytes_read"))
    if got != (e["reads"], e["bytes"]):
        c.fail(f"{what}: the trace has {got[0]} reads, {got[1]} bytes; the program made {e['reads']}, {e['bytes']}")
    proc = (rep.get("processes") or [{}])[0]
    if whole and proc.get("truncated"):
        c.fail(f"{what}: the trace is cut short (not ended)")
    if proc.get("dropped"):
        c.fail(f"{what}: {proc.get('dropped')} events dropped")
    return rep


def scenario_open_at_exit(ctx):
    c = Check()
    n = ctx.a.count
    for offsets in (1, 2):
        for end in ("return", "exit", "_exit"):
            tdir = ctx.tdir()
            p = subprocess.run([ctx.a.client, "preads", ctx.data, str(n), str(offsets), end],
                               env=ctx.env(tdir), capture_output=True, text=True)
            e = expect_line(p.stdout)
            what = f"{n} preads over {offsets} offset(s), file left open, {end}"
            if p.returncode != 0 or not e:
                c.fail(f"{what}: exit {p.returncode}: {p.stderr[-300:]}")
                continue
            rep = check_reads(ctx, c, what, tdir, e)
            if rep is not None:
                print(f"{what}: {rep['io']['reads']} of {e['reads']} reads")
    return c.finish(f"{n} preads of a file left open counted exactly, however main ended")


def run_until_ready(cmd, env, idle_s):
    """Starts cmd in its own process group; returns (stdout, stderr, rc) after it
    ends, or, when it prints "ready", idle_s later after SIGKILL to its group."""
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    out = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line)
        if line.strip() == "ready":
            time.sleep(idle_s)
            break
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    rest, err = p.communicate()
    return "".join(out) + rest, err, p.returncode


def scenario_fork(ctx):
    c = Check()
    n = 1000
    results = []
    for threads in (0, 1):
        for who in ("parent", "child"):
            for end in ("_exit", "exit", "sigterm", "idle"):
                tdir = ctx.tdir()
                cmd = [ctx.a.client, "fork", ctx.data, str(n), who, end, str(threads)]
                out, err, rc = run_until_ready(cmd, ctx.env(tdir), ctx.a.idle)
                e = expect_line(out)
                what = f"fork, {n} preads in the {who}, {end}{', a second thread' if threads else ''}"
                if not e:
                    c.fail(f"{what}: no EXPECT line (exit {rc}): {err[-300:]}")
                    continue
                rep = check_reads(ctx, c, what, tdir, e, whole=end != "idle")
                if rep is not None:
                    results.append(f"{what}: {rep['io']['reads']} of {e['reads']}")
    print("\n".join(results))
    return c.finish(f"{len(results)} fork endings: every read of the process in its trace")


PY_FORK = r"""
import multiprocessing as mp, os, sys, time
path, how, who = sys.argv[1:4]
def burst():
    for i in range(200):
        with open(path, "rb"):
            pass
    print('EXPECT {"pid": %d, "opens": 200}' % os.getpid(), flush=True)
    print("ready", flush=True)
    time.sleep(60)
if how == "fork":
    pid = os.fork()
    if (pid == 0) == (who == "child"):
        burst()
    else:
        time.sleep(60)
else:
    mp.set_start_method("fork")
    p = mp.Process(target=burst if who == "child" else time.sleep, args=() if who == "child" else (60,))
    p.start()
    if who == "parent":
        burst()
    p.join()
"""


def scenario_python_fork(ctx):
    """Python's os.fork and multiprocessing: 200 opens in the child or the
    parent, then sleep; SIGKILL idle seconds later."""
    c = Check()
    whos = ["child"]
    if sys.version_info < (3, 12):
        # CPython 3.12 and later count their threads right after fork(): the writer stays
        # away from the parent a moment, and calls made then wait for its next call
        # (docs/reliability.md, limits)
        whos.append("parent")
    done = []
    for how in ("fork", "multiprocessing"):
        for who in whos:
            tdir = ctx.tdir()
            out, err, rc = run_until_ready([sys.executable, "-c", PY_FORK, ctx.data, how, who], ctx.env(tdir),
                                           ctx.a.idle)
            e = expect_line(out)
            what = f"Python {how}, 200 opens in the {who}, sleep, SIGKILL"
            if not e:
                c.fail(f"{what}: no EXPECT line (exit {rc}): {err[-300:]}")
                continue
            t = trace_of(tdir, e["pid"])
            rep = ctx.report([t], c, what) if t else None
            if not t:
                c.fail(f"{what}: no trace for pid {e['pid']}")
            if rep is None:
                continue
            # the opens of ctx.data: its folder's files
            d = next((x for x in (rep.get("io") or {}).get("top_dirs", []) if x.get("dir") == ctx.workdir), {})
            got = d.get("files", 0)
            if got < 200:
                c.fail(f"{what}: {got} opens of the file in the trace, 200 made")
            done.append(f"{what}: {got} of 200")
    print("\n".join(done))
    return c.finish(f"{len(done)} Python forks: the opens before the sleep in the trace")


def scenario_pipeline(ctx):
    c = Check()
    dash = shutil.which("dash")
    if not dash:
        print("skipped: no dash")
        return 77
    n = 300
    tdir = ctx.tdir()
    script = f'true | true; i=0; while [ $i -lt {n} ]; do test -e {ctx.data}; i=$((i+1)); done'
    p = subprocess.run([dash, "-c", script], env=ctx.env(tdir), capture_output=True, text=True)
    if p.returncode != 0:
        c.fail(f"dash exited {p.returncode}: {p.stderr[-300:]}")
        return c.finish("")
    traces = sorted(glob.glob(os.path.join(tdir, "*.trace.zst")))
    best = None
    for t in traces:
        rep = ctx.report([t], c, t)
        if rep is None:
            continue
        proc = (rep.get("processes") or [{}])[0]
        stats = (rep.get("io") or {}).get("stats", 0)
        if proc.get("forked"):
            continue
        best = (stats, proc.get("truncated"))
    if best is None:
        c.fail(f"no trace of the shell itself among {len(traces)}")
    else:
        if best[0] < n:
            c.fail(f"the shell's trace has {best[0]} stats; it made at least {n}")
        if best[1]:
            c.fail("the shell's trace is cut short")
        print(f"dash: {best[0]} stats in its trace (at least {n} made), truncated={best[1]}")
    return c.finish(f"dash's {n} stats after a pipeline in its whole trace")


def scenario_sigpipe(ctx):
    c = Check()
    n = 5000
    tdir = ctx.tdir()
    r, w = os.pipe()
    os.close(r)  # nobody reads: the first write raises SIGPIPE
    p = subprocess.run([ctx.a.client, "preads", ctx.data, str(n), "2", "sigpipe"], env=ctx.env(tdir),
                       stdout=w, stderr=subprocess.PIPE, text=True)
    os.close(w)
    e = expect_line(p.stderr)
    if p.returncode != -signal.SIGPIPE or not e:
        c.fail(f"end_client was to die of SIGPIPE: exit {p.returncode}: {p.stderr[-300:]}")
    else:
        rep = check_reads(ctx, c, f"{n} preads, then SIGPIPE", tdir, e)
        if rep is not None:
            print(f"{n} preads then SIGPIPE: {rep['io']['reads']} reads in the trace, "
                  f"truncated={rep['processes'][0].get('truncated')}")
    # cat FILE | head -1: cat dies of SIGPIPE
    big = os.path.join(ctx.workdir, "big.txt")
    with open(big, "w") as f:
        f.write("line\n" * 2000000)
    tdir = ctx.tdir()
    env = ctx.env(tdir)
    cat = subprocess.Popen(["cat", big], env=env, stdout=subprocess.PIPE)
    head = subprocess.run(["head", "-1"], stdin=cat.stdout, capture_output=True, text=True)
    cat.stdout.close()
    rc = cat.wait()
    if rc != -signal.SIGPIPE:
        c.fail(f"cat was to die of SIGPIPE: exit {rc}")
    t = trace_of(tdir, cat.pid)
    if not t:
        c.fail(f"no trace of cat (pid {cat.pid}) in {sorted(os.listdir(tdir))}")
    else:
        rep = ctx.report([t], c, "cat | head -1")
        if rep is not None:
            reads = (rep.get("io") or {}).get("reads", 0)
            proc = (rep.get("processes") or [{}])[0]
            if proc.get("truncated"):
                c.fail("cat | head -1: cat's trace is cut short (SIGPIPE not flushed)")
            if not reads:
                c.fail("cat | head -1: no read of cat's in its trace")
            print(f"cat | head -1: {reads} reads in cat's trace, truncated={proc.get('truncated')}")
    return c.finish("SIGPIPE's default action ends the trace first")


def scenario_renamed(ctx):
    c = Check()
    for kind in ("file", "symlink", "directory", "fifo"):
        tdir = ctx.tdir()
        name = os.path.join(tdir, "taken.trace.zst")
        if kind == "file":
            open(name, "w").close()
        elif kind == "symlink":
            os.symlink(os.path.join(tdir, "nowhere"), name)
        elif kind == "directory":
            os.mkdir(name)
        else:
            os.mkfifo(name)
        p = subprocess.run([ctx.a.client, "preads", ctx.data, "100", "1", "exit"],
                           env=ctx.env(tdir, pattern="taken.trace.zst"), capture_output=True, text=True)
        lines = p.stderr.splitlines()
        if p.returncode != 0:
            c.fail(f"{kind}: exit {p.returncode}: {p.stderr[-300:]}")
        if len(lines) != 1 or name + ".1" not in lines[0]:
            c.fail(f"{kind} in the trace's place: stderr is {p.stderr!r}, not one line naming {name}.1")
        elif not os.path.isfile(name + ".1"):
            c.fail(f"{kind}: no trace at {name}.1")
        else:
            print(f"{kind}: {lines[0]}")
    # the exec'd image of the same pid finds its own earlier image's trace: no line
    tdir = ctx.tdir()
    p = subprocess.run([ctx.a.client, "exec", ctx.data, "100"], env=ctx.env(tdir), capture_output=True, text=True)
    e = expect_line(p.stdout)
    if p.returncode != 0 or not e:
        c.fail(f"exec: exit {p.returncode}: {p.stderr[-300:]}")
    elif p.stderr:
        c.fail(f"exec of the same pid: stderr {p.stderr!r}, expected nothing")
    elif not os.path.exists(os.path.join(tdir, f"{e['pid']}.trace.zst.1")):
        c.fail(f"exec: the exec'd image's trace is not {e['pid']}.trace.zst.1: {sorted(os.listdir(tdir))}")
    return c.finish("a trace written under another name than asked says so in one line")


def scenario_unwritable(ctx):
    """WSLSHIM_OUTPUT in a folder that does not exist: recording off at once, and
    no call waits for a ring nobody drains."""
    c = Check()
    out = os.path.join(ctx.workdir, "no-such-folder", "%p.trace.zst")
    runs = [("end_client, 20,000 preads", [ctx.a.client, "preads", ctx.data, "20000", "2", "exit"], {})]
    if ctx.a.fake_client:
        runs.append(("the fake driver's client, 20,000 launches", [ctx.a.fake_client, "20000", "1", "1"],
                     {"LD_LIBRARY_PATH": ctx.a.fake_lib_dir}))
    for what, cmd, extra in runs:
        plain_env = dict(os.environ, **extra)
        plain_env.pop("LD_PRELOAD", None)
        t0 = time.monotonic()
        p0 = subprocess.run(cmd, env=plain_env, capture_output=True, text=True)
        plain_s = time.monotonic() - t0
        env = dict(plain_env, LD_PRELOAD=ctx.a.shim, WSLSHIM_OUTPUT=out, WSLSHIM_LOG="debug")
        t0 = time.monotonic()
        try:
            p1 = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            c.fail(f"{what}: not done after 60 s under the shim ({plain_s:.2f} s without it)")
            continue
        shim_s = time.monotonic() - t0
        def same(text):
            return re.sub(r'"pid": \d+', '"pid": P', text)
        if (p1.returncode, same(p1.stdout)) != (p0.returncode, same(p0.stdout)):
            c.fail(f"{what}: exit or output differs: {p0.returncode} / {p1.returncode}")
        if "recording off" not in p1.stderr:
            c.fail(f"{what}: the shim did not say recording is off: {p1.stderr[-400:]!r}")
        waited = [line for line in p1.stderr.splitlines() if "waited for room in a full ring" in line]
        if not waited or not waited[-1].endswith(": 0"):
            c.fail(f"{what}: calls waited for a ring nobody drains: {waited or p1.stderr[-400:]!r}")
        # generous: the point is the absence of a wait per call (10 ms each, before: 26 s for 20,000)
        if shim_s > max(5 * plain_s, 5.0):
            c.fail(f"{what}: {shim_s:.2f} s under the shim, {plain_s:.2f} s without it")
        print(f"{what}: {plain_s:.2f} s without the shim, {shim_s:.2f} s with recording off; {waited[-1:]}")
    return c.finish("an unwritable trace turns recording off at once: no call waits")


def scenario_paths_killed(ctx):
    """A thread opens files and another reads and closes them: every file call
    names a path the trace holds (io.unnamed_path_events 0), after exit and
    after SIGKILL at a random moment; or, where the shim dropped paths (a
    writer starved of a core past the wait, docs/reliability.md), the trace
    says so (processes[].paths_dropped > 0, with or without END)."""
    import random
    c = Check()
    d = os.path.join(ctx.workdir, "files")
    os.makedirs(d)
    files = 2000
    for i in range(files):
        with open(os.path.join(d, f"f{i}"), "wb") as f:
            f.write(b"x" * 4096)
    done = []
    for run in range(ctx.a.runs):
        end = "exit" if run % 4 == 0 else "idle"
        tdir = ctx.tdir()
        if end == "exit":
            p = subprocess.run([ctx.a.client, "handoff", d, str(files), end], env=ctx.env(tdir), capture_output=True,
                               text=True)
            if p.returncode != 0:
                c.fail(f"handoff exited {p.returncode}: {p.stderr[-300:]}")
                continue
        else:
            run_until_ready([ctx.a.client, "handoff", d, str(files), end], ctx.env(tdir), random.uniform(0.1, 1.2))
        traces = glob.glob(os.path.join(tdir, "*.trace.zst"))
        rep = ctx.report(traces, c, f"run {run}") if traces else None
        if rep is None:
            c.fail(f"run {run}: no readable trace")
            continue
        io = rep.get("io") or {}
        unnamed = io.get("unnamed_path_events")
        dropped = sum(p.get("paths_dropped", 0) for p in rep.get("processes", []))
        if unnamed != 0 and not dropped:
            c.fail(f"run {run} ({end}): {unnamed} file calls name a path the trace does not hold, and it says "
                   f"none was dropped (of {io.get('opens')} opens, {io.get('reads')} reads)")
        done.append(f"{end}: {io.get('opens')} opens, {io.get('reads')} reads, unnamed {unnamed}"
                    + (f", {dropped} paths dropped (said)" if dropped else ""))
    print("\n".join(done))
    return c.finish(f"{len(done)} runs: every file call's path in the trace, or its drop counted there")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for opt in ("--shim", "--report", "--client", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("scenario", choices=("open-at-exit", "fork", "python-fork", "pipeline", "sigpipe", "renamed",
                                         "unwritable", "paths-killed"))
    ap.add_argument("--runs", type=int, default=12, help="paths-killed: runs")
    ap.add_argument("--fake-client", help="unwritable: the fake driver's client_timing")
    ap.add_argument("--fake-lib-dir", help="unwritable: the fake libcuda's folder")
    ap.add_argument("--count", type=int, default=50000)
    ap.add_argument("--idle", type=float, default=2.5, help="seconds idle before SIGKILL")
    a = ap.parse_args()
    ctx = Ctx(a)
    return {"open-at-exit": scenario_open_at_exit, "fork": scenario_fork, "python-fork": scenario_python_fork,
            "pipeline": scenario_pipeline, "unwritable": scenario_unwritable, "paths-killed": scenario_paths_killed,
            "sigpipe": scenario_sigpipe, "renamed": scenario_renamed}[a.scenario](ctx)


if __name__ == "__main__":
    sys.exit(main())
