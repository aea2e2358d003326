#!/usr/bin/env python3
"""--project on a real GPU (docs/projection.md).

    project_check.py --build BUILD --out OUT

Records two PyTorch workloads under the shim (WSLSHIM_GPU_TIMING=10):
  mlp     a small MLP training loop: many tiny kernels, launch-bound
  matmul  8192^3 matmuls in bf16: long kernels, GPU-bound
then projects each onto the built-in `wsl2` profile and onto a calibration
file "slow" that is the native profile with launches 20 us dearer. Prints the
breakdowns and fails (exit 1) when a projection fails or gives nonsense:
  - the report exits non-zero, or has no projection / wall_ns_recorded != wall_ns;
  - any projection moves the wall time by more than launches x |launch
    difference| + the other causes' deltas (it cannot invent time);
  - onto "slow": the launch-bound loop must get slower by at least half of
    launches x 20 us; the GPU-bound loop by at most 25% of that (its GPU
    queue absorbs slower submissions);
  - onto wsl2: unknown figures named (sync_ns at least) and kept.
Writes OUT/project.json. Exit 77 without a GPU or PyTorch.
"""
import argparse
import json
import os
import subprocess
import sys

WORKLOAD = r'''
import sys, time
try:
    import torch
except ImportError:
    sys.exit(77)
if not torch.cuda.is_available():
    sys.exit(77)
mode = sys.argv[1]
dev = "cuda"
torch.manual_seed(0)
if mode == "mlp":
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 128),
                                torch.nn.ReLU(), torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(32, 64, device=dev)
    y = torch.randint(0, 10, (32,), device=dev)
    for step in range(1500):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        if step % 50 == 0:
            loss.item()
    torch.cuda.synchronize()
    print(float(loss))
else:
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    for i in range(60):
        c = a @ b
        if i % 10 == 9:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    print(float(c[0, 0]))
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shim = os.path.abspath(os.path.join(a.build, "lib", "libwslshim.so"))
    report = os.path.abspath(os.path.join(a.build, "analyzer", "wslshim-report"))
    os.makedirs(a.out, exist_ok=True)
    wl = os.path.join(a.out, "project_workload.py")
    with open(wl, "w") as f:
        f.write(WORKLOAD)
    # "slow": the native H200 figures (docs/platform-costs.md) with launches 20 us dearer.
    extra_launch = 20000
    slow = os.path.join(a.out, "slow.json")
    with open(slow, "w") as f:
        json.dump({"schema": 1, "platform": "slow-launch", "launch_ns": 4220 + extra_launch, "memcpy_ns": None,
                   "sync_ns": 1655, "alloc_ns": None, "free_ns": None,
                   "alloc_by_size": []}, f)
    res = {"checks": [], "runs": {}}
    failed = []

    def check(name, ok, detail):
        res["checks"].append({"name": name, "ok": bool(ok), "detail": detail})
        print(("PASS " if ok else "FAIL ") + name + ": " + detail, flush=True)
        if not ok:
            failed.append(name)

    for mode in ("mlp", "matmul"):
        d = os.path.join(a.out, "tr-" + mode)
        os.makedirs(d, exist_ok=True)
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"),
                   WSLSHIM_GPU_TIMING="10")
        p = subprocess.run([sys.executable, wl, mode], env=env, capture_output=True, text=True)
        if p.returncode == 77:
            print("SKIP: no GPU or no PyTorch")
            sys.exit(77)
        check(f"{mode}.runs", p.returncode == 0, f"exit {p.returncode} {p.stderr[-500:]}")
        if p.returncode != 0:
            continue
        for target in ("wsl2", slow):
            tname = "wsl2" if target == "wsl2" else "slow"
            q = subprocess.run([report, "--json", "--project", target, d], capture_output=True, text=True)
            check(f"{mode}.{tname}.report", q.returncode == 0, f"exit {q.returncode} {q.stderr.strip()}")
            if q.returncode != 0:
                continue
            doc = json.loads(q.stdout)
            pr = doc.get("projection")
            if not pr:
                check(f"{mode}.{tname}.projection", False, "no projection object")
                continue
            res["runs"][f"{mode}-{tname}"] = pr
            bd = pr["breakdown"]
            launches = bd["launch"]["calls"]
            print(f"{mode} -> {tname}: recorded {pr['wall_ns_recorded'] / 1e6:.1f} ms, projected "
                  f"{pr['wall_ns'] / 1e6:.1f} ms; launches {launches}; GPU {pr['gpu']}")
            for k, v in bd.items():
                print(f"    {k:11s} calls {v['calls']:8d} recorded {v['recorded_ns'] / 1e6:9.2f} ms "
                      f"projected {v['projected_ns'] / 1e6:9.2f} ms kept {v.get('kept_calls', '-')}")
            for u in pr["unknown_figures"]:
                print(f"    unknown: {u['figure']} ({u['calls']} calls)")
            check(f"{mode}.{tname}.wall_recorded", pr["wall_ns_recorded"] == doc["wall_ns"],
                  f"{pr['wall_ns_recorded']} vs {doc['wall_ns']}")
            delta = pr["wall_ns"] - pr["wall_ns_recorded"]
            launch_diff = abs((4220 + extra_launch if tname == "slow" else 3250) - 4220)
            other = sum(abs(v["delta_ns"]) for k, v in bd.items() if k not in ("launch", "sync"))
            bound = launches * launch_diff + other + 0.01 * pr["wall_ns_recorded"]
            check(f"{mode}.{tname}.bounded", abs(delta) <= bound,
                  f"wall moved {delta / 1e6:.2f} ms, at most {bound / 1e6:.2f} ms possible")
            if tname == "slow":
                full = launches * extra_launch
                if mode == "mlp":
                    check("mlp.slow.launch_bound_slower", delta >= 0.5 * full,
                          f"+{delta / 1e6:.1f} ms for {launches} launches x 20 us = {full / 1e6:.1f} ms")
                else:
                    check("matmul.slow.gpu_bound_barely", delta <= 0.25 * full + 0.02 * pr["wall_ns_recorded"],
                          f"+{delta / 1e6:.1f} ms against {full / 1e6:.1f} ms of dearer launches")
            else:
                names = [u["figure"] for u in pr["unknown_figures"]]
                check(f"{mode}.wsl2.unknown_named", "target wsl2: sync_ns" in names or bd["sync"]["calls"] == 0,
                      f"{names}")
    with open(os.path.join(a.out, "project.json"), "w") as f:
        json.dump(res, f, indent=1)
    if failed:
        print("FAILED: " + ", ".join(failed))
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
