#!/usr/bin/env python3
"""The GPU time estimate in each --gpu-pair-correction mode against CUPTI, on traces kept from GPU runs
(no GPU needed).

    python3 tests/gpu/estimate_modes.py REPORT OOS_DIR [COVERAGE_DIR ...]

REPORT: a wslshim-report binary. OOS_DIR: what tests/gpu/estimate_oos.sh archived (idle/NAME/{trace,
cupti.json}: every launch timed, CUPTI's kernels of the same run; cov/{coverage.json,traces/NAME}:
default sampling, CUPTI from a run without the shim). COVERAGE_DIR: more coverage_check.py output
folders (coverage.json and the traces by workload name beside it). Prints the error of each mode's
gpu.gpu_time_est_ns against CUPTI's kernel time per trace, then the worst and the mean |error|.
"""
import json
import os
import subprocess
import sys

MODES = ["fixed", "split", "queued", "none"]


def estimate(report, trace, mode):
    p = subprocess.run([report, "--gpu-pair-correction=" + mode, "--json", trace], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s: %s" % (trace, p.stderr.strip()))
    return json.loads(p.stdout)["gpu"]["gpu_time_est_ns"]


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    report, oos = sys.argv[1], sys.argv[2]
    rows = []
    idle = os.path.join(oos, "idle")
    for w in sorted(os.listdir(idle)) if os.path.isdir(idle) else []:
        cupti = json.load(open(os.path.join(idle, w, "cupti.json")))
        total = sum((b - a) * 1000.0 for v in cupti.values() for a, b in v)
        rows.append(("every launch timed, same run: " + w, os.path.join(idle, w, "trace"), total))
    for d in [os.path.join(oos, "cov")] + sys.argv[3:]:
        cov = os.path.join(d, "coverage.json")
        if not os.path.exists(cov):
            continue
        for r in json.load(open(cov))["results"]:
            tr = os.path.join(d, "traces", r["workload"])
            if not os.path.isdir(tr):
                tr = os.path.join(d, r["workload"])
            rows.append(("default sampling, %s: %s" % (os.path.basename(os.path.normpath(d)), r["workload"]), tr,
                         r["prof_kernel_ns"]))
    print("| trace | CUPTI ms | " + " | ".join(MODES) + " |")
    print("|---|---:|" + "---:|" * len(MODES))
    worst, total_abs = dict.fromkeys(MODES, 0.0), dict.fromkeys(MODES, 0.0)
    for name, trace, cupti in rows:
        errs = [100.0 * (estimate(report, trace, m) / cupti - 1) for m in MODES]
        for m, e in zip(MODES, errs):
            worst[m] = max(worst[m], abs(e))
            total_abs[m] += abs(e)
        print("| %s | %.1f | %s |" % (name, cupti / 1e6, " | ".join("%+.1f%%" % e for e in errs)))
    if rows:
        print("| worst \\|error\\| | | %s |" % " | ".join("%.1f%%" % worst[m] for m in MODES))
        print("| mean \\|error\\| | | %s |" % " | ".join("%.1f%%" % (total_abs[m] / len(rows)) for m in MODES))


if __name__ == "__main__":
    main()
