#!/usr/bin/env python3
"""Data-parallel training on ONE GPU under the shim: ranks over gloo, each with DataLoader workers.

    python3 tests/gpu/ddp_gloo_check.py --build BUILD --out OUTDIR [--nproc 2] [--workers 2]
                                        [--steps 1500] [--delay-ms 2]

torchrun starts --nproc ranks that share GPU 0 and train a small MLP with DistributedDataParallel
over the gloo backend (a host that lends one GPU can still run a multi-process job); each rank
takes its batches from a DataLoader of --workers worker processes (forked: each writes a trace of
its own), each step inside an NVTX "train_step" range; rank 1 sleeps --delay-ms a step. The job
runs without the shim and under it; the ranks' loss digests must match. wslshim-report over the
traces must find the ranks from their environment, count 1 + workers processes in each, read the
steady state again (a warm-up and start-up precede it) and give each rank its findings. Prints
one JSON result; exits 0 when every check passed, 1 when one failed, 77 without a GPU or PyTorch.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def worker(steps, workers, delay_ms):
    import time

    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo")
    torch.manual_seed(0)
    dev = torch.device("cuda", 0)
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(1024, 1024), torch.nn.ReLU()]
    model = DDP(torch.nn.Sequential(*layers, torch.nn.Linear(1024, 10)).to(dev), device_ids=[0])
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    class Batches(torch.utils.data.Dataset):
        # batch k of this rank, the same whichever worker makes it
        def __len__(self):
            return steps

        def __getitem__(self, k):
            g = torch.Generator().manual_seed(1234 + 1000003 * rank + k)
            return torch.randn(128, 1024, generator=g), torch.randint(0, 10, (128,), generator=g)

    batches = iter(torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=workers))
    digest = 0.0
    for step in range(steps):
        torch.cuda.nvtx.range_push("train_step")
        x, y = next(batches)
        if rank == 1:
            time.sleep(delay_ms / 1000.0)
        x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if step % 10 == 9:
            digest += float(loss.item())
        torch.cuda.nvtx.range_pop()
    torch.cuda.synchronize()
    print(json.dumps({"rank": rank, "digest": round(digest, 6)}), flush=True)
    dist.destroy_process_group()


def have_gpu():
    try:
        out = subprocess.run([sys.executable, "-c", "import torch; print(int(torch.cuda.is_available()))"],
                             capture_output=True, text=True, timeout=120)
        return out.returncode == 0 and out.stdout.strip() == "1"
    except subprocess.TimeoutExpired:
        return False


def torchrun(a, env):
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(a.nproc),
           os.path.abspath(__file__), "--worker", "--steps", str(a.steps), "--workers", str(a.workers),
           "--delay-ms", str(a.delay_ms)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    digests = {}
    for line in p.stdout.splitlines():
        try:
            d = json.loads(line)
            digests[d["rank"]] = d["digest"]
        except (ValueError, KeyError, TypeError):
            pass
    return p, digests


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build")
    ap.add_argument("--out")
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--delay-ms", type=float, default=2.0)
    ap.add_argument("--worker", action="store_true")
    a = ap.parse_args()
    if a.worker:
        worker(a.steps, a.workers, a.delay_ms)
        return 0
    if not a.build or not a.out:
        ap.error("--build and --out are required")
    if not have_gpu():
        print(json.dumps({"skip": "no GPU or no PyTorch"}))
        return 77
    shim = os.path.join(a.build, "lib", "libwslshim.so")
    report = os.path.join(a.build, "analyzer", "wslshim-report")
    traces = os.path.join(a.out, "ddp_gloo_traces")
    shutil.rmtree(traces, ignore_errors=True)
    os.makedirs(traces)
    failures = []

    def check(cond, msg):
        if not cond:
            failures.append(msg)
        return cond

    base = dict(os.environ)
    base.pop("LD_PRELOAD", None)
    plain, plain_digests = torchrun(a, base)
    check(plain.returncode == 0, f"torchrun without the shim exited {plain.returncode}: {plain.stderr[-2000:]}")
    env = dict(base, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"))
    traced, traced_digests = torchrun(a, env)
    check(traced.returncode == 0, f"torchrun under the shim exited {traced.returncode}: {traced.stderr[-2000:]}")
    check(len(plain_digests) == a.nproc and plain_digests == traced_digests,
          f"loss digests differ: plain {plain_digests} traced {traced_digests}")
    files = sorted(os.listdir(traces))
    # torchrun's agent, the ranks and their workers
    check(len(files) == 1 + a.nproc * (1 + a.workers), f"{len(files)} traces: {files}")
    rep = subprocess.run([report, "--json", traces], capture_output=True, text=True)
    result = {"digests": traced_digests, "traces": len(files)}
    if check(rep.returncode == 0, f"wslshim-report exited {rep.returncode}: {rep.stderr[-2000:]}"):
        j = json.loads(rep.stdout)
        ranks, dist, steady = j.get("ranks", []), j.get("distributed") or {}, j.get("steady_state") or {}
        result["ranks"] = [{k: r.get(k) for k in ("rank", "pid", "processes", "wall_ns")} |
                           {"steps": (r.get("step") or {}).get("count"),
                            "bottlenecks": [(b["id"], b["severity"]) for b in r.get("bottlenecks", [])]}
                           for r in ranks]
        result["steady_state"] = {k: steady.get(k) for k in ("known", "share_of_wall", "method", "findings_reread")}
        check(dist.get("rank_source") == "environment" and len(ranks) == a.nproc,
              f"{len(ranks)} ranks from {dist.get('rank_source')}; want {a.nproc} from the environment")
        check(all(r.get("processes") == 1 + a.workers for r in ranks),
              f"processes per rank {[r.get('processes') for r in ranks]}, want {1 + a.workers}")
        check(all((r.get("step") or {}).get("count") == a.steps for r in ranks),
              f"steps per rank {[(r.get('step') or {}).get('count') for r in ranks]}, want {a.steps}")
        check(steady.get("known") and steady.get("findings_reread"),
              f"the steady state was not read again: {result['steady_state']}")
        check(all(r.get("bottlenecks") for r in ranks), "a rank without findings")
    result["failures"] = failures
    print(json.dumps(result, indent=1))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
