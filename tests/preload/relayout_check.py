#!/usr/bin/env python3
"""Traces the shim writes (format 1.10, EVENTS_BITS; 1.13: tables carried from chunk to chunk) against the same events
in the 1.2 layout older shims wrote: tests/unit/relayout.py rewrites each
trace with an independent Python codec, and wslshim-report must print
byte-identical reports (JSON and text) for both.

    relayout_check.py SHIM REPORT FAKE_LIB_DIR WORKDIR CLIENT_TIMING CLIENT_RUNTIME CLIENT_VMM [BENCH_HOOK]

Workloads: the fake-driver clients (GPU timing every 3rd launch, graphs, the
per-thread stream, 8 threads, VMM), file I/O of real programs (cat, sh), and
with BENCH_HOOK a launch mix of 64 kernels on one thread.
"""
import json
import os
import shutil
import subprocess
import sys

SHIM, REPORT, LIBDIR, WORK, TIMING, RUNTIME, VMM = map(os.path.abspath, sys.argv[1:8])
BENCH = os.path.abspath(sys.argv[8]) if len(sys.argv) > 8 else None  # bench_hook: a launch mix, one thread
if not shutil.which("zstd"):  # the independent codec (tests/unit/relayout.py) needs it
    print("SKIP: no zstd command")
    sys.exit(77)
RELAYOUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "relayout.py")
fails = []

workloads = {
    "timing": ([TIMING, "200", "40", "5"], {"WSLSHIM_GPU_TIMING": "3", "FAKE_CUDA_KERNEL_NS": "2000"}),
    "runtime": ([RUNTIME, "8", "3000"], {}),
    "vmm": ([VMM], {}),
    "files": (["sh", "-c", "cat /etc/hostname /etc/passwd > /dev/null; ls / > /dev/null"], {}),
}
if BENCH:  # 64 kernels' sets again and again in chunks of 4,096 events: frames fill with carried tables
    workloads["mix"] = ([BENCH, "300000", "mix"], {})
shutil.rmtree(WORK, ignore_errors=True)
total = {"events": 0, "packed_chunks": 0, "packed_bytes": 0, "literals": 0, "carried_chunks": 0}
for name, (cmd, extra) in workloads.items():
    d14, d12 = os.path.join(WORK, name, "v14"), os.path.join(WORK, name, "v12")
    os.makedirs(d14)
    os.makedirs(d12)
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=os.path.join(d14, "t-%p.trace.zst"),
               **extra)
    p = subprocess.run(cmd, env=env, capture_output=True, timeout=120)
    if p.returncode != 0:
        fails.append(f"{name}: exit {p.returncode}: {p.stderr[-300:]!r}")
        continue
    traces = sorted(f for f in os.listdir(d14) if f.endswith(".trace.zst"))
    if not traces:
        fails.append(f"{name}: no trace written")
        continue
    for t in traces:
        r = subprocess.run([sys.executable, RELAYOUT, os.path.join(d14, t), os.path.join(d12, t)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            fails.append(f"{name}/{t}: relayout failed: {r.stderr[-300:]}")
            continue
        st = json.loads(r.stdout)
        for k in total:
            total[k] += st[k]
        if name != "files" and st["packed_chunks"] == 0:
            fails.append(f"{name}/{t}: no EVENTS_BITS chunk in a shim trace")
    outs = []
    for d in (d14, d12):
        res = []
        for mode in (["--json"], []):
            r = subprocess.run([REPORT] + mode + traces, cwd=d, capture_output=True, env=dict(os.environ, NO_COLOR="1"))
            res.append((r.returncode, r.stdout, r.stderr))
        outs.append(res)
    for (a, b), mode in zip(zip(*outs), ("json", "text")):
        if a[0] != 0 or not a[1]:
            fails.append(f"{name} {mode}: report exit {a[0]}: {a[2][-300:]!r}")
        elif a != b:
            fails.append(f"{name} {mode}: the 1.10 and 1.2 layouts give different reports")
if total["events"] < 5000:
    fails.append(f"only {total['events']} events recorded")
if total["carried_chunks"] == 0:  # 8 threads' chunks take turns in each frame (format 1.13)
    fails.append("no EVENTS_BITS chunk carried its thread's table")
if fails:
    print("\n".join("FAIL " + f for f in fails))
    sys.exit(1)
print(f"ok: {total['events']} events in {total['packed_chunks']} packed chunks "
      f"({total['packed_bytes'] / max(total['events'], 1):.2f} bytes/event before zstd, "
      f"{total['literals']} literals, {total['carried_chunks']} chunks with a carried table); reports identical in "
      "both layouts")
