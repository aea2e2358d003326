#!/usr/bin/env python3
"""The GPU time estimate per launch configuration, against the fake driver's simulated GPU.

  gpu_config_test.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR

CLIENT is client_configs: one function, k_sizes, launched per step once with 40
blocks (cuLaunchKernelEx) and 9 times with 4 (cuLaunchKernel); on the fake GPU a
kernel of g blocks takes g * FAKE_CUDA_KERNEL_NS. The true GPU time is known
from the plan (and the fake's own busy time).

- WSLSHIM_GPU_TIMING=1000000: only each function's first launches are timed
  (the shim's coverage): one of 40 blocks and two of 4. A mean over the
  function's timed launches makes every launch 16 blocks long (+110%); per
  (function, grid, block) the estimate must be within 3% of the truth.
- WSLSHIM_GPU_TIMING=1: every launch timed, within 3% as well.
The fake GPU runs on the wall clock: each setting gets three runs to pass in one.
"""
import json
import os
import subprocess
import sys

SHIM, REPORT, CLIENT, LIBDIR, WORK = sys.argv[1:6]
K = 20000  # ns per block
STEPS, BIG, SMALL, PER_STEP = 100, 40, 4, 9
failures = []


def run(tag, timing):
    d = os.path.join(WORK, tag)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, FAKE_CUDA_KERNEL_NS=str(K),
               FAKE_CUDA_STATS=os.path.join(d, "stats.json"), WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"),
               WSLSHIM_GPU_TIMING=timing, FAKE_CUDA_PROC_ALIASES="0")
    p = subprocess.run([CLIENT, str(STEPS), str(BIG), str(SMALL), str(PER_STEP)], env=env, capture_output=True,
                       text=True)
    if p.returncode != 0:
        return f"client exit {p.returncode}: {p.stderr.strip()}", None, None
    stats = json.load(open(os.path.join(d, "stats.json")))
    traces = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".trace.zst")]
    r = subprocess.run([REPORT, "--json"] + traces, capture_output=True, text=True)
    if r.returncode != 0:
        return f"report exit {r.returncode}: {r.stderr.strip()}", None, None
    return None, stats, json.loads(r.stdout)


truth = STEPS * (BIG + PER_STEP * SMALL) * K
launches = STEPS * (1 + PER_STEP)
for tag, timing, timed in (("first-launches", "1000000", 3), ("every", "1", launches)):
    errors = []
    for attempt in range(3):
        err, stats, rep = run(tag, timing)
        errors = [err] if err else []
        if not err:
            ks = {k["name"]: k for k in rep["gpu"]["kernels"]}
            k = ks.get("k_sizes")
            if not k:
                errors.append("no k_sizes in the report's kernels")
            else:
                if k["count"] != launches:
                    errors.append(f"k_sizes: {k['count']} launches, expected {launches}")
                if k["timed"] != timed:
                    errors.append(f"k_sizes: {k['timed']} timed, expected {timed}")
                est = k["gpu_time_est_ns"]
                print(f"{tag}, attempt {attempt + 1}: estimate {est / 1e6:.3f} ms, truth {truth / 1e6:.3f} ms "
                      f"({100.0 * (est - truth) / truth:+.2f}%), fake GPU busy {stats.get('gpu_busy_ns', 0) / 1e6:.3f} ms")
                if abs(est - truth) > 0.03 * truth:
                    errors.append(f"k_sizes: estimated {est} ns, truth {truth} ns (more than 3% apart)")
                if abs(rep["gpu"]["gpu_time_est_ns"] - truth) > 0.03 * truth:
                    errors.append(f"gpu.gpu_time_est_ns {rep['gpu']['gpu_time_est_ns']}, truth {truth}")
        if not errors:
            break
        for e in errors:
            print(f"{tag}, attempt {attempt + 1}: {e}")
    failures += [f"{tag}: {e}" for e in errors]

if failures:
    print(f"FAILED: {len(failures)} check(s)")
    sys.exit(1)
print("ok")
