#!/usr/bin/env python3
"""Runs a fake-driver client under the shim and checks the trace counted
exactly what the client did.

    traced_counts.py --shim LIB --report EXE --rows EXE --fakedir DIR --workdir DIR
                     [--env K=V]... [--expect-processes N] -- CLIENT ARGS...

Checks, for every hooked variant in include/wslshim/cuda_api.def (listed by
the fake_cuda_hook_rows helper):
  - the client passed its own checks (exit 0): return codes, outputs and
    missing symbols behave as without the shim;
  - the trace holds exactly as many calls of that variant as the client made
    (its EXPECT line), and the report folds them into the base name;
  - the driver saw exactly the calls the client made (FAKE_CUDA_COUNTS): the
    shim forwarded each once and added none of its own to the hooked entry
    points (its start-up device queries are not hooked and are ignored);
  - nothing was dropped and the trace was closed cleanly.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

SHIM_OWN_QUERIES = {"cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName",
                    "cuDeviceTotalMem_v2", "cuDeviceGetAttribute", "cuDeviceGetPCIBusId"}
# The sampled GPU timing's own calls (WSLSHIM_GPU_TIMING, on by default): the
# driver may count more of these than the client made, never fewer; the trace
# must still hold exactly the client's.
SHIM_TIMING_CALLS = {"cuCtxGetCurrent", "cuStreamGetCtx", "cuStreamIsCapturing", "cuStreamQuery", "cuEventCreate", "cuEventRecord",
                     "cuEventQuery", "cuEventElapsedTime", "cuEventElapsedTime_v2", "cuCtxSetCurrent",
                     "cuStreamCreate", "cuThreadExchangeStreamCaptureMode", "cuMemGetInfo_v2", "cuCtxGetDevice"}


def main():
    ap = argparse.ArgumentParser()
    for opt in ("--shim", "--report", "--rows", "--fakedir", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--expect-processes", type=int, default=1)
    ap.add_argument("client", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    client = [c for c in a.client if c != "--"]

    rows = subprocess.run([a.rows], check=True, capture_output=True, text=True).stdout.split("\n")
    variants = {}  # symbol -> base name
    for line in rows:
        if line.strip():
            sym, base = line.split()[:2]
            variants[sym] = base

    shutil.rmtree(a.workdir, ignore_errors=True)
    os.makedirs(a.workdir)
    counts_path = os.path.join(a.workdir, "driver-%p.json")
    env = dict(os.environ, LD_PRELOAD=a.shim, LD_LIBRARY_PATH=a.fakedir,
               WSLSHIM_OUTPUT=os.path.join(a.workdir, "%p.trace.zst"), FAKE_CUDA_COUNTS=counts_path)
    for kv in a.env:
        k, v = kv.split("=", 1)
        env[k] = v
    p = subprocess.run(client, env=env, capture_output=True, text=True)
    failures = []
    if p.returncode != 0:
        failures.append(f"client exited {p.returncode}: {p.stdout[-800:]} {p.stderr[-800:]}")
    expect = {}
    for line in p.stdout.splitlines():
        if line.startswith("EXPECT "):
            expect = json.loads(line[7:])
    if not expect:
        failures.append("client printed no EXPECT line")

    driver = {}
    for f in os.listdir(a.workdir):
        if f.startswith("driver-") and f.endswith(".json"):
            with open(os.path.join(a.workdir, f)) as fh:
                for k, v in json.load(fh).items():
                    driver[k] = driver.get(k, 0) + v
    rep = subprocess.run([a.report, "--json", a.workdir], capture_output=True, text=True)
    if rep.returncode != 0:
        print(f"FAIL: wslshim-report exited {rep.returncode}: {rep.stderr}")
        return 1
    report = json.loads(rep.stdout)

    traced = {}
    for base, st in report.get("api", {}).items():
        for sym, n in st.get("variants", {}).items():
            traced[sym] = traced.get(sym, 0) + n
            if variants.get(sym) != base:
                failures.append(f"{sym} reported under {base}, expected {variants.get(sym)}")
        if sum(st.get("variants", {}).values()) != st.get("calls"):
            failures.append(f"{base}: calls {st.get('calls')} != sum of its variants")

    checked = 0
    for sym in sorted(variants):
        want = expect.get(sym, 0)
        got = traced.get(sym, 0)
        checked += want
        if got != want:
            failures.append(f"{sym}: trace has {got} calls, client made {want}")
    for sym, n in expect.items():
        if sym in SHIM_OWN_QUERIES:
            continue
        if sym in SHIM_TIMING_CALLS and driver.get(sym, 0) >= n:
            continue
        if driver.get(sym, 0) != n:
            failures.append(f"{sym}: driver saw {driver.get(sym, 0)} calls, client made {n}")
    for sym, n in driver.items():
        if sym not in expect and sym not in SHIM_OWN_QUERIES and sym not in SHIM_TIMING_CALLS:
            failures.append(f"{sym}: driver saw {n} calls the client never made")

    procs = report.get("processes", [])
    if len(procs) != a.expect_processes:
        failures.append(f"{len(procs)} traces, expected {a.expect_processes}")
    for pr in procs:
        if pr.get("dropped"):
            failures.append(f"pid {pr.get('pid')}: {pr['dropped']} events dropped")
        if pr.get("truncated"):
            failures.append(f"pid {pr.get('pid')}: trace not closed cleanly")

    if failures:
        print("FAIL:\n  " + "\n  ".join(failures))
        return 1
    print(f"OK: {checked} hooked calls over {sum(1 for s in variants if expect.get(s))} variants "
          f"traced exactly; driver counts match; {len(procs)} trace(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
