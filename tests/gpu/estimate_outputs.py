#!/usr/bin/env python3
"""One real trace, every output that shows GPU time: the report's estimate (gpu.gpu_time_est_ns)
against the sum of --chrome's kernel slices (timed and estimated) and --project's GPU time.

    estimate_outputs.py REPORT TRACE_DIR
"""
import json, subprocess, sys
rep, d = sys.argv[1], sys.argv[2]
j = json.loads(subprocess.run([rep, "--json", d], capture_output=True, text=True, check=True).stdout)
g = j["gpu"]
ch = json.loads(subprocess.run([rep, "--chrome", "-", d], capture_output=True, text=True, check=True).stdout)
evs = ch["traceEvents"] if isinstance(ch, dict) else ch
timed = sum(e.get("dur", 0) for e in evs if e.get("cat") == "kernel") * 1000
est = sum(e.get("dur", 0) for e in evs if e.get("cat") == "kernel_estimated") * 1000
pj = json.loads(subprocess.run([rep, "--project", "native", "--json", d], capture_output=True, text=True,
                               check=True).stdout)
print(json.dumps({"report_est_ms": g["gpu_time_est_ns"] / 1e6, "pair_overhead_ns": g["pair_overhead_ns"],
                  "chrome_timed_ms": timed / 1e6, "chrome_estimated_ms": est / 1e6,
                  "chrome_sum_ms": (timed + est) / 1e6,
                  "project_gpu": pj.get("projection", pj).get("gpu") if isinstance(pj, dict) else None}, indent=1)[:3000])
