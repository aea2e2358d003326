#!/usr/bin/env python3
"""PyTorch workloads for the GPU-timing checks (tests/gpu/timing_check.py).

    timing_workloads.py MODE [--profile OUT.json]

MODE: mix (kernels of 20 us and more: bf16 and fp32 matmuls, large
elementwise, softmax), starved (a 4096^3 bf16 matmul and an 8192^2 softmax,
each followed by a synchronize: the GPU idle at every launch, so the shim's
times rest on its clock mapping), launch_bound (thousands of tiny adds),
matmul_bound (8192^3 bf16 matmuls), graph (a small MLP captured into a CUDA
graph and replayed). Prints one JSON line with a checksum of the output. With
--profile (mix, starved) torch.profiler records the same loop and the median
CUPTI duration per kernel name goes to OUT.json. Exit 77 without torch or a GPU.
"""
import hashlib
import json
import statistics
import sys
import time


def profiled(body, n, prof_out):
    """body(n), under torch.profiler when prof_out is given (the whole loop, so
    both tools see the same kernels): the median CUPTI time per kernel name
    goes to prof_out."""
    import torch
    torch.cuda.synchronize()
    if not prof_out:
        return body(n)
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        out = body(n)
        torch.cuda.synchronize()
    per = {}
    for e in prof.events():
        if str(getattr(e, "device_type", "")).endswith("CUDA") and getattr(e, "device_time", 0) > 0:
            per.setdefault(e.name, []).append(e.device_time * 1000.0)  # us -> ns
    # the lower median (nearest rank), as the report computes it
    json.dump({k: {"median_ns": sorted(v)[(len(v) - 1) // 2], "mean_ns": statistics.fmean(v),
                   "count": len(v)} for k, v in per.items()}, open(prof_out, "w"), indent=1)
    return out


def main():
    try:
        import torch
    except Exception as exc:
        print(json.dumps({"skip": str(exc)}))
        sys.exit(77)
    if not torch.cuda.is_available():
        print(json.dumps({"skip": "no GPU"}))
        sys.exit(77)
    mode = sys.argv[1]
    prof_out = sys.argv[sys.argv.index("--profile") + 1] if "--profile" in sys.argv else None
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    dev = "cuda"
    h = hashlib.sha256()
    t0 = time.perf_counter()
    if mode == "mix":
        a16 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        a32 = torch.randn(2048, 2048, device=dev)
        big = torch.randn(64 << 20, device=dev)
        sm = torch.randn(8192, 8192, device=dev)

        def body(n):
            out = None
            for _ in range(n):
                x = a16 @ a16
                y = a32 @ a32
                z = big * 1.5 + 2.0
                s = torch.softmax(sm, dim=1)
                out = (x.float().sum() + y.sum() + z.sum() + s.sum())
            return out

        out = profiled(body, 30, prof_out)
        h.update(out.cpu().numpy().tobytes())
    elif mode == "starved":
        a16 = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        sm = torch.randn(8192, 8192, device=dev)

        def body(n):
            x = s = None
            for _ in range(n):
                x = a16 @ a16
                torch.cuda.synchronize()
                s = torch.softmax(sm, dim=1)
                torch.cuda.synchronize()
            return x.float().sum() + s.sum()  # once, after the loop

        body(3)
        out = profiled(body, 60, prof_out)
        h.update(out.cpu().numpy().tobytes())
    elif mode == "launch_bound":
        x = torch.zeros(256, device=dev)
        for _ in range(200):
            x = x + 1.0
        torch.cuda.synchronize()
        t0 = time.perf_counter()  # the timed loop alone
        for _ in range(3000):
            x = x + 1.0
        torch.cuda.synchronize()
        h.update(x.cpu().numpy().tobytes())
    elif mode == "matmul_bound":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        c = None
        for _ in range(50):
            c = a @ a
        torch.cuda.synchronize()
        h.update(c.float().sum().cpu().numpy().tobytes())
    elif mode == "graph":
        model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 512)).to(dev)
        static_in = torch.randn(64, 512, device=dev)
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                model(static_in)
        torch.cuda.current_stream().wait_stream(s)
        torch.set_grad_enabled(False)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_out = model(static_in)
        outs = []
        for i in range(100):
            static_in.copy_(torch.full((64, 512), 0.01 * i, device=dev))
            g.replay()
            outs.append(static_out.sum())
        torch.cuda.synchronize()
        eager = model(torch.full((64, 512), 0.99, device=dev)).sum()
        ok = torch.allclose(outs[-1], eager, rtol=1e-4)
        h.update(torch.stack(outs).cpu().numpy().tobytes())
        if not ok:
            print(json.dumps({"error": "graph replay differs from eager"}))
            sys.exit(1)
    else:
        print(json.dumps({"error": f"unknown mode {mode}"}))
        sys.exit(2)
    secs = time.perf_counter() - t0
    print(json.dumps({"mode": mode, "checksum": h.hexdigest()[:16], "secs": secs}))


if __name__ == "__main__":
    main()
