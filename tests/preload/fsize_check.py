#!/usr/bin/env python3
"""The trace cannot be written (file-size limit: RLIMIT_FSIZE, with SIGXFSZ
ignored and with its default action; a full filesystem where one can be
mounted): recording stops with one line on stderr, the program goes on, its
own writes and output are as without the shim, and the trace reads up to
where it was cut.
    fsize_check.py SHIM REPORT FAKEDIR CLIENT WORKDIR"""
import json, os, resource, shutil, signal, subprocess, sys

shim, report, fakedir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
LIMIT = 48 * 1024  # the program's own file is 8 KiB: only the trace hits it
CALLS = 400000
failures = []


def limited(ignore):
    def pre():
        resource.setrlimit(resource.RLIMIT_FSIZE, (LIMIT, LIMIT))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN if ignore else signal.SIG_DFL)
    return pre


for name, ignore in (("sigxfsz-ignored", True), ("sigxfsz-default", False)):
    tdir = os.path.join(work, name)
    os.makedirs(tdir)
    env = dict(os.environ, LD_LIBRARY_PATH=fakedir)
    env.pop("LD_PRELOAD", None)
    out_a, out_b = os.path.join(tdir, "own-a"), os.path.join(tdir, "own-b")
    a = subprocess.run([client, out_a, str(CALLS)], env=env, capture_output=True, text=True, timeout=60,
                       preexec_fn=limited(ignore))
    env.update(LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"))
    b = subprocess.run([client, out_b, str(CALLS)], env=env, capture_output=True, text=True, timeout=60,
                       preexec_fn=limited(ignore))
    if (a.returncode, a.stdout) != (b.returncode, b.stdout) or a.returncode != 0:
        failures.append(f"{name}: without the shim {a.returncode} {a.stdout!r}, with it {b.returncode} {b.stdout!r} {b.stderr!r}")
        continue
    if open(out_a, "rb").read() != open(out_b, "rb").read() or os.path.getsize(out_b) != 8192:
        failures.append(f"{name}: the program's own file differs")
    lines = [l for l in b.stderr.splitlines() if l.strip()]
    if a.stderr or len(lines) != 1 or "recording stopped" not in lines[0]:
        failures.append(f"{name}: expected one line on stderr about recording stopping, got {b.stderr!r}")
    traces = [os.path.join(tdir, f) for f in os.listdir(tdir) if ".trace.zst" in f]
    if len(traces) != 1 or os.path.getsize(traces[0]) > LIMIT:
        failures.append(f"{name}: traces {traces}")
        continue
    r = subprocess.run([report, "--json", traces[0]], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{name}: the cut trace does not read: {r.stderr.strip()}")
        continue
    d = json.loads(r.stdout)
    calls = d["api"].get("cuCtxSynchronize", {}).get("calls", 0)
    if not d["processes"][0]["truncated"] or not 0 < calls < CALLS:
        failures.append(f"{name}: truncated={d['processes'][0]['truncated']}, {calls} calls read back")
    else:
        print(f"ok  {name}: program unchanged; stderr {lines[0]!r}; {calls} of {CALLS} calls read back from the cut trace")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("OK: a trace that cannot be written stops recording and nothing else")
