#!/usr/bin/env python3
"""DDP over NCCL under the shim, with a straggler planted on purpose.

    python3 tests/gpu/ddp_check.py --build BUILD --out OUTDIR [--nproc 2] [--steps 100] [--delay-ms 50]

torchrun starts --nproc ranks (one GPU each, NCCL_NVLS_ENABLE=0) that train a
small MLP with DistributedDataParallel for --steps steps, each step inside an
NVTX "train_step" range; rank 1 sleeps --delay-ms in its data loading every
step. The job runs once without the shim and once under it (LD_PRELOAD,
WSLSHIM_GPU_TIMING=1: every launch timed); the ranks' loss digests must match.
Then wslshim-report over the traces must find the ranks from their
environment, name rank 1 as the straggler, and give rank 0's all-reduce kernels
the GPU time torch.profiler measures for them (rank 0 runs under it in the traced
run) within 15%; where that time is within 15% of what rank 1 slept (it measures
its sleeps), the ranks differ by the sleep alone and the report's time must be
within 15% of the sleep too. Prints the report's per-rank section and one JSON
result; exits 0 when every check passed, 1 when one failed, 77 with
fewer than 2 GPUs (or no PyTorch).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def worker(steps, delay_ms, emulate_rank=-1, emulate="", profile_rank0=False):
    import time

    # One rank under emulated costs (WSLSHIM_EMULATE, read when the shim loads): that rank's process
    # starts again with it set, before anything else happens in it.
    if emulate and int(os.environ.get("RANK", "-1")) == emulate_rank and not os.environ.get("WSLSHIM_EMULATE"):
        os.execve(sys.executable, [sys.executable] + sys.argv, dict(os.environ, WSLSHIM_EMULATE=emulate))

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    torch.manual_seed(0)
    dev = torch.device("cuda", local)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(2048, 2048), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers, torch.nn.Linear(2048, 10)).to(dev), device_ids=[local])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    gen = torch.Generator().manual_seed(1234 + rank)

    slept = 0

    def load_batch():
        # The data loading: rank 1 is slow on purpose (the straggler). What the sleep took is
        # measured: on a virtual machine a sleep of 2 ms can take several.
        nonlocal slept
        if rank == 1:
            t0 = time.perf_counter_ns()
            time.sleep(delay_ms / 1000.0)
            slept += time.perf_counter_ns() - t0
        return torch.randn(256, 2048, generator=gen), torch.randint(0, 10, (256,), generator=gen)

    prof = None
    if profile_rank0 and rank == 0:  # the independent measure of rank 0's all-reduce kernels (CUPTI)
        from torch.profiler import ProfilerActivity, profile
        prof = profile(activities=[ProfilerActivity.CUDA])
        prof.start()
    digest = 0.0
    for step in range(steps):
        torch.cuda.nvtx.range_push("train_step")
        x, y = load_batch()
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 9:
            digest += float(loss.item())
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    out = {"rank": rank, "digest": round(digest, 6), "slept_ns": slept}
    if prof is not None:
        prof.stop()
        ar = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and "AllReduce" in e.name]
        out["profiler_allreduce_kernels"] = len(ar)
        out["profiler_allreduce_ns"] = int(sum((e.time_range.end - e.time_range.start) * 1000.0 for e in ar))
    print(json.dumps(out), flush=True)
    dist.destroy_process_group()


def gpu_count():
    try:
        out = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.device_count())"],
                             capture_output=True, text=True, timeout=120)
        return int(out.stdout.strip() or 0) if out.returncode == 0 else -1
    except (subprocess.TimeoutExpired, ValueError):
        return 0


def torchrun(args, env):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(args.nproc),
           os.path.abspath(__file__), "--worker", "--steps", str(args.steps), "--delay-ms", str(args.delay_ms)]
    if args.emulate and "LD_PRELOAD" in env:
        cmd += ["--emulate-rank", str(args.emulate_rank), "--emulate", args.emulate]
    if "LD_PRELOAD" in env:
        cmd += ["--profile-rank0"]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    digests, slept = {}, {}
    for line in p.stdout.splitlines():
        try:
            d = json.loads(line)
            digests[d["rank"]] = d["digest"]
            slept[d["rank"]] = d.get("slept_ns", 0)
            if "profiler_allreduce_ns" in d:
                torchrun.profiler = d
        except (ValueError, KeyError, TypeError):
            pass
    torchrun.slept = slept
    return p, digests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build")
    ap.add_argument("--out")
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--delay-ms", type=float, default=50.0)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--emulate", default="", help="an emulation SPEC for one rank (WSLSHIM_EMULATE) under the shim")
    ap.add_argument("--emulate-rank", type=int, default=0)
    ap.add_argument("--profile-rank0", action="store_true", help="(worker) rank 0 under torch.profiler")
    a = ap.parse_args()
    if a.worker:
        worker(a.steps, a.delay_ms, a.emulate_rank, a.emulate, a.profile_rank0)
        return 0
    if not a.build or not a.out:
        ap.error("--build and --out are required")
    n = gpu_count()
    if n < 0:
        print(json.dumps({"skip": "no PyTorch"}))
        return 77
    if n < 2 or a.nproc < 2 or n < a.nproc:
        print(json.dumps({"skip": f"{n} GPUs; the check needs {max(a.nproc, 2)}"}))
        return 77
    shim = os.path.join(a.build, "lib", "libwslshim.so")
    report = os.path.join(a.build, "analyzer", "wslshim-report")
    traces = os.path.join(a.out, "ddp_traces")
    shutil.rmtree(traces, ignore_errors=True)
    os.makedirs(traces)
    failures = []

    def check(cond, msg):
        if not cond:
            failures.append(msg)
        return cond

    # NVLink multicast (NVLS) stays off: the lent multi-GPU hosts do not support it.
    base = dict(os.environ, NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1")
    base.pop("LD_PRELOAD", None)
    plain, plain_digests = torchrun(a, base)
    check(plain.returncode == 0, f"torchrun without the shim exited {plain.returncode}: {plain.stderr[-2000:]}")
    env = dict(base, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"), WSLSHIM_GPU_TIMING="1")
    traced, traced_digests = torchrun(a, env)
    check(traced.returncode == 0, f"torchrun under the shim exited {traced.returncode}: {traced.stderr[-2000:]}")
    check(len(plain_digests) == a.nproc and plain_digests == traced_digests,
          f"loss digests differ: plain {plain_digests} traced {traced_digests}")

    rep = subprocess.run([report, "--json", traces], capture_output=True, text=True)
    text = subprocess.run([report, traces], capture_output=True, text=True)
    chrome_path = os.path.join(a.out, "ddp_timeline.json")
    chrome = subprocess.run([report, "--chrome", chrome_path, traces], capture_output=True, text=True)
    result = {"plain_digests": plain_digests, "traced_digests": traced_digests}
    if check(rep.returncode == 0 and text.returncode == 0, f"wslshim-report failed: {rep.stderr} {text.stderr}"):
        section = text.stdout[text.stdout.find("Distributed run"):]
        section = section[:section.find("\nBottlenecks")] if "\nBottlenecks" in section else section
        print(section)
        j = json.loads(rep.stdout)
        ranks, dist = j.get("ranks", []), j.get("distributed")
        result["ranks"] = [{k: r.get(k) for k in ("rank", "pid", "gpu", "gpu_pci_bus_id", "wall_ns", "compute_ns",
                                                   "collective_ns", "wait_ns", "collectives", "step")} for r in ranks]
        result["distributed"] = dist
        # the merged report's phases per rank, and which processes ran emulated
        rank_of = {r["pid"]: r["rank"] for r in ranks}
        result["phases_per_rank"] = {
            str(rank_of[p["pid"]]): {x["name"]: x["duration_ns"] for x in p.get("phases", [])} | {
                "steady_method": p.get("steady_method"), "steps": p.get("steps"), "step_ns": p.get("step_ns")}
            for p in j.get("phases", []) if p["pid"] in rank_of and p.get("gpu")}
        result["emulated"] = {str(rank_of.get(p["pid"], p["pid"])): p.get("emulation") for p in j.get("processes", [])
                              if p.get("emulation")}
        if a.emulate:
            check(str(a.emulate_rank) in result["emulated"], f"rank {a.emulate_rank} not reported as emulated: "
                  f"{result['emulated']}")
        check(len(result["phases_per_rank"]) == a.nproc, f"phases for {len(result['phases_per_rank'])} ranks")
        if check(dist is not None, "no distributed section"):
            check(dist["world_size"] == a.nproc and len(ranks) == a.nproc,
                  f"world size {dist['world_size']}, {len(ranks)} ranks; want {a.nproc}")
            check(dist["rank_source"] == "environment", f"ranks from {dist['rank_source']}")
            st = dist.get("straggler")
            check(st is not None and st.get("rank") == 1, f"straggler {st}, want rank 1")
            r0 = next((r for r in ranks if r["rank"] == 0), None)
            # what rank 1 slept, as it measured it (the nominal steps x delay where it did not say)
            planted = torchrun.slept.get(1) or a.steps * a.delay_ms * 1e6
            result["planted_ns"], result["planted_nominal_ns"] = planted, a.steps * a.delay_ms * 1e6
            if check(r0 is not None, "no rank 0"):
                ar = r0["collectives"].get("all_reduce", {})
                check(ar.get("launches", 0) > 0, f"rank 0 ran no all-reduce kernel: {r0['collectives']}")
                # the wait is about steps x delay, less whatever rank 0 itself spent outside its GPU work
                check(r0["wait_ns"] >= 0.5 * planted, f"rank 0 waits {r0['wait_ns']} ns, planted {planted:.0f}")
                result["rank0_wait_vs_planted"] = r0["wait_ns"] / planted
                result["rank0_allreduce_gpu_vs_planted"] = ar.get("gpu_ns", 0) / planted
                # the independent measure: rank 0's all-reduce kernels under torch.profiler (CUPTI), in
                # the same traced run; the shim's time for them within 15% of it
                prof = getattr(torchrun, "profiler", None)
                if check(prof is not None and prof.get("profiler_allreduce_kernels", 0) > 0,
                         f"no torch.profiler figure for rank 0's all-reduce: {prof}"):
                    pns = prof["profiler_allreduce_ns"]
                    result["profiler_allreduce_ns"] = pns
                    result["rank0_allreduce_gpu_vs_profiler"] = ar.get("gpu_ns", 0) / pns if pns else None
                    check(abs(ar.get("gpu_ns", 0) - pns) <= 0.15 * pns,
                          f"rank 0 all-reduce GPU time {ar.get('gpu_ns')} ns not within 15% of torch.profiler's {pns}")
                    # issue 29's bar, where the run holds its premise (the ranks differ by the sleep
                    # alone: the profiler's all-reduce time within 15% of it): the shim's within 15% too
                    if abs(pns - planted) <= 0.15 * planted:
                        check(abs(ar.get("gpu_ns", 0) - planted) <= 0.15 * planted,
                              f"rank 0 all-reduce GPU time {ar.get('gpu_ns')} ns not within 15% of {planted:.0f}")
                    else:
                        result["planted_premise"] = "not held: rank 0's all-reduce under torch.profiler is " \
                                                    f"{pns / planted:.2f} x what rank 1 slept"

                check(ar.get("gpu_ns", 0) >= 0.5 * planted, f"rank 0 all-reduce GPU time {ar.get('gpu_ns')}")
            if st:
                result["wait_vs_planted"] = st["wait_mean_ns"] / planted
            check(any(b["id"] == "straggler" for b in j["bottlenecks"]), "no straggler bottleneck")
        if not ranks or not any(r["collective_ns"] for r in ranks):
            names = [k["name"][:80] for k in j.get("gpu", {}).get("kernels", [])[:15]]
            result["kernel_names"] = names  # why no collective was found
    if check(chrome.returncode == 0, f"--chrome failed: {chrome.stderr}"):
        with open(chrome_path) as f:
            events = json.load(f)["traceEvents"]
        pnames = [e["args"]["name"] for e in events if e.get("ph") == "M" and e.get("name") == "process_name"]
        for r in range(a.nproc):
            check(any(p.startswith(f"rank {r} (pid ") for p in pnames), f"timeline lacks rank {r}: {pnames}")
    result["failures"] = failures
    print(json.dumps(result, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
