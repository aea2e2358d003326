#!/usr/bin/env python3
"""File-system emulation, WSLSHIM_EMULATE=fs:PATH=9p (docs/emulation.md).

  emulate_fs_test.py SHIM REPORT WORKDIR

A Python program (the shim preloaded into python3 itself) lists a folder of
N small files, stats and reads each, writes a 4 MiB checkpoint, fsyncs and
renames it. Checks:
  - its output (a digest of what it read) and exit status are the same with
    and without the emulation;
  - under fs:DATA=9p,fsmeta=+300us the timed loop takes about
    (2N + 3) x 300 us + bytes read / 330 MB/s + bytes written / 293 MB/s
    longer (within 10%; every timed figure within its bound in one of ATTEMPTS): one fsmeta per call naming a path
    (listdir's opendir, N stats, N + 1 opens, the rename), the 9p rates on
    the bytes; fstat, seeks and closes cost nothing;
  - a path outside the prefix (a sibling folder whose name starts the same)
    is not slowed;
  - the trace says so: JSON "emulation" with "fs" on the run, the text
    report's first lines;
  - `--project SPEC` of the unemulated run lands within 10% of the emulated
    run's wall time, and the exposure's file-metadata row counts the calls;
  - SPECs the shim refuses (a relative path, an unknown type, fsmeta without
    a path) get one error line and no emulation.
"""
import json
import os
import shutil
import subprocess
import sys

SHIM, REPORT, WORK = sys.argv[1:4]
N = 200
SIZE = 32 * 1024
CKPT = 4 << 20
META_NS = 300_000
ATTEMPTS = 4
failures = []

CLIENT = r"""
import hashlib, json, os, sys, time
base, out = sys.argv[1], sys.argv[2]
data = os.path.join(base, "data")
pc = time.perf_counter
ops = {"listdir": [], "stat": [], "open_read": [], "ckpt": [], "rename": []}
t0 = pc()
a = pc(); names = sorted(os.listdir(data)); ops["listdir"].append(pc() - a)
h = hashlib.sha256()
for n in names:
    p = os.path.join(data, n)
    a = pc(); os.stat(p); ops["stat"].append(pc() - a)
    a = pc()
    with open(p, "rb") as f:
        b = f.read()
    ops["open_read"].append(pc() - a)
    h.update(b)
ck = os.path.join(base, "ckpt.tmp")
a = pc()
with open(ck, "wb") as f:
    f.write(b"x" * (4 << 20))
    f.flush()
    os.fsync(f.fileno())
ops["ckpt"].append(pc() - a)
a = pc(); os.rename(ck, os.path.join(base, "ckpt.bin")); ops["rename"].append(pc() - a)
t1 = pc()
# a sibling whose name starts like the prefix: not under it
with open(base + "-other.txt", "rb") as f:
    f.read()
t2 = pc()
print(h.hexdigest(), len(names))
med = {k: sorted(v)[len(v) // 2] for k, v in ops.items()}
# the loop as it would be had no call been held up beyond its kind's median
# (a spinning thread preempted on a busy machine overshoots; such calls are
# the disturbance, removed as in emulate_test.py)
typical = sum(min(x, med[k]) for k, v in ops.items() for x in v)
json.dump({"loop_ns": int((t1 - t0) * 1e9), "other_ns": int((t2 - t1) * 1e9),
           "excess_ns": int((sum(sum(v) for v in ops.values()) - typical) * 1e9),
           "median_ns": {k: int(v * 1e9) for k, v in med.items()}}, open(out, "w"))
"""


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def setup():
    base = os.path.join(WORK, "ds")
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(base, "data"))
    for i in range(N):
        with open(os.path.join(base, "data", f"f{i:04d}.bin"), "wb") as f:
            f.write(bytes([i % 251]) * SIZE)
    with open(base + "-other.txt", "wb") as f:
        f.write(b"y" * SIZE)
    return base


def run(name, spec, base):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    for f in ("ckpt.bin", "ckpt.tmp"):
        if os.path.exists(os.path.join(base, f)):
            os.unlink(os.path.join(base, f))
    env = dict(os.environ, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"))
    env.pop("WSLSHIM_EMULATE", None)
    if spec is not None:
        env["WSLSHIM_EMULATE"] = spec
    timing = os.path.join(WORK, name + ".json")
    p = subprocess.run([sys.executable, "-S", "-c", CLIENT, base, timing], env=env, capture_output=True, text=True)
    t = json.load(open(timing)) if p.returncode == 0 and os.path.exists(timing) else None
    return d, p, t


def report(args, text=False):
    p = subprocess.run([REPORT] + ([] if text else ["--json"]) + args, capture_output=True, text=True)
    if not check(p.returncode == 0, f"report {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}"):
        return None
    return p.stdout if text else json.loads(p.stdout)


os.makedirs(WORK, exist_ok=True)
base = setup()
SPEC = f"fs:{base}=9p,fsmeta=+300us"
added = (2 * N + 3) * META_NS + N * SIZE * 1e9 / 330e6 + CKPT * 1e9 / 293e6

# ---- refused SPECs: one line, not emulated ---------------------------------------------
for bad in ("fs:data=9p", f"fs:{base}=ntfs", "fsmeta=+1ms", f"fs:{base}=9p,fsread=fast"):
    _, p, _ = run("bad", bad, base)
    check(p.returncode == 0, f"{bad}: client failed: {p.stderr}")
    lines = [l for l in p.stderr.splitlines() if "WSLSHIM_EMULATE" in l]
    check(len(lines) == 1 and "not emulated" in lines[0], f"{bad}: not refused in one line: {p.stderr!r}")
doc = report([os.path.join(WORK, "bad")])
if doc:
    check("emulation" not in doc, "a refused SPEC still marked the run emulated")

# ---- added time, output unchanged --------------------------------------------------------
def timing_checks(dn, de, tn, te):
    """The timed figures of one native/emulated pair: a list of what missed (empty: all held)."""
    missed = []
    excess = max(0, te["excess_ns"] - tn["excess_ns"])
    got = te["loop_ns"] - excess - tn["loop_ns"]
    mn, me = tn["median_ns"], te["median_ns"]
    print(f"attempt {attempt + 1}: loop native {tn['loop_ns'] / 1e6:.1f} ms, emulated {te['loop_ns'] / 1e6:.1f} ms "
          f"({excess / 1e6:.1f} ms of it disturbance), added {got / 1e6:.1f} ms (expected {added / 1e6:.1f} ms); "
          f"median added: stat {(me['stat'] - mn['stat']) / 1e3:.1f} us (300), open+read "
          f"{(me['open_read'] - mn['open_read']) / 1e3:.1f} us ({(META_NS + SIZE * 1e9 / 330e6) / 1e3:.1f}), "
          f"checkpoint {(me['ckpt'] - mn['ckpt']) / 1e6:.2f} ms ({(META_NS + CKPT * 1e9 / 293e6) / 1e6:.2f}); "
          f"outside the prefix {tn['other_ns'] / 1e3:.0f} / {te['other_ns'] / 1e3:.0f} us")
    if abs(got - added) / added > 0.10:
        missed.append(f"emulated loop {got / 1e6:.1f} ms slower, not {added / 1e6:.1f} ms (+-10%)")
    for k, want in (("stat", META_NS), ("open_read", META_NS + SIZE * 1e9 / 330e6), ("listdir", META_NS),
                    ("rename", META_NS)):
        d = me[k] - mn[k]
        # stat and open_read: medians of N calls; listdir and rename: one call each (noisier)
        tol = 0.10 * want + 20_000 if k in ("stat", "open_read") else 0.5 * want
        if abs(d - want) > tol:
            missed.append(f"{k}: added {d} ns at the median, not ~{want:.0f}")
    # a file outside the prefix: one open of a 32 KiB file, far below one fsmeta
    if te["other_ns"] >= tn["other_ns"] + META_NS / 2:
        missed.append(f"a path outside the prefix was slowed: {tn['other_ns']} -> {te['other_ns']} ns")
    nat, em, pr = report([dn]), report([de]), report(["--project", SPEC, dn])
    if nat and em and pr:
        p = pr["projection"]
        actual = em["wall_ns"] - excess
        err = (p["wall_ns"] - actual) / actual
        print(f"projected {p['wall_ns'] / 1e6:.1f} ms vs emulated {actual / 1e6:.1f} ms ({err * 100:+.1f}%), "
              f"native {nat['wall_ns'] / 1e6:.1f} ms")
        if abs(err) > 0.10:
            missed.append(f"projection onto {SPEC} off by {err * 100:+.1f}%")
    for m in missed:
        print("  missed:", m)
    return missed


# Every timed figure must hold in one attempt (a timed figure that misses in one attempt and
# holds in another was disturbed by the machine, not wrong); the deterministic checks below run
# on the attempt that missed least.
best = None
for attempt in range(ATTEMPTS):
    dn, pn, tn = run("fs-native", None, base)
    de, pe, te = run("fs-emulated", SPEC, base)
    if not check(tn and te, f"client failed: {pn.stderr} {pe.stderr}"):
        break
    check(pn.stdout == pe.stdout and pn.stdout.strip().endswith(str(N)),
          f"output differs under emulation: {pn.stdout!r} vs {pe.stdout!r}")
    missed = timing_checks(dn, de, tn, te)
    if best is None or len(missed) < len(best[0]):
        best = (missed, dn, de, tn, te)
    if not missed:
        break

if best:
    missed, dn, de, tn, te = best
    for m in missed:
        check(False, f"{m} (the attempt that missed least of {ATTEMPTS})")
    nat, em = report([dn]), report([de])
    if nat and em:
        e = em.get("emulation")
        if check(isinstance(e, dict) and isinstance(e.get("fs"), dict), f"no emulation.fs key: {e}"):
            check(e["spec"] == SPEC and e["fs"]["meta_ns"] == META_NS and e["fs"]["read_bytes_per_s"] == 330000000
                  and e["fs"]["write_bytes_per_s"] == 293000000, f"emulation key wrong: {e}")
        check("emulation" not in nat, "an unemulated run says it was emulated")
        io = em.get("io", {})
        check(io.get("bytes_written", 0) >= CKPT, f"checkpoint bytes not counted as written: {io.get('bytes_written')}")
        text = report([de], text=True)
        if text:
            head = "\n".join(text.splitlines()[:3])
            check("EMULATED RUN" in head and "9p" in head, f"the text report's first lines do not say so:\n{head}")
        pr = report(["--project", SPEC, dn])
        if pr:
            p = pr["projection"]
            check(not p["unknown_figures"], f"an emulation SPEC needs no figure: {p['unknown_figures']}")
            fm = p["exposure"]["file_metadata"]
            check(fm["calls"] >= 2 * N + 3, f"exposure file_metadata counts {fm['calls']} calls, under {2 * N + 3}")

# ---- workers: children read the files, the parent waits on their pipe ---------------------
# As a DataLoader: a forked worker reads the files and sends each one's digest on a pipe; the
# parent reads the pipe, after stating every file itself: under the emulation the worker is
# forked late (the replay starts it at its parent's shift then). (One worker: the emulation spins, and two spinning workers on this
# 2-core machine would stretch each other beyond the added cost.) Under the emulation the workers are slower and the
# parent waits for them: the projection of the native run must carry the workers' added time
# into the parent's pipe reads (it replays children first).
WORKERS = r"""
import hashlib, json, os, sys, time
base, out = sys.argv[1], sys.argv[2]
data = os.path.join(base, "data")
names = sorted(os.listdir(data))
pc = time.perf_counter


def excess(ds):  # time beyond every call taking the median (a preempted spin overshoots)
    m = sorted(ds)[len(ds) // 2]
    return sum(ds) - m * len(ds)


t0 = pc()
ds = []
for n in names:  # the parent's own emulated calls first: the worker is forked when it is behind
    a = pc(); os.stat(os.path.join(data, n)); ds.append(pc() - a)
r, w = os.pipe()
kids = []
for k in range(1):
    pid = os.fork()
    if pid == 0:
        os.close(r)
        cd = []
        for n in names:
            a = pc()
            with open(os.path.join(data, n), "rb") as f:
                b = f.read()
            cd.append(pc() - a)
            os.write(w, hashlib.sha256(b).digest())
        open(out + ".child", "w").write(str(excess(cd)))
        os._exit(0)
    kids.append(pid)
os.close(w)
got = b""
while True:
    b = os.read(r, 32)
    if not b:
        break
    got += b
for pid in kids:
    os.waitpid(pid, 0)
t1 = pc()
print(len(got) // 32)
ex = excess(ds) + float(open(out + ".child").read())
json.dump({"loop_ns": int((t1 - t0) * 1e9), "excess_ns": int(ex * 1e9)}, open(out, "w"))
"""


def run_workers(name, spec):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    env = dict(os.environ, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"))
    env.pop("WSLSHIM_EMULATE", None)
    if spec:
        env["WSLSHIM_EMULATE"] = spec
    timing = os.path.join(WORK, name + ".json")
    p = subprocess.run([sys.executable, "-S", "-c", WORKERS, base, timing], env=env, capture_output=True, text=True)
    return d, p, (json.load(open(timing)) if p.returncode == 0 else None)


best = None
for attempt in range(ATTEMPTS):
    dn, pn, tn = run_workers("wk-native", None)
    de, pe, te = run_workers("wk-emulated", SPEC)
    if not check(tn and te and pn.stdout == pe.stdout == f"{N}\n", f"workers client: {pn.stdout!r} {pe.stdout!r} "
                 f"{pn.stderr[-300:]} {pe.stderr[-300:]}"):
        break
    nat, em = report([dn]), report([de])
    pr = report(["--project", SPEC, dn])
    if not (nat and em and pr):
        break
    p = pr["projection"]
    # the emulated run less its disturbance beyond the native run's (emulate_test.py's correction)
    excess = max(0, te["excess_ns"] - tn["excess_ns"])
    actual = em["wall_ns"] - excess
    err = (p["wall_ns"] - actual) / actual
    print(f"workers attempt {attempt + 1}: native {nat['wall_ns'] / 1e6:.1f} ms, emulated {em['wall_ns'] / 1e6:.1f} ms "
          f"({excess / 1e6:.1f} ms of it disturbance), projected {p['wall_ns'] / 1e6:.1f} ms ({err * 100:+.1f}%); "
          f"{len(em['processes'])} processes")
    if best is None or abs(err) < abs(best):
        best = err
    if abs(err) <= 0.10:
        break
check(best is not None and abs(best) <= 0.10, f"workers: projection off by {best}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
