#!/usr/bin/env python3
"""Real CUDA workloads for the GPU tests and benchmarks.

    workloads.py NAME [--iters N] [--profile]

Prints one JSON line: the workload's name, iterations, a checksum of its
numeric output (so runs with and without the shim can be compared bit for
bit), the time of its timed loop, and with --profile the number of CUDA
kernels torch.profiler (CUPTI) saw inside the timed loop. Exit 77 when the
workload's framework or a GPU is missing (ctest's skip code).
"""
import argparse
import hashlib
import json
import sys
import time


def need(module):
    try:
        return __import__(module)
    except Exception as exc:  # not installed, or no GPU for it
        print(json.dumps({"skip": f"{module}: {exc}"}))
        sys.exit(77)


def digest(*tensors):
    h = hashlib.sha256()
    for t in tensors:
        h.update(t.detach().contiguous().cpu().numpy().tobytes())
    return h.hexdigest()[:16]


def torch_setup():
    torch = need("torch")
    if not torch.cuda.is_available():
        print(json.dumps({"skip": "torch sees no GPU"}))
        sys.exit(77)
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    return torch


REPEAT = 1
PROFILER_TOP_KERNEL = None


def run_timed(torch, body, iters, profile):
    """Runs body(iters) as the timed loop, under torch.profiler if asked; with
    --repeat K (no profiler) it runs K times and reports the fastest."""
    torch.cuda.synchronize()
    kernels = None
    if not profile and REPEAT > 1:
        best = None
        for _ in range(REPEAT):
            t0 = time.perf_counter()
            out = body(iters)
            torch.cuda.synchronize()
            secs = time.perf_counter() - t0
            best = secs if best is None else min(best, secs)
        return out, best, None
    t0 = time.perf_counter()
    if profile:
        from torch.profiler import ProfilerActivity, profile as prof
        with prof(activities=[ProfilerActivity.CUDA]) as p:
            out = body(iters)
            torch.cuda.synchronize()
        names = [e.name for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
        kernels = len(names)
        global PROFILER_TOP_KERNEL
        PROFILER_TOP_KERNEL = max(set(names), key=names.count) if names else None
    else:
        out = body(iters)
        torch.cuda.synchronize()
    return out, time.perf_counter() - t0, kernels


def elementwise(args):
    torch = torch_setup()
    x = torch.ones(1024, device="cuda")
    x = x * 1.0001 + 1  # warm-up: kernels loaded, allocator primed
    torch.cuda.synchronize()

    def body(n):
        y = x
        for _ in range(n):
            y = y * 1.0001 + 1
        return y

    out, secs, kernels = run_timed(torch, body, args.iters, args.profile)
    return {"checksum": digest(out), "loop_s": secs, "profiler_kernels": kernels}


def pageable_copy(args):
    """Host-to-GPU copies from pageable memory, 64 KiB each: every copy is a
    hooked driver call (staged through the driver's pinned buffer, synchronous
    to the host), with a small kernel reading it so the copy is used."""
    torch = torch_setup()
    host = torch.arange(16384, dtype=torch.float32)  # 64 KiB, pageable
    acc = torch.zeros(16384, device="cuda")
    acc += host.to("cuda")  # warm-up
    torch.cuda.synchronize()

    def body(n):
        a = acc
        for _ in range(n):
            a = a + host.to("cuda")
        return a

    out, secs, kernels = run_timed(torch, body, args.iters, args.profile)
    return {"checksum": digest(out), "loop_s": secs, "profiler_kernels": kernels}


def square_matmul(args, n, dtype):
    torch = torch_setup()
    a = torch.randn(n, n, device="cuda", dtype=dtype)
    b = torch.randn(n, n, device="cuda", dtype=dtype)
    c = a @ b
    torch.cuda.synchronize()

    def body(k):
        out = c
        for _ in range(k):
            out = a @ b
        return out

    out, secs, kernels = run_timed(torch, body, args.iters, args.profile)
    return {"checksum": digest(out), "loop_s": secs, "profiler_kernels": kernels}


def matmul(args):
    return square_matmul(args, 2048, None)


def bf16_matmul(args):
    import torch
    return square_matmul(args, 8192, torch.bfloat16)


def mlp(args):
    torch = torch_setup()
    nn = torch.nn
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = torch.randn(64, 256, device="cuda")
    target = torch.randint(0, 10, (64,), device="cuda")
    losses = []

    def step():
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(data), target)
        loss.backward()
        opt.step()
        return loss

    step()
    torch.cuda.synchronize()

    def body(n):
        for i in range(n):
            loss = step()
            if args.item_every and i % args.item_every == 0:
                losses.append(loss.item())
        return torch.cat([p.detach().flatten() for p in model.parameters()])

    out, secs, kernels = run_timed(torch, body, args.iters, args.profile)
    return {"checksum": digest(out), "loop_s": secs, "profiler_kernels": kernels, "item_calls": len(losses),
            "last_loss": losses[-1] if losses else None}


def graph_replay(args):
    torch = torch_setup()
    x = torch.ones(1024, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            y = x * 2 + 1
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = x
        for _ in range(20):
            y = y * 1.0001 + 1
    torch.cuda.synchronize()

    def body(n):
        for _ in range(n):
            g.replay()
        return y

    out, secs, kernels = run_timed(torch, body, args.iters, args.profile)
    return {"checksum": digest(out), "loop_s": secs, "profiler_kernels": kernels}


def triton_add(args):
    torch = torch_setup()
    triton = need("triton")
    import triton.language as tl

    @triton.jit
    def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

    n = 1 << 20
    x = torch.randn(n, device="cuda")
    y = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = (triton.cdiv(n, 1024),)
    add_kernel[grid](x, y, out, n, BLOCK=1024)  # compile outside the loop
    torch.cuda.synchronize()

    def body(k):
        for _ in range(k):
            add_kernel[grid](x, y, out, n, BLOCK=1024)
        return out

    res, secs, kernels = run_timed(torch, body, args.iters, args.profile)
    return {"checksum": digest(res), "loop_s": secs, "profiler_kernels": kernels}


def cupy_elementwise(args):
    cp = need("cupy")
    try:
        x = cp.arange(1 << 20, dtype=cp.float32)
        y = x * 2 + 1
        cp.cuda.Device().synchronize()
    except Exception as exc:
        print(json.dumps({"skip": f"cupy: {exc}"}))
        sys.exit(77)
    t0 = time.perf_counter()
    for _ in range(args.iters):
        y = y * 1.0001 + 1
    cp.cuda.Device().synchronize()
    secs = time.perf_counter() - t0
    return {"checksum": hashlib.sha256(cp.asnumpy(y).tobytes()).hexdigest()[:16], "loop_s": secs,
            "profiler_kernels": None}


def memory(args):
    """Allocation pattern with a known peak: torch's caching allocator takes
    segments from the driver (cuMemAlloc); its reserved peak is what the shim
    should see as the peak of live device bytes."""
    torch = torch_setup()
    keep = []
    for mib in (64, 256, 1024, 2048, 128):
        keep.append(torch.empty(mib << 20, dtype=torch.uint8, device="cuda"))
    del keep[2]
    torch.cuda.empty_cache()  # the 1 GiB segment goes back to the driver (cuMemFree)
    a = torch.randn(4096, 4096, device="cuda")
    b = a @ a
    big = torch.empty(3 << 30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    out = b.sum()
    del big
    return {"checksum": digest(out.reshape(1)), "loop_s": 0.0, "profiler_kernels": None,
            "max_memory_reserved": torch.cuda.max_memory_reserved(),
            "max_memory_allocated": torch.cuda.max_memory_allocated()}


WORKLOADS = {
    "memory": memory,
    "elementwise": elementwise,
    "pageable_copy": pageable_copy,
    "matmul": matmul,
    "bf16_matmul": bf16_matmul,
    "mlp": mlp,
    "graph_replay": graph_replay,
    "triton_add": triton_add,
    "cupy_elementwise": cupy_elementwise,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("name", choices=sorted(WORKLOADS))
    ap.add_argument("--iters", type=int, default=100)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--item-every", type=int, default=10, help="mlp: loss.item() every N steps (0: never)")
    ap.add_argument("--repeat", type=int, default=1, help="run the timed loop K times, report the fastest")
    args = ap.parse_args()
    global REPEAT
    REPEAT = args.repeat
    result = WORKLOADS[args.name](args)
    result.update({"workload": args.name, "iters": args.iters, "profiler_top_kernel": PROFILER_TOP_KERNEL})
    print(json.dumps(result))


if __name__ == "__main__":
    main()
