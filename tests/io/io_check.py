#!/usr/bin/env python3
"""File-I/O recording, end to end: runs a program under the shim and checks
that wslshim-report's io section says exactly what the program did.

    io_check.py --shim LIB --report EXE --reader IO_READER --workdir DIR SCENARIO [options]

Scenarios (each a ctest entry, see CMakeLists.txt):
  exact [--program EXE] [--mode read|fork --processes N]
                          io_reader read DATA: every hooked route over a known
                          data set; totals, per-directory, per-filesystem and
                          per-API counts equal to its EXPECT line (fork: over
                          3 processes, one child leaving by _exit)
  python --script PY      io_python.py DATA (4 forked workers, 8 threads):
                          the data directory's bytes and files exact, merged
                          over the processes; /proc reads outside the data set
  cross-os --fstype 9p|ext4
                          WSLSHIM_MOUNTINFO fixture putting the data directory
                          on a Windows drive (9p drvfs) or on ext4: the report
                          classes it, and cross_os_reads fires only for 9p
  small-files --count N --size B [--bufsize B] [--expect-quiet]
                          io_reader read-all over N files of B bytes: exact
                          totals, the sizes at open (io.small_files), and
                          small_file_reads fires (or, with --expect-quiet, not)
  sampled [--count N --size B --bufsize B]
                          io_reader read-all, three runs: sampled timing (the
                          default: exact counts and bytes, about 1 in 32 calls
                          timed, alike reads folded into few events), every
                          call timed (WSLSHIM_IO_TIMING=1), and the data
                          directory on a 9p fixture (its calls all timed)
  run-kill                a Python program reads one file 4 KiB at a time (folded
                          calls, counted without events), sleeps, and is
                          SIGKILLed: the trace still has every read
  signals-files [--count N]  io_reader signals-files: Python's calls per file,
                          N files, beside a handler's fstat, tell and pread
  signals [--count N]     io_reader signals: a single-threaded program's N
                          reads of one file, while a 20 us timer's handler
                          reads another: the program's reads counted exactly,
                          and the handler's (a nested call inside the shim
                          passes through unrecorded) at most as many as it
                          made, and at least a tenth
  io-off                  WSLSHIM_IO=0: no I/O in the report, same output
  same-output -- PROG ARGS
                          PROG with and without the shim: same exit status,
                          stdout and stderr (@SCRATCH@ in ARGS: a fresh directory)

The data set is written by `io_reader create` without the shim, so the traced
run only reads. Report keys read: io.reads, io.bytes_read, io.files_opened,
io.by_fs.<fstype>.{reads,bytes_read,crosses_windows}, io.top_dirs[{dir, reads,
bytes_read, files}], io.system, io_calls.<name>.{calls,errors,variants} (file-I/O
names; api.<name> also looked at), bottlenecks[].id.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

# read-family base names as io_api.def folds them
READ_APIS = ("read", "pread", "readv", "preadv", "preadv2", "fread", "fgets", "getline")


class Check:
    def __init__(self):
        self.failures = []
        self.notes = []

    def fail(self, msg):
        self.failures.append(msg)

    def eq(self, what, got, want):
        if got != want:
            self.fail(f"{what}: report says {got!r}, program did {want!r}")
            return False
        return True

    def note(self, msg):
        self.notes.append(msg)

    def finish(self, ok_line):
        for n in self.notes:
            print("note: " + n)
        if self.failures:
            print("FAIL:\n  " + "\n  ".join(self.failures))
            return 1
        print("OK: " + ok_line)
        return 0


def run(cmd, env=None, check=False):
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited {p.returncode}: {p.stdout[-1500:]} {p.stderr[-1500:]}")
    return p


def parse_expect(stdout):
    for line in stdout.splitlines():
        if line.startswith("EXPECT "):
            return json.loads(line[7:])
    return None


class Ctx:
    def __init__(self, a):
        self.a = a
        self.workdir = os.path.realpath(a.workdir)
        shutil.rmtree(self.workdir, ignore_errors=True)
        os.makedirs(self.workdir)
        self.data = os.path.join(self.workdir, "data")
        self.runs = 0

    def create_data(self):
        run([self.a.reader, "create", self.data], check=True)

    def traced(self, cmd, env_extra=None, shim=True):
        """Runs cmd (under the shim unless shim=False) with its traces in a
        fresh directory; returns (process, trace_dir)."""
        self.runs += 1
        tdir = os.path.join(self.workdir, f"traces{self.runs}")
        os.makedirs(tdir)
        env = dict(os.environ, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"))
        env.pop("LD_PRELOAD", None)
        env.pop("WSLSHIM_IO", None)
        env.pop("WSLSHIM_MOUNTINFO", None)
        if shim:
            env["LD_PRELOAD"] = self.a.shim
        env.update(env_extra or {})
        return run(cmd, env=env), tdir

    def report(self, tdir, c):
        try:
            p = run([self.a.report, "--json", tdir])
        except OSError as e:
            c.fail(f"cannot run wslshim-report: {e}")
            return None
        if p.returncode != 0:
            c.fail(f"wslshim-report exited {p.returncode}: {p.stderr.strip()}")
            return None
        try:
            return json.loads(p.stdout)
        except ValueError as e:
            c.fail(f"wslshim-report --json is not JSON: {e}")
            return None


# ---- reading the report ------------------------------------------------------------

def io_section(rep, c):
    io = rep.get("io")
    if not isinstance(io, dict):
        c.fail("report has no io section")
        return {}
    for k in ("reads", "bytes_read", "files_opened", "by_fs"):
        if k not in io:
            c.fail(f"report io section has no {k!r} (keys: {sorted(io)})")
    return io


def top_dir(io, d, c):
    tops = io.get("top_dirs")
    if not isinstance(tops, list):
        c.fail(f"report io section has no top_dirs list (keys: {sorted(io)})")
        return None
    for e in tops:
        if e.get("dir") == d:
            return e
    c.fail(f"io.top_dirs has no entry for {d}: {[e.get('dir') for e in tops]}")
    return None


def check_processes(rep, c, want):
    procs = rep.get("processes", [])
    if want is not None and len(procs) != want:
        c.fail(f"{len(procs)} processes in the report, expected {want}: "
               f"{[(p.get('pid'), p.get('exe')) for p in procs]}")
    for pr in procs:
        if pr.get("dropped"):
            c.fail(f"pid {pr.get('pid')}: {pr['dropped']} events dropped")
        if pr.get("truncated"):
            c.fail(f"pid {pr.get('pid')} ({pr.get('exe')}): trace not closed cleanly")


def device_fstype(path):
    """The filesystem type /proc/self/mountinfo gives the device of path."""
    st = os.stat(path)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    best = None
    with open("/proc/self/mountinfo") as f:
        for line in f:
            left, right = line.split(" - ", 1)
            fields = left.split()
            mnt = fields[4].replace("\\040", " ")
            if fields[2] == dev and (path == mnt or path.startswith(mnt.rstrip("/") + "/")):
                if best is None or len(mnt) > len(best[0]):
                    best = (mnt, right.split()[0])
    return best[1] if best else None


def check_exact_totals(io, e, c, label=""):
    """A program whose only file I/O is its data set: the io totals are its own.
    io.reads counts every read call (those at end of file and failed ones too),
    io.opens every open call, io.files_opened the successful ones."""
    c.eq(f"{label}io.reads", io.get("reads"), e["reads"])
    c.eq(f"{label}io.bytes_read", io.get("bytes_read"), e["bytes_read"])
    c.eq(f"{label}io.opens", io.get("opens"), sum(e["open_calls"].values()))
    c.eq(f"{label}io.files_opened", io.get("files_opened"), e["opens"])
    c.eq(f"{label}io.stats", io.get("stats"), e["stat_calls"])
    c.eq(f"{label}io.seeks", io.get("seeks"), e["seeks"])
    c.eq(f"{label}io.closes", io.get("closes"), e["closes"])
    c.eq(f"{label}io.mmaps (file mappings only)", io.get("mmaps"), e["mmaps"])
    c.eq(f"{label}io.bytes_mapped", io.get("bytes_mapped"), e["mmap_bytes"])
    c.eq(f"{label}io.errors", io.get("errors"), e["failed_opens"])
    sysio = io.get("system") or {}
    for k in ("reads", "opens", "stats"):
        if sysio.get(k):
            c.fail(f"{label}io.system.{k} is {sysio[k]} for a program that touched no system file")
    if io.get("unnamed_path_events"):
        c.fail(f"{label}io.unnamed_path_events is {io['unnamed_path_events']}: calls whose path was lost")


def check_dir(io, e, c, exact_reads=True):
    t = top_dir(io, e["dir"], c)
    if t is None:
        return
    if exact_reads:
        c.eq(f"io.top_dirs[{e['dir']}].reads", t.get("reads"), e["reads"])
    elif not isinstance(t.get("reads"), int) or t["reads"] < e["min_reads"]:
        c.fail(f"io.top_dirs[{e['dir']}].reads {t.get('reads')} < {e['min_reads']} (one per open at least)")
    c.eq(f"io.top_dirs[{e['dir']}].bytes_read", t.get("bytes_read"), e["bytes_read"])
    c.eq(f"io.top_dirs[{e['dir']}].files (successful opens)", t.get("files"), e["opens"])
    return t


def check_by_fs(io, fstype, e, c, only=True):
    by = io.get("by_fs") or {}
    if fstype not in by:
        c.fail(f"io.by_fs has no {fstype!r}: {sorted(by)}")
        return None
    fs = by[fstype]
    c.eq(f"io.by_fs.{fstype}.reads", fs.get("reads"), e["reads"])
    c.eq(f"io.by_fs.{fstype}.bytes_read", fs.get("bytes_read"), e["bytes_read"])
    if only:
        others = {k: v.get("reads") for k, v in by.items() if k != fstype and (v.get("reads") or v.get("bytes_read"))}
        if others:
            c.fail(f"io.by_fs has reads outside {fstype} for a program that read only its data: {others}")
    return fs


def call_stats(rep):
    """Per-name call figures: CUDA names in api, file-I/O names in io_calls."""
    d = dict(rep.get("api") or {})
    d.update(rep.get("io_calls") or {})
    return d


def api_calls(rep, name):
    a = call_stats(rep).get(name)
    return (a.get("calls", 0), a.get("errors", 0), a.get("variants", {})) if a else (0, 0, {})


def check_api(rep, e, c, program, every_route=True):
    api = call_stats(rep)
    if not any(n in api for n in READ_APIS + ("open", "fopen", "stat")):
        c.fail(f"report has no per-call figures of file I/O in api or io_calls (has: {sorted(api)[:12]})")
        return
    for name, st in (rep.get("io_calls") or {}).items():
        if sum(st.get("variants", {}).values()) != st.get("calls"):
            c.fail(f"io_calls.{name}: calls {st.get('calls')} != the sum of its variants {st.get('variants')}")
    for name in READ_APIS:
        want = e["by_api"].get(name, {}).get("calls", 0)
        c.eq(f"api.{name}.calls", api_calls(rep, name)[0], want)
    for name, want in e["open_calls"].items():
        calls, errors, _ = api_calls(rep, name)
        c.eq(f"api.{name}.calls", calls, want)
        c.eq(f"api.{name}.errors", errors, e["open_errors"].get(name, 0))
    for name, want in e["stats"].items():
        c.eq(f"api.{name}.calls", api_calls(rep, name)[0], want)
    for name, want in e["close_calls"].items():
        c.eq(f"api.{name}.calls", api_calls(rep, name)[0], want)
    c.eq("api.lseek.calls", api_calls(rep, "lseek")[0], e["seeks"])
    c.eq("api.mmap.calls (file mappings; the anonymous one is not file I/O)", api_calls(rep, "mmap")[0], e["mmaps"])
    # The _chk and 64-bit entry points the binary imports are the ones it called,
    # when the run takes every route (io_reader read): another mode (fork) calls
    # only some, and a compiler that fortifies by default imports them all.
    nm = shutil.which("nm")
    if nm and every_route:
        syms = set(run([nm, "-D", "--undefined-only", program]).stdout.split())
        syms = {s.split("@")[0] for s in syms}
        used = []
        for base, variants in (("read", ("__read_chk",)), ("fread", ("__fread_chk",)),
                               ("fgets", ("__fgets_chk",)), ("pread", ("pread64", "__pread64_chk", "__pread_chk"))):
            for v in variants:
                if v in syms:
                    used.append(v)
                    got = api_calls(rep, base)[2].get(v, 0)
                    if not got:
                        c.fail(f"{program} calls {v} but api.{base}.variants has no {v}: {api_calls(rep, base)[2]}")
        if used:
            c.note("variants imported and seen: " + ", ".join(used))


def bottleneck_ids(rep):
    return [b.get("id") for b in rep.get("bottlenecks", [])]


# ---- scenarios ----------------------------------------------------------------------

def scenario_exact(ctx):
    a = ctx.a
    program = a.program or a.reader
    ctx.create_data()
    p, tdir = ctx.traced([program, a.mode, ctx.data])
    c = Check()
    if p.returncode != 0:
        c.fail(f"{program} exited {p.returncode}: {p.stderr[-800:]}")
    e = parse_expect(p.stdout)
    if not e:
        c.fail("program printed no EXPECT line")
        return c.finish("")
    rep = ctx.report(tdir, c)
    if rep is None:
        return c.finish("")
    check_processes(rep, c, a.processes)
    io = io_section(rep, c)
    check_exact_totals(io, e, c)
    check_dir(io, e, c)
    fstype = device_fstype(ctx.data)
    check_by_fs(io, fstype, e, c)
    check_api(rep, e, c, program, every_route=a.mode == "read")
    for b in ("cross_os_reads",):
        if b in bottleneck_ids(rep) and fstype not in ("9p", "drvfs", "virtiofs"):
            c.fail(f"bottleneck {b} on a {fstype} data set")
    return c.finish(f"{e['reads']} reads, {e['bytes_read']} bytes, {e['files']} files ({e['opens']} opens), "
                    f"{e['stat_calls']} stat calls, {e['mmaps']} mmaps: report exact ({fstype})")


def scenario_python(ctx):
    a = ctx.a
    ctx.create_data()
    p, tdir = ctx.traced([sys.executable, a.script, ctx.data])
    c = Check()
    if p.returncode != 0:
        c.fail(f"io_python exited {p.returncode}: {p.stderr[-1500:]}")
    e = parse_expect(p.stdout)
    if not e:
        c.fail("io_python printed no EXPECT line")
        return c.finish("")
    rep = ctx.report(tdir, c)
    if rep is None:
        return c.finish("")
    check_processes(rep, c, e["processes"])
    io = io_section(rep, c)
    t = check_dir(io, e, c, exact_reads=False)
    # os.read and os.pread are one libc call each: at least that many.
    for name, want in (("read", e["os_read_calls"]), ("pread", e["os_pread_calls"])):
        got = api_calls(rep, name)[0]
        if got < want:
            c.fail(f"api.{name}.calls {got} < {want} os.{name} calls the program made")
    got = sum(api_calls(rep, n)[0] for n in ("stat", "lstat", "fstat", "fstatat", "statx", "access"))
    if got < e["stat_calls_min"]:
        c.fail(f"stat-family calls {got} < {e['stat_calls_min']} os.stat/os.path.exists calls")
    # per process: the workers' data reads are in the forked processes' figures
    procs = rep.get("processes", [])
    forked = [pr for pr in procs if pr.get("forked")]
    if len(forked) != 4:
        c.fail(f"{len(forked)} forked processes in the report, the program forked 4")
    got = sum((pr.get("io") or {}).get("bytes_read", 0) for pr in forked)
    if got < e["groups"]["workers"]["bytes_read"]:
        c.fail(f"forked processes' io.bytes_read add up to {got} < the workers' {e['groups']['workers']['bytes_read']}")
    mains = [pr for pr in procs if not pr.get("forked")]
    want = e["groups"]["main"]["bytes_read"] + e["groups"]["threads"]["bytes_read"]
    if len(mains) == 1 and (mains[0].get("io") or {}).get("bytes_read", 0) < want:
        c.fail(f"main process io.bytes_read {(mains[0].get('io') or {}).get('bytes_read')} < {want} "
               f"it read itself (sequentially and in 8 threads)")
    # /proc is not data: its reads are io.system's, not in the data figures.
    for t in io.get("top_dirs") or []:
        if str(t.get("dir", "")).startswith(("/proc", "/sys", "/dev")):
            c.fail(f"io.top_dirs lists {t.get('dir')}: system files counted as data")
    if isinstance(io.get("bytes_read"), int) and io["bytes_read"] < e["bytes_read"]:
        c.fail(f"io.bytes_read {io['bytes_read']} < the data set's {e['bytes_read']}")
    sysio = io.get("system")
    if not isinstance(sysio, dict):
        c.fail("report io section has no system figures")
    else:
        # main: /proc/self/status; each worker: /proc/self/stat
        if (sysio.get("reads") or 0) < 1 + 4:
            c.fail(f"io.system.reads {sysio.get('reads')}: the program read /proc 5 times at least")
        if (sysio.get("bytes_read") or 0) < e["proc_status_bytes"]:
            c.fail(f"io.system.bytes_read {sysio.get('bytes_read')} < {e['proc_status_bytes']} "
                   f"bytes of /proc/self/status")
    by = io.get("by_fs") or {}
    if "proc" not in by or not by["proc"].get("system"):
        c.fail(f"io.by_fs has no proc filesystem marked system: {sorted(by)}")
    fstype = device_fstype(ctx.data)
    if fstype in by and by[fstype].get("system"):
        c.fail(f"io.by_fs.{fstype} (the data's) is marked system")
    if t is not None and t.get("fstype") != fstype:
        c.fail(f"io.top_dirs[{e['dir']}].fstype {t.get('fstype')!r}, the data is on {fstype}")
    return c.finish(f"data dir {e['bytes_read']} bytes, {e['files']} files over {e['processes']} processes "
                    f"and 8 threads: exact")


def write_fixture(path, data_dir, fstype):
    st = os.stat(data_dir)
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    mnt = data_dir.replace(" ", "\\040")
    lines = [
        # root on a device nothing here lives on: only the data dir's line can claim the files
        "1 0 0:9999 / / rw,relatime - ext4 /dev/fake-root rw",
        "22 1 0:9998 / /proc rw,nosuid,nodev,noexec,relatime - proc proc rw",
    ]
    if fstype == "9p":
        lines.append(f"100 1 {dev} / {mnt} rw,noatime - 9p drvfs rw,dirsync,aname=drvfs;path=C:\\;uid=1000;"
                     f"gid=1000;symlinkroot=/mnt/,mfsymlinks,cache=5,access=client,msize=65536,trans=fd,rfd=5,wfd=5")
    else:
        lines.append(f"100 1 {dev} / {mnt} rw,relatime - ext4 /dev/sdc rw,discard,errors=remount-ro,data=ordered")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def scenario_cross_os(ctx):
    a = ctx.a
    ctx.create_data()
    fixture = os.path.join(ctx.workdir, f"mountinfo.{a.fstype}")
    write_fixture(fixture, ctx.data, a.fstype)
    p, tdir = ctx.traced([a.reader, "read", ctx.data], {"WSLSHIM_MOUNTINFO": fixture})
    c = Check()
    if p.returncode != 0:
        c.fail(f"io_reader exited {p.returncode}: {p.stderr[-800:]}")
    e = parse_expect(p.stdout)
    if not e:
        c.fail("io_reader printed no EXPECT line")
        return c.finish("")
    rep = ctx.report(tdir, c)
    if rep is None:
        return c.finish("")
    check_processes(rep, c, 1)
    io = io_section(rep, c)
    check_exact_totals(io, e, c)
    by = io.get("by_fs") or {}
    windows = [k for k, v in by.items() if isinstance(v, dict) and v.get("crosses_windows")]
    ids = bottleneck_ids(rep)
    if a.fstype == "9p":
        if len(windows) != 1:
            c.fail(f"io.by_fs: expected one class with crosses_windows true, got {windows} in {json.dumps(by)}")
        else:
            k = windows[0]
            c.eq(f"io.by_fs.{k}.reads", by[k].get("reads"), e["reads"])
            c.eq(f"io.by_fs.{k}.bytes_read", by[k].get("bytes_read"), e["bytes_read"])
            if k != "9p":
                c.note(f"the Windows-drive class is named {k!r}")
        if "cross_os_reads" not in ids:
            c.fail(f"no cross_os_reads bottleneck for {e['reads']} reads from a 9p drvfs mount: {ids}")
        else:
            b = next(b for b in rep["bottlenecks"] if b.get("id") == "cross_os_reads")
            for k in ("severity", "time_lost_ns", "summary", "advice"):
                if k not in b:
                    c.fail(f"cross_os_reads has no {k!r}")
            c.note(f"cross_os_reads: {b.get('severity')}, time_lost_ns {b.get('time_lost_ns')}: {b.get('summary')}")
    else:
        if windows:
            c.fail(f"io.by_fs marks {windows} as crossing to Windows on an ext4 fixture")
        check_by_fs(io, "ext4", e, c)
        if "cross_os_reads" in ids:
            c.fail(f"cross_os_reads fired for data on ext4: {ids}")
    return c.finish(f"{a.fstype} fixture: by_fs {sorted(by)}, windows classes {windows}, bottlenecks {ids}")


def scenario_small_files(ctx):
    a = ctx.a
    run([a.reader, "create-n", ctx.data, str(a.count), str(a.size)], check=True)
    env = {"WSLSHIM_IO_TIMING": str(a.timing)} if a.timing else {}
    p, tdir = ctx.traced([a.reader, "read-all", ctx.data, str(a.bufsize)], env)
    c = Check()
    if p.returncode != 0:
        c.fail(f"io_reader exited {p.returncode}: {p.stderr[-800:]}")
    e = parse_expect(p.stdout)
    if not e:
        c.fail("io_reader printed no EXPECT line")
        return c.finish("")
    rep = ctx.report(tdir, c)
    if rep is None:
        return c.finish("")
    check_processes(rep, c, 1)
    io = io_section(rep, c)
    check_exact_totals(io, e, c)
    check_dir(io, e, c)
    # sizes at open: every file is `size` bytes
    sf = io.get("small_files") or {}
    small = a.size < (1 << 20)
    c.eq("io.small_files.files (opens of files under 1 MiB)", sf.get("files"), a.count if small else 0)
    med = sf.get("median_file_size")
    if not isinstance(med, int) or abs(med - a.size) > a.size / 8:
        c.fail(f"io.small_files.median_file_size {med}: every file has {a.size} bytes")
    ids = bottleneck_ids(rep)
    fired = "small_file_reads" in ids
    if a.expect_quiet and fired:
        c.fail(f"small_file_reads fired for {a.count} files of {a.size} bytes: {ids}")
    if not a.expect_quiet and not fired:
        c.fail(f"small_file_reads did not fire for {a.count} files of {a.size} bytes: {ids}")
    if fired:
        b = next(b for b in rep["bottlenecks"] if b.get("id") == "small_file_reads")
        c.note(f"small_file_reads: {b.get('severity')}, time_lost_ns {b.get('time_lost_ns')}: {b.get('summary')}")
    return c.finish(f"{a.count} files of {a.size} bytes: small_file_reads {'fired' if fired else 'quiet'}")


def timeline(ctx, tdir, c):
    """The trace's file calls as wslshim-report --chrome writes them."""
    out = os.path.join(tdir, "timeline.json")
    p = run([ctx.a.report, "--chrome", out, tdir])
    if p.returncode != 0:
        c.fail(f"wslshim-report --chrome exited {p.returncode}: {p.stderr.strip()}")
        return []
    with open(out) as f:
        d = json.load(f)
    os.unlink(out)
    ev = d["traceEvents"] if isinstance(d, dict) else d
    return [e for e in ev if e.get("cat") == "io" and e.get("ph") == "X"]


def scenario_sampled(ctx):
    a = ctx.a
    run([a.reader, "create-n", ctx.data, str(a.count), str(a.size)], check=True)
    c = Check()
    fixture = os.path.join(ctx.workdir, "mountinfo.9p")
    write_fixture(fixture, ctx.data, "9p")
    summary = []
    for label, env in (("sampled", {}), ("all timed", {"WSLSHIM_IO_TIMING": "1"}),
                       ("9p", {"WSLSHIM_MOUNTINFO": fixture})):
        p, tdir = ctx.traced([a.reader, "read-all", ctx.data, str(a.bufsize)], env)
        if p.returncode != 0:
            c.fail(f"{label}: io_reader exited {p.returncode}: {p.stderr[-800:]}")
            continue
        e = parse_expect(p.stdout)
        rep = ctx.report(tdir, c)
        if not e or rep is None:
            c.fail(f"{label}: no EXPECT line or no report")
            continue
        io = io_section(rep, c)
        check_exact_totals(io, e, c, f"{label}: ")
        data = [x for x in timeline(ctx, tdir, c) if ctx.data in str((x.get("args") or {}).get("path", ""))]
        reads = [x for x in data if x.get("name") in READ_APIS]
        calls = sum((x.get("args") or {}).get("calls", 1) for x in reads)
        c.eq(f"{label}: read calls in the timeline (runs counted by their calls)", calls, e["reads"])
        untimed = [x for x in data if (x.get("args") or {}).get("timed") is False]
        sampled = [x for x in data if (x.get("args") or {}).get("timed") == "sampled"]
        all_calls = sum((x.get("args") or {}).get("calls", 1) for x in data)
        events = rep["processes"][0].get("events", 0)
        summary.append(f"{label}: {all_calls} data calls, {len(data)} events, {len(sampled)} sampled-timed, "
                       f"{len(untimed)} untimed")
        if label == "sampled":
            # each local call is timed with probability 1/32: far inside [1/128, 1/8] over thousands
            if not all_calls / 128 <= len(sampled) <= all_calls / 8:
                c.fail(f"sampled: {len(sampled)} of {all_calls} data calls timed, expected about 1 in 32")
            if len(data) * 2 > all_calls:
                c.fail(f"sampled: {len(data)} events for {all_calls} calls: alike reads were not folded")
            if not io.get("read_ns"):
                c.fail("sampled: io.read_ns is 0: the timed calls were not scaled up")
        else:  # every data call timed: no event of a sampled id
            if untimed or sampled:
                c.fail(f"{label}: {len(untimed)} untimed and {len(sampled)} sampled events on data files "
                       f"that must all be timed")
            if len(data) != all_calls or events < all_calls:
                c.fail(f"{label}: {len(data)} events for {all_calls} calls")
    return c.finish("; ".join(summary))


RUN_KILL = r'''
import os, signal, sys, time
path, n = sys.argv[1], int(sys.argv[2])
fd = os.open(path, os.O_RDONLY)
for i in range(n):
    if i % 512 == 0:
        os.lseek(fd, 0, os.SEEK_SET)
    if i % 100 == 0:
        time.sleep(0.01)  # the run spans many drains: its count comes in several events
    assert len(os.read(fd, 4096)) == 4096
time.sleep(2.5)  # the writer drains and flushes; the runs' counts must be in the trace by now
os.kill(os.getpid(), signal.SIGKILL)
'''


def scenario_run_kill(ctx):
    os.makedirs(ctx.data)
    path = os.path.join(ctx.data, "big.bin")
    with open(path, "wb") as f:
        f.write(os.urandom(4096 * 512))
    n = 5000
    p, tdir = ctx.traced([sys.executable, "-c", RUN_KILL, path, str(n)])
    c = Check()
    if p.returncode != -9:
        c.fail(f"the program was to die of SIGKILL, exit {p.returncode}: {p.stderr[-500:]}")
    rep = ctx.report(tdir, c)
    if rep is None:
        return c.finish("")
    dirs = {d.get("dir"): d for d in (rep.get("io") or {}).get("top_dirs", [])}
    d = dirs.get(ctx.data) or {}
    c.eq(f"reads of {path} in the killed program's trace", d.get("reads"), n)
    c.eq(f"bytes read from {path}", d.get("bytes_read"), n * 4096)
    procs = rep.get("processes") or [{}]
    if not procs[0].get("truncated"):
        c.note("the trace was not marked truncated after SIGKILL")
    return c.finish(f"{n} reads counted after SIGKILL, trace truncated={procs[0].get('truncated')}")


def signal_run(ctx, c, mode, main_size):
    """Runs io_reader MODE over a/main.bin (MAIN_SIZE bytes) with its handler's
    b/handler.bin: (what it says it did, the report, a/'s and b/'s folders), or
    None where it or the report failed (said in c)."""
    for sub, name, size in (("a", "main.bin", main_size), ("b", "handler.bin", 4096)):
        os.makedirs(os.path.join(ctx.data, sub))
        with open(os.path.join(ctx.data, sub, name), "wb") as f:
            f.write(os.urandom(size))
    p, tdir = ctx.traced([ctx.a.reader, mode, ctx.data, str(ctx.a.count)])
    e = parse_expect(p.stdout)
    if p.returncode != 0 or e is None:
        c.fail(f"io_reader {mode} exited {p.returncode}: {p.stderr[-500:]}")
        return None
    rep = ctx.report(tdir, c)
    if rep is None:
        return None
    check_processes(rep, c, 1)
    dirs = {d.get("dir"): d for d in (rep.get("io") or {}).get("top_dirs", [])}
    return e, rep, dirs.get(os.path.join(ctx.data, "a")) or {}, dirs.get(os.path.join(ctx.data, "b")) or {}


def scenario_signals(ctx):
    """A handler's reads between and inside the program's hooked reads: the
    fast paths' fold of the program's reads must stay exact."""
    c = Check()
    got = signal_run(ctx, c, "signals", 65536)
    if got is None:
        return c.finish("")
    e, rep, a, b = got
    c.eq("the program's reads of a/main.bin", a.get("reads"), e["main_reads"])
    c.eq("the program's bytes from a/main.bin", a.get("bytes_read"), e["main_bytes"])
    h, hb = b.get("reads", 0), b.get("bytes_read", 0)
    if e["handler_reads"] < 100:
        c.fail(f"only {e['handler_reads']} handler reads: the timer hardly fired")
    # How many of the handler's are recorded depends on where the signals land: most in a
    # single-threaded program (its read twin is busy only after its system call), about
    # half where reads go through glibc's (the hook is busy around the call: a TSan build).
    if not 0 < h <= e["handler_reads"]:
        c.fail(f"{h} handler reads recorded of {e['handler_reads']} made")
    elif h < e["handler_reads"] // 10:
        c.fail(f"only {h} of the handler's {e['handler_reads']} reads recorded")
    c.eq("bytes per recorded handler read", hb, h * 4096)
    return c.finish(f"{e['main_reads']} reads counted exactly beside {e['handler_reads']} handler reads, "
                    f"{h} of those recorded")


def scenario_signals_files(ctx):
    """Python's calls per file (its tells and fstats counted apart, its reads in
    slots) beside a handler's fstat, tell and pread of another file: every one
    of the program's calls counted exactly, per name."""
    n = ctx.a.count
    c = Check()
    got = signal_run(ctx, c, "signals-files", 4096)
    if got is None:
        return c.finish("")
    e, rep, a, b = got
    # the program's names (variants of the report's base names); the handler's are
    # fstat, lseek and pread. (Under TSan, whose interceptors come first, fstat64 and
    # fstat reach the shim as __fxstat64 and __fxstat.)
    program = {"fstat": ("fstat64", "__fxstat64"), "lseek": ("lseek64",), "read": ("read",)}
    handler = {"fstat": ("fstat", "__fxstat"), "lseek": ("lseek",)}
    for base, names in program.items():
        calls, errors, variants = api_calls(rep, base)
        c.eq(f"io_calls.{base}.variants {'+'.join(names)}", sum(variants.get(v, 0) for v in names), 2 * n)
        c.eq(f"io_calls.{base}.errors", errors, 0)
    c.eq("io_calls.close.variants.close", api_calls(rep, "close")[2].get("close", 0), n + 1)
    c.eq("the program's reads of a/main.bin", a.get("reads"), 2 * n)
    c.eq("the program's bytes from a/main.bin", a.get("bytes_read"), e["main_bytes"])
    c.eq("a/: files", a.get("files"), n)
    h = b.get("reads", 0)
    if e["handler_reads"] < 100:
        c.fail(f"only {e['handler_reads']} handler reads: the timer hardly fired")
    if not 0 < h <= e["handler_reads"]:
        c.fail(f"{h} handler reads recorded of {e['handler_reads']} made")
    for base, names in handler.items():
        hc = sum(api_calls(rep, base)[2].get(v, 0) for v in names)
        if not 0 < hc <= e["handler_reads"]:
            c.fail(f"{hc} handler {base} calls recorded of {e['handler_reads']} made")
    return c.finish(f"{n} files' calls counted exactly beside {e['handler_reads']} handler fstats, tells and "
                    f"reads, {h} of those reads recorded")


def scenario_io_off(ctx):
    a = ctx.a
    ctx.create_data()
    c = Check()
    p0, _ = ctx.traced([a.reader, "read", ctx.data], shim=False)
    p1, tdir1 = ctx.traced([a.reader, "read", ctx.data], {"WSLSHIM_IO": "0"})
    p2, tdir2 = ctx.traced([a.reader, "read", ctx.data])  # control: recording on
    for label, p in (("without shim", p0), ("WSLSHIM_IO=0", p1), ("recording on", p2)):
        if p.returncode != 0:
            c.fail(f"io_reader {label} exited {p.returncode}: {p.stderr[-500:]}")
    if (p1.returncode, p1.stdout, p1.stderr) != (p0.returncode, p0.stdout, p0.stderr):
        c.fail(f"output differs with WSLSHIM_IO=0:\n    {p0.stdout[:300]}\n    {p1.stdout[:300]}")
    if (p2.returncode, p2.stdout, p2.stderr) != (p0.returncode, p0.stdout, p0.stderr):
        c.fail("output differs with the shim recording I/O")
    e = parse_expect(p0.stdout) or {}
    traces = [f for f in os.listdir(tdir1) if f.endswith(".trace.zst")]
    rep = ctx.report(tdir1, c) if traces else None
    if not traces:
        c.note("WSLSHIM_IO=0: the process recorded nothing, so it wrote no trace")
    if rep is not None:
        check_processes(rep, c, 1)
        io = rep.get("io") or {}
        for k in ("reads", "bytes_read", "files_opened"):
            if io.get(k, 0) != 0:
                c.fail(f"WSLSHIM_IO=0: io.{k} is {io.get(k)}, expected 0")
        for name in READ_APIS + ("open", "fopen", "stat", "lstat", "access", "mmap", "close", "fclose", "lseek"):
            if api_calls(rep, name)[0]:
                c.fail(f"WSLSHIM_IO=0: api.{name} has {api_calls(rep, name)[0]} calls")
    rep2 = ctx.report(tdir2, c)
    if rep2 is not None and e:
        c.eq("control run io.reads", (rep2.get("io") or {}).get("reads"), e.get("reads"))
    return c.finish("WSLSHIM_IO=0: no I/O recorded, output identical; with recording on the counts are exact")


def scenario_same_output(ctx):
    a = ctx.a
    prog = a.rest
    if not prog:
        sys.exit("same-output needs -- PROG ARGS")
    c = Check()
    outs = []
    for label, shim in (("plain", False), ("shim", True)):
        scratch = os.path.join(ctx.workdir, "scratch-" + label)
        cmd = [x.replace("@SCRATCH@", scratch) for x in prog]
        p, tdir = ctx.traced(cmd, shim=shim)
        outs.append((p, tdir))
        if p.returncode != 0:
            c.fail(f"{label} run exited {p.returncode}:\n{p.stdout[-3000:]}\n{p.stderr[-800:]}")
    (p0, _), (p1, tdir1) = outs
    if p0.stdout != p1.stdout or p0.stderr != p1.stderr:
        import difflib
        diff = difflib.unified_diff(p0.stdout.splitlines(), p1.stdout.splitlines(), "without shim", "with shim",
                                    lineterm="", n=0)
        c.fail("output differs with the shim:\n    " + "\n    ".join(list(diff)[:40]) +
               (f"\n    stderr: {p0.stderr!r} vs {p1.stderr!r}" if p0.stderr != p1.stderr else ""))
    rep = ctx.report(tdir1, c)
    if rep is not None:
        check_processes(rep, c, None)
        # the failures the program made are recorded as failures
        for name in ("open", "read", "stat"):
            if api_calls(rep, name)[1] == 0:
                c.fail(f"api.{name}.errors is 0: the program's failed {name} calls were not recorded as errors")
    n = len(p0.stdout.splitlines())
    return c.finish(f"{n} lines identical with and without the shim, exit {p0.returncode}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    for opt in ("--shim", "--report", "--reader", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("scenario", choices=("exact", "python", "cross-os", "small-files", "sampled", "run-kill",
                                         "signals", "signals-files", "io-off", "same-output"))
    ap.add_argument("--program")
    ap.add_argument("--mode", choices=("read", "fork"), default="read", help="exact: io_reader's mode")
    ap.add_argument("--processes", type=int, default=1, help="exact: processes the run has")
    ap.add_argument("--script")
    ap.add_argument("--fstype", choices=("9p", "ext4"), default="9p")
    ap.add_argument("--count", type=int, default=3000)
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--bufsize", type=int, default=65536)
    ap.add_argument("--expect-quiet", action="store_true")
    ap.add_argument("--timing", type=int, default=0, help="small-files: WSLSHIM_IO_TIMING (0: the default)")
    argv = sys.argv[1:]
    rest = []
    if "--" in argv:  # same-output: the program and its arguments
        rest = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    a = ap.parse_args(argv)
    a.rest = rest
    ctx = Ctx(a)
    rc = {"exact": scenario_exact, "python": scenario_python, "cross-os": scenario_cross_os,
            "small-files": scenario_small_files, "sampled": scenario_sampled, "run-kill": scenario_run_kill,
            "signals": scenario_signals, "signals-files": scenario_signals_files, "io-off": scenario_io_off,
            "same-output": scenario_same_output}[a.scenario](ctx)
    if rc == 0:  # the data set is up to 41 MiB: kept only when a check failed
        shutil.rmtree(ctx.data, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
