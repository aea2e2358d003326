#!/usr/bin/env python3
"""Sampled GPU timing against the fake driver's simulated GPU.

  gpu_timing_test.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR

CLIENT is client_timing: kernels of known simulated durations (a kernel of
gridDimX g takes g * FAKE_CUDA_KERNEL_NS on the fake GPU), launched queued
(GPU busy), starved (a sync after each), captured into a graph and replayed,
and on the per-thread default stream. Checks, for WSLSHIM_GPU_TIMING=1, 7 and
off:
  - the program is unchanged: exit 0, its own driver calls counted exactly as
    it made them (the shim's own calls are only event, capture-status and
    context queries);
  - no event was ever recorded into a stream being captured (fake's count);
  - exactly the launches due are timed (every Nth of the thread, less those
    into a capturing stream);
  - each kernel's median GPU time is the simulated one (within 2%), for queued
    kernels and, after the correction, for starved ones;
  - "idle at submit" is set for every starved launch and for none of the
    queued ones after the first;
  - every timed launch is placed on the host clock, after its launch began.
"""
import json
import os
import subprocess
import sys

SHIM, REPORT, CLIENT, LIBDIR, WORK = sys.argv[1:6]
K = 50000  # ns per block
QUEUED, STARVED, REPLAYS = 120, 30, 5
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


# Calls the shim itself may add to the driver's counts, and only when timing.
SHIM_CALLS = {"cuCtxGetCurrent", "cuStreamGetCtx", "cuStreamIsCapturing", "cuStreamQuery", "cuEventCreate", "cuEventRecord",
              "cuEventQuery", "cuEventElapsedTime", "cuEventElapsedTime_v2", "cuCtxSetCurrent", "cuStreamCreate",
              "cuThreadExchangeStreamCaptureMode", "cuMemGetInfo_v2", "cuCtxGetDevice",
              "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetName", "cuDeviceTotalMem_v2",
              "cuDeviceGetAttribute", "cuDeviceGetPCIBusId", "cuFuncGetName", "cuKernelGetName"}
# (the seven before the last two: the writer's DRIVER and RANK chunks, with or without timing; the last
# two: the name of a function no hook saw named, timing or not)


def run(tag, timing, extra_env=None, args=(QUEUED, STARVED, REPLAYS)):
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, FAKE_CUDA_KERNEL_NS=str(K),
               FAKE_CUDA_STATS=os.path.join(d, "stats.json"), FAKE_CUDA_COUNTS=os.path.join(d, "counts.json"),
               WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"), WSLSHIM_GPU_TIMING=timing,
               FAKE_CUDA_PROC_ALIASES="0", **(extra_env or {}))
    p = subprocess.run([CLIENT] + [str(a) for a in args], env=env, capture_output=True, text=True)
    check(p.returncode == 0, f"{tag}: client exit {p.returncode}: {p.stderr.strip()}")
    expect = plan = None
    for line in p.stdout.splitlines():
        if line.startswith("EXPECT "):
            expect = json.loads(line[7:])
        elif line.startswith("PLAN "):
            plan = json.loads(line[5:])
    counts = json.load(open(os.path.join(d, "counts.json")))
    stats = json.load(open(os.path.join(d, "stats.json")))
    traces = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".trace.zst")]
    r = subprocess.run([REPORT, "--json"] + traces, capture_output=True, text=True)
    check(r.returncode == 0, f"{tag}: report exit {r.returncode}: {r.stderr.strip()}")
    return expect, plan, counts, stats, json.loads(r.stdout)


def driver_calls_unchanged(tag, expect, counts, timing_on):
    for sym, n in expect.items():
        extra = counts.get(sym, 0) - n
        check(extra == 0 or (extra > 0 and sym in SHIM_CALLS and timing_on),
              f"{tag}: {sym}: driver counted {counts.get(sym, 0)}, the program made {n}")
    for sym, n in counts.items():
        if sym not in expect:
            check(sym in SHIM_CALLS, f"{tag}: the shim called {sym} ({n}x)")
            if not timing_on:
                check(not sym.startswith("cuEvent") and sym != "cuStreamIsCapturing",
                      f"{tag}: timing off, yet the shim called {sym}")


def kernels(rep):
    return {k["name"]: k for k in rep["gpu"]["kernels"]}


# ---- every launch -------------------------------------------------------------------
# The fake GPU runs on the wall clock: a launching thread descheduled for tens of microseconds (a
# loaded CI machine, a sanitizer build) shortens what the shim can see of a starved kernel. The
# timing checks (medians, idle at submit, the estimate) get three runs to pass in one; the others
# must pass in every run.
# Both clocks: the cycle counter where the machine's clock source is the TSC, and the monotonic
# clock (WSLSHIM_CLOCK=mono, what the shim uses elsewhere, as on a CI machine whose clock source is
# kvm-clock). On the monotonic clock the shim and the fake GPU read the same clock, so an event is
# placed exactly where the fake ran it and a wrong bound on the clock mapping shows at once.
for clock, env in (("default", {}), ("mono", {"WSLSHIM_CLOCK": "mono"})):
    for attempt in range(3):
        timing_failures = []

        def tcheck(cond, msg):
            if not cond:
                timing_failures.append(msg)
                print(f"{clock} clock, attempt {attempt + 1}: timing:", msg)

        expect, plan, counts, stats, rep = run("every-" + clock, "1", env)
        driver_calls_unchanged("every", expect, counts, True)
        check(stats["capture_event_records"] == 0, f"events recorded into a capturing stream: {stats['capture_event_records']}")
        g = rep["gpu"]
        ks = kernels(rep)
        launched_outside_capture = QUEUED + STARVED + plan["k_ptsz"] + plan["k_unseen"]
        check(g["kernels_timed"] == launched_outside_capture,
              f"kernels_timed {g['kernels_timed']}, expected {launched_outside_capture}")
        check(g["graphs_timed"] == REPLAYS, f"graphs_timed {g['graphs_timed']}, expected {REPLAYS}")
        check(ks["k_graph"]["timed"] == 0, "a launch into a capturing stream was timed")
        want = {"k_small": K, "k_mid": 2 * K, "k_big": 4 * K, "k_sync": 2 * K, "k_ptsz": K, "k_unseen": K}
        for name, ns in want.items():
            k = ks[name]
            check(k["timed"] == plan[name], f"{name}: timed {k['timed']} of {plan[name]}")
            p50 = k["gpu_ns"]["p50"]
            tcheck(abs(p50 - ns) <= 0.02 * ns, f"{name}: median GPU time {p50} ns, simulated {ns}")
        tcheck(abs(g["graph_ns"]["p50"] - 8 * K) <= 0.02 * 8 * K, f"graph median {g['graph_ns']['p50']}, simulated {8 * K}")
        tcheck(ks["k_sync"]["idle_at_submit"] == STARVED, f"k_sync idle at submit {ks['k_sync']['idle_at_submit']}/{STARVED}")
        queued_idle = sum(ks[n]["idle_at_submit"] for n in ("k_small", "k_mid", "k_big"))
        # Only the first finds the GPU idle, unless the launching thread is descheduled longer than the
        # queue lasts (a loaded machine): allow a few.
        tcheck(queued_idle <= 6, f"queued launches idle at submit: {queued_idle} of {QUEUED} (only the first should be)")
        check(g["mapped"] == g["kernels_timed"] + g["graphs_timed"], f"mapped {g['mapped']} of {g['kernels_timed']}")
        est = sum(want[n] * plan[n] for n in want) + REPLAYS * 8 * K
        tcheck(abs(g["gpu_time_est_ns"] - est) <= 0.02 * est, f"estimated GPU time {g['gpu_time_est_ns']}, simulated {est}")
        tcheck(abs(g["gpu_time_est_ns"] - stats["gpu_busy_ns"]) <= 0.02 * stats["gpu_busy_ns"],
              f"estimated GPU time {g['gpu_time_est_ns']}, fake GPU busy {stats['gpu_busy_ns']}")
        if not timing_failures:
            break
    for msg in timing_failures:
        check(False, f"{clock} clock: {msg}")

proc = rep["processes"][0]["gpu_use"]
check(proc["device_total"] == 80 << 30, f"device_total {proc['device_total']}")

# ---- a long queue, then starved launches --------------------------------------------
# 1500 launches queued (about 175 ms of GPU work, the writer polls during it), each event query
# taking 50 us (as where every driver call crosses to the host): events finish while the writer's
# queries of one pass run. The bound on the clock mapping that such a pair gives must come from
# when its query returned: one taken from before the pass placed every later starved kernel early,
# and its start clamped to its launch, cut the k_sync median to 0-72 us of 100.
LONG = 1500
for attempt in range(3):
    timing_failures = []
    expect, plan, counts, stats, rep = run("long", "1", {"WSLSHIM_CLOCK": "mono", "FAKE_CUDA_QUERY_NS": "50000"},
                                           (LONG, STARVED, REPLAYS))
    driver_calls_unchanged("long", expect, counts, True)
    ks = kernels(rep)
    # The queue outgrows the event pool (1024 pairs per context): those launches go untimed. The
    # starved ones are timed once the writer has given pairs back, which a slow machine may not
    # have done for the first few: at least half, and the median of those.
    timed, p50 = ks["k_sync"]["timed"], ks["k_sync"]["gpu_ns"]["p50"]
    if 2 * timed < STARVED:
        timing_failures.append(f"long: k_sync timed {timed} of {STARVED}")
    if abs(p50 - 2 * K) > 0.02 * 2 * K:
        timing_failures.append(f"long: k_sync median GPU time {p50} ns, simulated {2 * K}")
    for msg in timing_failures:
        print(f"long, attempt {attempt + 1}: timing:", msg)
    if not timing_failures:
        break
for msg in timing_failures:
    check(False, msg)

# ---- one launch in 7 on average -----------------------------------------------------------
# Each function's first 3 launches are timed (coverage), then one launch in 7 at gaps drawn from
# [4, 10]: never into a capturing stream.
expect, plan, counts, stats, rep = run("seventh", "7")
driver_calls_unchanged("seventh", expect, counts, True)
check(stats["capture_event_records"] == 0, "seventh: events recorded into a capturing stream")
ks = kernels(rep)
for name in ("k_small", "k_mid", "k_big", "k_sync", "k_ptsz", "k_unseen"):
    check(ks[name]["timed"] >= min(3, plan[name]), f"seventh: {name} timed {ks[name]['timed']} of {plan[name]}: "
          "its first 3 launches are always timed")
check(ks["k_graph"]["timed"] == 0, "seventh: a launch into a capturing stream was timed")
check(min(3, REPLAYS) <= rep["gpu"]["graphs_timed"] <= REPLAYS, f"seventh: graphs_timed {rep['gpu']['graphs_timed']}")
launched = QUEUED + STARVED + plan["k_ptsz"] + plan["k_unseen"]
covered = 6 * 3  # six functions outside capture, 3 launches each
sampled = rep["gpu"]["kernels_timed"] - covered
check(launched / 10 - 2 <= sampled <= launched / 4 + 2,
      f"seventh: {sampled} launches sampled past the first 3 of each function, of {launched} (gaps of 4 to 10)")

# ---- a periodic step: no aliasing ---------------------------------------------------------
# 10 distinct kernels launched in turn, 1000 times, one launch in 10 timed on average: a fixed gap of
# 10 lands on the same kernel every time (the other nine never timed past their first 3), gaps drawn
# around 10 spread over all of them.
STEPS = 1000
expect, plan, counts, stats, rep = run("periodic", "10", None, (QUEUED, STARVED, REPLAYS, STEPS))
driver_calls_unchanged("periodic", expect, counts, True)
ks = kernels(rep)
per = {f"p{i}": ks[f"p{i}"]["timed"] for i in range(10)}
print("periodic: timed per kernel", per)
check(all(v >= 40 for v in per.values()), f"periodic: a kernel of the step timed fewer than 40 of {STEPS} times: {per}")
check(sum(per.values()) <= 2 * STEPS * 10 / 10 + 30, f"periodic: {sum(per.values())} timed, the rate is one in 10")

# ---- names: a function no hook saw named is named through the driver ----------------------------
check("k_unseen" in ks and ks["k_unseen"]["count"] == 4, f"k_unseen not named with 4 launches: {sorted(ks)}")
check(counts.get("cuFuncGetName", 0) == 1, f"cuFuncGetName asked {counts.get('cuFuncGetName', 0)} times, once wanted")
check(not any(n.startswith("wslshim_") for n in rep["api"]), "the shim's own name events counted as API calls")

# ---- off -----------------------------------------------------------------------------
expect, plan, counts, stats, rep = run("off", "off")
driver_calls_unchanged("off", expect, counts, False)
check(rep["gpu"]["kernels_timed"] == 0 and rep["gpu"]["graphs_timed"] == 0, "off: launches were timed")
check(rep["gpu"]["busy_estimate"] is None, "off: a busy estimate without timing")

print("gpu timing:", "FAIL" if failures else "ok")
sys.exit(1 if failures else 0)
