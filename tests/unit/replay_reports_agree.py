#!/usr/bin/env python3
"""The writer's encoder (trace_format.h, as shim/writer/drain.c uses it), run again on recorded
traces by tests/bench/writer_replay.c, must give traces that wslshim-report reads as it reads the
originals:

- gaps-per-drain (one EVENTS_GAPS chunk per chunk of the original, as the shim wrote them until
  its chunks stayed open across drains): text and JSON reports byte-identical;
- gaps (drain.c's open chunks: a thread's chunks of consecutive drains in one, up to 4,096
  events; the writer's own ring's GPU_KERNEL events after the program thread's chunk): text
  reports byte-identical, JSON reports identical but for the NVTX ranges' GPU kernel attribution
  (gpu_kernels, gpu_ns, gpu_unattributed), which the analyzer makes in file order;
- bits (format 1.10, what the shim writes now: gaps' chunks with the times coded as bits): text
  and JSON reports byte-identical to gaps' (the same chunks, the same events).

Traces: the demo pair (tests/demo/pair: file I/O, NVTX, GPU timing, several threads) and a
trace of launches the shim writes now (client_timing, GPU timing every 3rd launch).

    replay_reports_agree.py REPLAY REPORT SHIM FAKE_LIB_DIR CLIENT_TIMING WORKDIR
"""
import glob
import json
import os
import shutil
import subprocess
import sys

REPLAY, REPORT, SHIM, LIBDIR, TIMING, WORK = map(os.path.abspath, sys.argv[1:7])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
NVTX_GPU = {"gpu_kernels", "gpu_ns", "gpu_unattributed"}
fails = []
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)

shim_dir = os.path.join(WORK, "shim")
os.makedirs(shim_dir)
env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, WSLSHIM_GPU_TIMING="3",
           WSLSHIM_OUTPUT=os.path.join(shim_dir, "t.trace.zst"), FAKE_CUDA_KERNEL_NS="2000")
p = subprocess.run([TIMING, "300", "40", "5"], env=env, capture_output=True, timeout=120)
if p.returncode != 0:
    fails.append(f"client_timing: exit {p.returncode}: {p.stderr[-300:]!r}")
traces = sorted(glob.glob(os.path.join(ROOT, "tests", "demo", "pair", "*", "*.trace.zst")))
traces += glob.glob(os.path.join(shim_dir, "*.trace.zst"))
if len(traces) < 3:
    fails.append(f"only {len(traces)} traces")


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in NVTX_GPU}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def reports(path):
    """(text, JSON) of the trace at path, run from its folder under the same name."""
    d, name = os.path.split(path)
    out = []
    for mode in ([], ["--json"]):
        r = subprocess.run([REPORT] + mode + [name], cwd=d, capture_output=True, text=True,
                           env=dict(os.environ, NO_COLOR="1"))
        if r.returncode != 0 or r.stderr:
            fails.append(f"{path}: report exit {r.returncode}: {r.stderr[-300:]!r}")
        out.append(r.stdout)
    return out


events = 0
for i, t in enumerate(traces):
    orig = os.path.join(WORK, str(i), "orig", "t.trace.zst")
    os.makedirs(os.path.dirname(orig))
    shutil.copy(t, orig)
    text0, json0 = reports(orig)
    by_mode = {}
    for mode in ("gaps-per-drain", "gaps", "bits"):
        out = os.path.join(WORK, str(i), mode, "t.trace.zst")
        os.makedirs(os.path.dirname(out))
        r = subprocess.run([REPLAY, orig, mode, "-", out], capture_output=True, text=True)
        if r.returncode != 0:
            fails.append(f"{t} {mode}: writer_replay exit {r.returncode}: {r.stderr[-300:]}")
            continue
        events += int(r.stdout.split(":")[1].split()[0]) if mode == "gaps" else 0
        text1, json1 = reports(out)
        by_mode[mode] = (text1, json1)
        if mode == "bits":
            if by_mode.get("gaps") != (text1, json1):
                fails.append(f"{t} bits: the reports differ from the same chunks' in EVENTS_GAPS")
            continue
        if text1 != text0:
            fails.append(f"{t} {mode}: the text reports differ")
        if mode == "gaps-per-drain" and json1 != json0:
            fails.append(f"{t} {mode}: the JSON reports differ")
        if mode == "gaps" and strip(json.loads(json1)) != strip(json.loads(json0)):
            fails.append(f"{t} {mode}: the JSON reports differ (NVTX GPU attribution aside)")
if events < 10000:
    fails.append(f"only {events} events replayed")
if fails:
    print("\n".join("FAIL " + f for f in fails))
    sys.exit(1)
print(f"ok: {len(traces)} traces, {events} events replayed; reports agree")
