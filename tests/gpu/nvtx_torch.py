#!/usr/bin/env python3
"""NVTX ranges of a PyTorch training loop, captured with nothing set.

    python3 tests/gpu/nvtx_torch.py --build BUILD --out OUTDIR [--steps 50]

A small MLP trains for --steps steps; each step is torch.cuda.nvtx.range_push
("step") with nested "forward", "backward" and "optimizer" ranges, plus a
range_start/range_end pair ended on another Python thread, a context-manager
range and a mark. The loop runs without the shim and under it (LD_PRELOAD only:
no NVTX variable is set); the outputs (loss digest, push/pop return values,
what os.environ holds) must be identical, and the report's nvtx section must
hold those names with exactly the counts the loop made. Prints one JSON result;
exits 0 when every check passed, 1 when one failed, 77 without a GPU.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys


def workload(steps):
    import threading

    try:
        import torch
    except ImportError:
        print(json.dumps({"skip": "no PyTorch"}))
        sys.exit(77)
    if not torch.cuda.is_available():
        print(json.dumps({"skip": "no GPU"}))
        sys.exit(77)
    nvtx = torch.cuda.nvtx
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256, device=dev)
    y = torch.randint(0, 10, (64,), device=dev)
    returns = []
    started = []
    have_start = hasattr(nvtx, "range_start") and hasattr(nvtx, "range_end")
    for _ in range(steps):
        returns.append(nvtx.range_push("step"))
        if have_start:
            started.append(nvtx.range_start("prefetch"))
        returns.append(nvtx.range_push("forward"))
        loss = torch.nn.functional.cross_entropy(model(x), y)
        returns.append(nvtx.range_pop())
        returns.append(nvtx.range_push("backward"))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        returns.append(nvtx.range_pop())
        returns.append(nvtx.range_push("optimizer"))
        opt.step()
        returns.append(nvtx.range_pop())
        returns.append(nvtx.range_pop())
    # Start/end ranges ended on another thread (the ids are the tool's; not compared).
    if have_start:
        t = threading.Thread(target=lambda: [nvtx.range_end(r) for r in started])
        t.start()
        t.join()
    with nvtx.range("eval"):
        with torch.no_grad():
            final = torch.nn.functional.cross_entropy(model(x), y).item()
    nvtx.mark("done")
    torch.cuda.synchronize()
    print(json.dumps({
        "steps": steps,
        "final_loss": round(final, 6),
        "push_pop_returns": sorted(set(returns)),
        "push_pop_calls": len(returns),
        "start_end": len(started),
        "environ_has_nvtx_path": "NVTX_INJECTION64_PATH" in os.environ,
        "torch": torch.__version__,
    }))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        workload(args.steps)
        return 0

    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    shim = os.path.join(build, "lib", "libwslshim.so")
    report = os.path.join(build, "analyzer", "wslshim-report")
    traces = os.path.join(out, "nvtx_torch_traces")
    shutil.rmtree(traces, ignore_errors=True)
    os.makedirs(traces)
    cmd = [sys.executable, os.path.abspath(__file__), "--child", "--build", build, "--out", out,
           "--steps", str(args.steps)]
    env = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"}
    result = {"checks": []}
    failed = 0

    def check(name, ok, detail):
        nonlocal failed
        result["checks"].append({"check": name, "ok": bool(ok), "detail": detail})
        failed += not ok

    plain = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if plain.returncode == 77:
        print(plain.stdout.strip().splitlines()[-1])
        return 77
    if plain.returncode != 0:
        print(json.dumps({"error": "workload failed without the shim", "stderr": plain.stderr[-3000:]}))
        return 1
    shim_env = dict(env, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"))
    traced = subprocess.run(cmd, env=shim_env, capture_output=True, text=True)
    if traced.returncode != 0:
        print(json.dumps({"error": "workload failed under the shim", "stderr": traced.stderr[-3000:]}))
        return 1
    a, b = json.loads(plain.stdout.strip().splitlines()[-1]), json.loads(traced.stdout.strip().splitlines()[-1])
    result["program"] = b
    check("output unchanged", a == b, f"without {a}, with {b}")
    check("environment unchanged", not b["environ_has_nvtx_path"], "os.environ has no NVTX_INJECTION64_PATH")

    rep_p = subprocess.run([report, "--json", traces], capture_output=True, text=True)
    if rep_p.returncode != 0:
        print(json.dumps({"error": "report failed", "stderr": rep_p.stderr[-3000:]}))
        return 1
    rep = json.loads(rep_p.stdout)
    ranges = {(r["kind"], r["domain"], r["name"]): r for r in rep["nvtx"]}
    result["nvtx"] = rep["nvtx"]
    result["nvtx_summary"] = rep["nvtx_summary"]
    n = args.steps
    want = {("push", None, "step"): dict(count=n, top_level=n, max_depth=0, unclosed=0),
            ("push", None, "forward"): dict(count=n, top_level=0, max_depth=1),
            ("push", None, "backward"): dict(count=n, top_level=0, max_depth=1),
            ("push", None, "optimizer"): dict(count=n, top_level=0, max_depth=1),
            ("push", None, "eval"): dict(count=1, top_level=1)}
    if b["start_end"]:
        want[("start", None, "prefetch")] = dict(count=b["start_end"], unclosed=0)
    for key, fields in want.items():
        r = ranges.get(key)
        if not r:
            check(f"range {key[2]}", False, "missing from the report")
            continue
        bad = {k: (r[k], v) for k, v in fields.items() if r[k] != v}
        check(f"range {key[2]}", not bad, f"count {r['count']}, total {r['total_ns']} ns"
              + (f"; got/want {bad}" if bad else ""))
    s = rep["nvtx_summary"]
    check("nvtx summary", s["unmatched_pops"] == 0 and s["unmatched_ends"] == 0 and s["unclosed"] == 0
          and s["lost"] == 0 and s["unnamed_ids"] == 0, json.dumps({k: v for k, v in s.items() if k != "marks_by_name"}))
    check("mark", {(m["domain"], m["name"]): m["count"] for m in s["marks_by_name"]} == {(None, "done"): 1},
          f"{s['marks_by_name']}")
    step = s.get("step") or {}
    check("step detected", step.get("name") == "step" and step.get("steps") == n, f"{step}")
    fwd, opt = ranges.get(("push", None, "forward")), ranges.get(("push", None, "optimizer"))
    check("launches attributed", bool(fwd and opt and fwd["launches"] > 0 and opt["launches"] > 0
                                      and step.get("launches_per_step", 0) > 0),
          f"forward {fwd and fwd['launches']}, optimizer {opt and opt['launches']}, per step "
          f"{step.get('launches_per_step')}")
    proc = step.get("process") or {}
    check("step process-wide figures", proc.get("steps") == n
          and proc.get("launches_per_step", -1) >= step.get("launches_per_step", 0) > 0,
          f"all threads {proc.get('launches_per_step')} launches per step, the step's thread "
          f"{step.get('launches_per_step')}")
    bwd = ranges.get(("push", None, "backward"))
    result["info"] = {"backward_launches_on_main_thread": bwd and bwd["launches"],
                      "launches_per_step_step_thread": step.get("launches_per_step"),
                      "launches_per_step_all_threads": proc.get("launches_per_step"),
                      "note": "PyTorch runs backward on its autograd thread: its launches count in the "
                              "process-wide step figures, not in the backward range's (docs/nvtx.md)"}
    result["ok"] = failed == 0
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "nvtx_torch.json"), "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps({"ok": result["ok"], "checks": result["checks"], "info": result["info"]}))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
