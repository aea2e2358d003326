#!/usr/bin/env python3
"""GPU check of the host-side bottleneck rules on real PyTorch programs.

    python3 tests/gpu/rules_torch.py --build BUILD --out OUTDIR [--steps N]

Records each workload under the shim (LD_PRELOAD, one trace per process in
OUTDIR/traces/<name>), prints the report's one-screen summary, and checks
which bottlenecks fire:

  mlp            MLP training loop (batch 256, width 4096), loss read once  none of the four
  mlp_item       the same with loss.item() every step                       sync_heavy
  mlp_nocache    mlp with PYTORCH_NO_CUDA_MEMORY_CACHING=1                  alloc_churn
  small_pageable many small (1 KiB) and some large (16 MiB) tensors from    small_transfers or
                 pageable memory copied to the GPU                          pageable_transfers; the
                                                                            copies classified pageable
  small_pinned   the same from pinned memory with non_blocking=True         no pageable_transfers; the
                                                                            copies classified pinned
  bf16_matmul    large bf16 matmuls                                         none of the four

The last line on stdout is a JSON verdict; OUTDIR/rules_torch.json holds it
with the reports' bottlenecks. Exit status: 0 all expectations met, 1 one
failed, 77 no GPU or no PyTorch.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

HOST_RULES = ["sync_heavy", "alloc_churn", "small_transfers", "pageable_transfers"]


# ---- the workloads (run as `rules_torch.py --workload NAME`) ----------------------------------
def workload(name, steps):
    import torch

    torch.manual_seed(0)
    dev = torch.device("cuda")
    if name in ("mlp", "mlp_item", "mlp_nocache"):
        # wide enough that the GPU has work queued when the host asks for the loss: a wait then
        # drains a real queue (with a tiny model the host is the bottleneck and a wait costs little)
        width = 4096
        model = torch.nn.Sequential(torch.nn.Linear(1024, width), torch.nn.ReLU(), torch.nn.Linear(width, width),
                                    torch.nn.ReLU(), torch.nn.Linear(width, width), torch.nn.ReLU(),
                                    torch.nn.Linear(width, 10)).to(dev)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        x = torch.randn(256, 1024, device=dev)
        y = torch.randint(0, 10, (256,), device=dev)
        total = 0.0
        running = torch.zeros((), device=dev)
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            if name == "mlp_item":
                total += loss.item()            # a host read of a GPU value every step
            else:
                running += loss.detach()
        torch.cuda.synchronize()
        result = total if name == "mlp_item" else running.item()
    elif name in ("mlp_small", "mlp_small_graph"):
        # a small-batch MLP forward step (inference): tiny kernels, launch-bound; the same step
        # captured once into a CUDA graph and replayed
        model = torch.nn.Sequential(*[m for _ in range(6) for m in (torch.nn.Linear(256, 256), torch.nn.ReLU())]).to(dev)
        x = torch.randn(8, 256, device=dev)
        torch.set_grad_enabled(False)
        running = torch.zeros((), device=dev)
        if name == "mlp_small":
            for _ in range(steps):
                running += model(x).sum()
        else:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                for _ in range(3):
                    model(x)
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = model(x).sum()
            for _ in range(steps):
                g.replay()
                running += out
        torch.cuda.synchronize()
        result = running.item()
    elif name in ("small_pageable", "small_pinned"):
        pin = name == "small_pinned"
        small = [torch.randn(256, pin_memory=pin) for _ in range(64)]          # 1 KiB each
        large = [torch.randn(4 << 20, pin_memory=pin) for _ in range(2)]       # 16 MiB each
        acc = torch.zeros(256, device=dev)
        big = torch.zeros(4 << 20, device=dev)
        for i in range(steps):
            for t in small:
                acc += t.to(dev, non_blocking=pin)
            if i % 10 == 0:
                big += large[(i // 10) % 2].to(dev, non_blocking=pin)
        torch.cuda.synchronize()
        result = float(acc.sum().item() + big[:1000].sum().item())
    elif name == "bf16_matmul":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        c = torch.empty_like(a)
        for _ in range(max(steps // 10, 20)):
            torch.matmul(a, b, out=c)
        torch.cuda.synchronize()
        result = float(c[0, :8].float().sum().item())
    else:
        raise SystemExit(f"unknown workload {name}")
    print(json.dumps({"workload": name, "result": result}))


# ---- the driver ---------------------------------------------------------------------------------
RUNS = [
    # name, extra environment, bottlenecks that must fire (any one of a tuple), that must not
    ("mlp_small", {}, ["launch_bound"], []),
    ("mlp_small_graph", {}, [], ["launch_bound"]),
    ("mlp", {}, [], HOST_RULES + ["launch_bound"]),
    ("mlp_item", {}, ["sync_heavy"], ["alloc_churn"]),
    ("mlp_nocache", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}, ["alloc_churn"], []),
    ("small_pageable", {}, [("small_transfers", "pageable_transfers")], []),
    ("small_pinned", {}, [], ["pageable_transfers"]),
    ("bf16_matmul", {}, [], HOST_RULES + ["launch_bound", "gpu_idle"]),
]


def gpu_available():
    p = subprocess.run([sys.executable, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 3)"],
                       capture_output=True, text=True)
    return p.returncode == 0, (p.stderr.strip().splitlines() or [""])[-1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build")
    ap.add_argument("--out")
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--workload")
    args = ap.parse_args()
    if args.workload:
        workload(args.workload, args.steps)
        return 0
    if not args.build or not args.out:
        ap.error("--build and --out are needed")
    ok, why = gpu_available()
    if not ok:
        print(f"SKIPPED: no CUDA GPU with PyTorch ({why or 'torch.cuda.is_available() is false'})")
        return 77
    build = os.path.abspath(args.build)
    out = os.path.abspath(args.out)
    shim = os.path.join(build, "lib", "libwslshim.so")
    report = os.path.join(build, "analyzer", "wslshim-report")
    for path in (shim, report):
        if not os.path.exists(path):
            print(f"{path}: not found (build first)", file=sys.stderr)
            return 2
    os.makedirs(out, exist_ok=True)

    verdict = {"ok": True, "runs": {}}
    details = {}
    for name, extra_env, must, must_not in RUNS:
        tdir = os.path.join(out, "traces", name)
        shutil.rmtree(tdir, ignore_errors=True)
        os.makedirs(tdir)
        env = dict(os.environ, **extra_env, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"))
        cmd = [sys.executable, os.path.abspath(__file__), "--workload", name, "--steps", str(args.steps)]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True)
        run = {"ok": True, "problems": []}
        if p.returncode != 0:
            run["ok"] = False
            run["problems"].append(f"workload exited {p.returncode}: {p.stderr[-800:]}")
            verdict["runs"][name] = run
            verdict["ok"] = False
            continue
        text = subprocess.run([report, "--color=never", tdir], capture_output=True, text=True).stdout
        summary = text.split("\nProcesses\n")[0]
        print(f"==== {name} {' '.join(f'{k}={v}' for k, v in extra_env.items())}\n{summary}\n", flush=True)
        rep = json.loads(subprocess.run([report, "--json", tdir], capture_output=True, text=True, check=True).stdout)
        found = {b["id"]: b for b in rep["bottlenecks"]}
        run["found"] = {k: {"severity": b["severity"], "time_lost_ns": b["time_lost_ns"]} for k, b in found.items()}
        run["wall_ns"] = rep["wall_ns"]
        for want in must:
            options = want if isinstance(want, tuple) else (want,)
            if not any(o in found for o in options):
                run["problems"].append(f"expected {' or '.join(options)}")
        if name == "mlp_small" and (not rep["bottlenecks"] or rep["bottlenecks"][0]["id"] != "launch_bound"):
            run["problems"].append("launch_bound is not the first bottleneck: "
                                   + ", ".join(b["id"] for b in rep["bottlenecks"]))
        for unwanted in must_not:
            if unwanted in found:
                run["problems"].append(f"{unwanted} fired: {found[unwanted]['summary']}")
        copies = rep["cuda_host"]["copies"]
        run["copies"] = {k: copies[k] for k in ("count", "small", "pageable", "pinned", "htod", "unknown_direction")}
        run["waits"] = {k: v["count"] for k, v in rep["cuda_host"]["waits"].items()}
        if name == "small_pageable" and copies["pageable"] < args.steps * 64:
            run["problems"].append(f"only {copies['pageable']} copies classified pageable "
                                   f"(the loop made {args.steps * 64} from pageable tensors)")
        if name == "small_pinned" and copies["pinned"] < args.steps * 64:
            run["problems"].append(f"only {copies['pinned']} copies classified pinned "
                                   f"(the loop made {args.steps * 64} from pinned tensors)")
        run["ok"] = not run["problems"]
        verdict["ok"] &= run["ok"]
        verdict["runs"][name] = run
        details[name] = {"bottlenecks": rep["bottlenecks"], "cuda_host": rep["cuda_host"],
                         "api": {k: {"calls": v["calls"], "mean_ns": v["mean_ns"]} for k, v in rep["api"].items()}}
    with open(os.path.join(out, "rules_torch.json"), "w") as f:
        json.dump({"verdict": verdict, "details": details}, f, indent=1)
    print(json.dumps(verdict))
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
