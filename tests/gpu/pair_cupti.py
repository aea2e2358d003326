#!/usr/bin/env python3
# Under the shim with every launch timed (WSLSHIM_GPU_TIMING=1) AND torch.profiler on: per kernel name,
# the shim's GPU time (sum of timed durations) against CUPTI's, with the idle-at-submit share.
# Usage: python3 pair_cupti.py run NAME OUTJSON      (run under the shim)
#        python3 pair_cupti.py cmp OUTJSON REPORT_JSON
import json, sys, os, importlib.util
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("cc", os.path.join(here, "coverage_check.py"))
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)


def profiled_kernels(name):
    """Runs workload `name` of coverage_check.py with torch.profiler on; its GPU kernels (no memcpy,
    memset or user annotation) as (name, start us, end us), in the profiler's order."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    d = cc.Dev(torch, False)
    torch.empty(1, device=d.device)
    prof = profile(activities=[ProfilerActivity.CUDA]); prof.start()
    torch.manual_seed(0); torch.cuda.manual_seed_all(0)
    step = cc.build_step(name, torch, d.device)
    running = torch.zeros((), device=d.device)
    cfg = cc.WORKLOADS[name]
    for i in range(cfg["warmup"] + cfg["steps"]):
        running += step().detach()
    d.sync(); prof.stop()
    out = []
    for e in prof.events():
        if e.device_type != torch.autograd.DeviceType.CUDA or getattr(e, "is_user_annotation", False):
            continue
        if e.name.startswith("Memcpy") or e.name.startswith("Memset"):
            continue
        out.append((e.name, e.time_range.start, e.time_range.end))
    return out


if __name__ == "__main__" and sys.argv[1] == "run":
    name, out = sys.argv[2], sys.argv[3]
    per = {}
    for n, a, b in profiled_kernels(name):
        p = per.setdefault(n, [0, 0.0]); p[0] += 1; p[1] += (b - a) * 1000
    json.dump(per, open(out, "w"))
elif __name__ == "__main__":
    per = json.load(open(sys.argv[2])); rep = json.load(open(sys.argv[3]))
    ks = rep["gpu"]["kernels"]
    norm = {cc.norm_name(n): v for n, v in per.items()}
    rows = []
    for k in ks:
        n = cc.norm_name(k["name"])
        m = norm.get(n)
        if not m:
            cand = [v for nn, v in norm.items() if nn.startswith(n[:60]) or n.startswith(nn[:60])]
            m = cand[0] if len(cand) == 1 else None
        if not m or not k.get("timed"):
            continue
        shim_ns = k.get("gpu_time_est_ns") or 0
        rows.append((k["name"][:60], k["count"], k["timed"], m[0], shim_ns / 1e3, m[1] / 1e3, k.get("idle_at_submit", 0)))
    print("kernel | launches | timed | cupti n | shim us | cupti us | over per launch us | idle share")
    tot_s = tot_c = 0
    for r in sorted(rows, key=lambda r: -r[5]):
        over = (r[4] - r[5]) / r[1] if r[1] else 0
        tot_s += r[4]; tot_c += r[5]
        print(f"{r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]:.0f} | {r[5]:.0f} | {over:+.2f} | {r[6]/max(r[2],1):.2f}")
    print(f"total shim {tot_s/1e3:.2f} ms cupti {tot_c/1e3:.2f} ms")
