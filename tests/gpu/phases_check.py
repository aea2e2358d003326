#!/usr/bin/env python3
"""Phases and top findings of compiled and op-by-op programs (issue 23, Show: "The phases and top
finding of a torch.compile program, a JAX op-by-op loop and the H200 sample").

    python3 tests/gpu/phases_check.py --build BUILD --out OUTDIR [--sample DIR]... [--only NAME[,NAME]]
                                      [--no-workloads] [--timeout 600]
    python3 tests/gpu/phases_check.py --render OUTDIR/phases.json       (the summary again, no GPU)

Each workload runs once under the shim (LD_PRELOAD=BUILD/lib/libwslshim.so, one trace per process
in OUTDIR/traces/NAME, default sampling), then `wslshim-report --json` (and the text report) over
its traces:

  compile_default    torch.compile(model) of a small MLP (512-1024-1024-10, ReLU), Adam, batch 256,
                     200 training steps, no NVTX; fresh empty TORCHINDUCTOR_CACHE_DIR and
                     TRITON_CACHE_DIR, so compilation really happens
  compile_reduce     the same with torch.compile(model, mode="reduce-overhead") (CUDA graphs)
  jax_op_by_op       JAX: x = f(x), f = jax.jit(lambda x: x * 1.0001 + 1), a 1024-float array,
                     20,000 dispatches from a Python loop, then block_until_ready
  jax_fori_loop      its fix: the same 20,000 updates as one jax.jit over lax.fori_loop
  cupy_loop          CuPy: x = x * 1.0001 + 1 on a 1024-float array, 20,000 iterations

(JAX runs with XLA_PYTHON_CLIENT_PREALLOCATE=false.) --sample DIR (repeatable) adds an existing
trace folder (tests/demo/sample, say): its report is read the same way; with --no-workloads only the
samples are read (no GPU needed).

For each: wall time, the main process's phases (name and duration), steady_method, steps and
step_ns, warm-up module loads, compile processes, and the top 3 findings (id, severity, time lost,
wall share, steady share, the summary's first 150 characters). Everything goes to
OUTDIR/phases.json, a markdown summary to OUTDIR/phases.md (also printed), the reports to
OUTDIR/reports/NAME.json and NAME.txt. The last stdout line is a JSON verdict.

It is an observation run, nothing is asserted beyond "the program ran and the report exited 0".
Exit status: 0 all ran, 1 a program or the report failed, 2 usage or a missing build, 77 no GPU or
no PyTorch (the samples, if any, are still read first). A workload whose package (JAX with a GPU
backend, CuPy) is missing is skipped, not failed.

Workloads run as `phases_check.py --workload NAME` and print one JSON line last.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

from harness import Failed, last_json, last_line, run_prog, tail

ITERS = 20000                 # JAX and CuPy loop iterations
COMPILE_STEPS = 200           # torch.compile training steps
JAX_ENV = {"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}

WORKLOADS = {
    "compile_default": {"what": "torch.compile(model) (default mode), small MLP, Adam, %d training steps, "
                                "cold Inductor/Triton caches" % COMPILE_STEPS, "fresh_caches": True},
    "compile_reduce": {"what": "torch.compile(model, mode=\"reduce-overhead\"), small MLP, Adam, %d training "
                               "steps, cold Inductor/Triton caches" % COMPILE_STEPS, "fresh_caches": True},
    "jax_op_by_op": {"what": "JAX: x = jax.jit(lambda x: x * 1.0001 + 1)(x) from a Python loop, %d times, "
                             "1024 floats" % ITERS, "env": JAX_ENV},
    "jax_fori_loop": {"what": "JAX: the same %d updates as one jax.jit over lax.fori_loop" % ITERS, "env": JAX_ENV},
    "cupy_loop": {"what": "CuPy: x = x * 1.0001 + 1, %d times, 1024 floats" % ITERS},
}
ORDER = ["compile_default", "compile_reduce", "jax_op_by_op", "jax_fori_loop", "cupy_loop"]
CACHE_VARS = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton"}
TOP = 3


def log(msg):
    print("[phases_check] " + msg, file=sys.stderr, flush=True)


def skip(why):
    print(json.dumps({"skip": why}))
    sys.exit(77)


# ---- the workloads (run as `phases_check.py --workload NAME`) -------------------------------------
def wl_compile(mode, steps):
    try:
        import torch
    except ImportError as e:
        skip("no PyTorch (%s)" % e)
    if not torch.cuda.is_available():
        skip("torch sees no GPU")
    nn = torch.nn
    torch.manual_seed(0)
    dev = torch.device("cuda")
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10)).to(dev)
    cmodel = torch.compile(model) if mode is None else torch.compile(model, mode=mode)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(256, 512, device=dev)
    y = torch.randint(0, 10, (256,), device=dev)
    mark = None
    if mode == "reduce-overhead":
        mark = getattr(getattr(torch, "compiler", None), "cudagraph_mark_step_begin", None)
    running = torch.zeros((), device=dev)
    t0 = time.perf_counter()
    for i in range(steps):
        if mark is not None:
            mark()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(cmodel(x), y)
        loss.backward()
        opt.step()
        running += loss.detach()
        if i == 0:
            torch.cuda.synchronize()
            log("first step (compilation) %.1f s" % (time.perf_counter() - t0))
        elif (i + 1) % 50 == 0:
            log("step %d/%d" % (i + 1, steps))
    torch.cuda.synchronize()
    return float(running.item())


def wl_jax(fori, iters):
    try:
        import jax
        import jax.numpy as jnp
    except Exception as e:
        skip("no JAX (%s: %s)" % (type(e).__name__, e))
    backend = jax.default_backend()
    if backend not in ("gpu", "cuda"):
        skip("JAX has no GPU backend (default backend %s)" % backend)
    x = jnp.zeros((1024,), dtype=jnp.float32)
    if not fori:
        f = jax.jit(lambda v: v * 1.0001 + 1)
        for i in range(iters):
            x = f(x)
            if (i + 1) % 5000 == 0:
                log("dispatch %d/%d" % (i + 1, iters))
    else:
        g = jax.jit(lambda v: jax.lax.fori_loop(0, iters, lambda i, u: u * 1.0001 + 1, v))
        x = g(x)
    x.block_until_ready()
    return float(x[0])


def wl_cupy(iters):
    try:
        import cupy as cp
    except Exception as e:
        skip("no CuPy (%s: %s)" % (type(e).__name__, e))
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            skip("CuPy sees no GPU")
    except cp.cuda.runtime.CUDARuntimeError as e:
        skip("CuPy sees no GPU (%s)" % e)
    x = cp.zeros(1024, dtype=cp.float32)
    for i in range(iters):
        x = x * 1.0001 + 1
        if (i + 1) % 5000 == 0:
            log("iteration %d/%d" % (i + 1, iters))
    cp.cuda.Device().synchronize()
    return float(x[0])


def workload(name, steps, iters):
    t0 = time.perf_counter()
    if name == "compile_default":
        result = wl_compile(None, steps)
    elif name == "compile_reduce":
        result = wl_compile("reduce-overhead", steps)
    elif name == "jax_op_by_op":
        result = wl_jax(False, iters)
    elif name == "jax_fori_loop":
        result = wl_jax(True, iters)
    elif name == "cupy_loop":
        result = wl_cupy(iters)
    else:
        raise SystemExit("unknown workload %s" % name)
    print(json.dumps({"workload": name, "result": result, "body_s": round(time.perf_counter() - t0, 3)}))


# ---- reading a report (no GPU needed) -------------------------------------------------------------
def main_process(rep):
    phases = rep.get("phases") or []
    main = next((p for p in phases if p.get("main")), None)
    if main is None:
        gpu = [p for p in phases if p.get("gpu")]
        if gpu:
            main = max(gpu, key=lambda p: p.get("launches") or 0)
    return main


def summarize(rep):
    """The figures of one report that the summary shows."""
    main = main_process(rep)
    ss = rep.get("steady_state") or {}
    g = rep.get("gpu") or {}
    phases = rep.get("phases") or []
    s = {
        "wall_ns": rep.get("wall_ns"),
        "processes": len(phases) or len(rep.get("processes") or []),
        "compiler_processes_seen": sum(1 for p in phases if p.get("compiler")),
        "gpu_processes": sum(1 for p in phases if p.get("gpu")),
        "launches": g.get("launches"), "graph_launches": g.get("graph_launches"),
        "captured_launches": g.get("captured_launches"), "kernels_distinct": g.get("kernels_distinct"),
        "busy_estimate": g.get("busy_estimate"), "covered_share": g.get("covered_share"),
        "steady_state": {k: ss.get(k) for k in ("known", "method", "duration_ns", "share_of_wall",
                                                 "findings_reread", "compile_processes", "compile_process_ns")},
        "compile_processes": ss.get("compile_processes"),
        "compile_process_ns": ss.get("compile_process_ns"),
        "main": None,
        "top": [],
        "findings": [b.get("id") for b in rep.get("bottlenecks") or []],
    }
    if main is not None:
        s["main"] = {
            "pid": main.get("pid"), "steady_method": main.get("steady_method"),
            "phases": [{"name": p.get("name"), "duration_ns": p.get("duration_ns")} for p in main.get("phases") or []],
            "steps": main.get("steps"), "step_ns": main.get("step_ns"), "warmup_steps": main.get("warmup_steps"),
            "period_launches": main.get("period_launches"), "launches": main.get("launches"),
            "module_loads": main.get("module_loads"), "module_load_ns": main.get("module_load_ns"),
            "warmup_module_loads": main.get("warmup_module_loads"),
            "warmup_module_load_ns": main.get("warmup_module_load_ns"),
            "steady_module_loads": main.get("steady_module_loads"),
        }
    for b in (rep.get("bottlenecks") or [])[:TOP]:
        s["top"].append({"id": b.get("id"), "severity": b.get("severity"), "time_lost_ns": b.get("time_lost_ns"),
                         "wall_share": b.get("wall_share"), "steady_lost_ns": b.get("steady_lost_ns"),
                         "steady_share": b.get("steady_share"), "summary": (b.get("summary") or "")[:150]})
    return s


def fs(ns):
    """ns -> a short duration."""
    if ns is None:
        return "n/a"
    if ns >= 1e9:
        return "%.2f s" % (ns / 1e9)
    if ns >= 1e6:
        return "%.1f ms" % (ns / 1e6)
    return "%.1f us" % (ns / 1e3)


def pct(x):
    return "n/a" if x is None else "%.0f%%" % (100.0 * x)


def text_block(e):
    """The lines printed for one entry (a workload or a sample)."""
    head = "==== %s (%s)" % (e["name"], e.get("what", ""))
    if e.get("skipped"):
        return [head, "  skipped: %s" % e["skipped"]]
    if e.get("failed"):
        return [head, "  FAILED: %s" % e["failed"]]
    s = e["summary"]
    lines = [head]
    lines.append("  wall %s%s; %s processes (%s with GPU work, %s compilers); %s launches, %s distinct kernels, "
                 "busy estimate %s" % (fs(s["wall_ns"]), (" (harness %.2f s)" % e["harness_wall_s"])
                                       if e.get("harness_wall_s") else "", s["processes"], s["gpu_processes"],
                                       s["compiler_processes_seen"], s["launches"], s["kernels_distinct"],
                                       pct(s["busy_estimate"])))
    m = s.get("main")
    if m:
        lines.append("  main pid %s, steady method %s: %s" % (
            m["pid"], m["steady_method"],
            " | ".join("%s %s" % (p["name"], fs(p["duration_ns"])) for p in m["phases"]) or "no phases"))
        lines.append("  steps %s, step %s, warm-up steps %s; module loads %s (%s of them in warm-up, %s; %s in "
                     "the steady state); compile processes %s (%s)" % (
                         m["steps"], fs(m["step_ns"]), m["warmup_steps"], m["module_loads"], m["warmup_module_loads"],
                         fs(m["warmup_module_load_ns"]), m["steady_module_loads"], s["compile_processes"],
                         fs(s["compile_process_ns"])))
    else:
        lines.append("  no main GPU process; compile processes %s" % s["compile_processes"])
    if not s["top"]:
        lines.append("  no finding")
    for i, b in enumerate(s["top"]):
        lines.append("  %d. %s %s: lost %s, wall %s, steady %s -- %s" % (
            i + 1, b["id"], b["severity"], fs(b["time_lost_ns"]), pct(b["wall_share"]),
            pct(b["steady_share"]) if b["steady_share"] is not None else "n/a", b["summary"]))
    if len(s["findings"]) > TOP:
        lines.append("  (also: %s)" % ", ".join(s["findings"][TOP:]))
    return lines


def phase_dur(m, name):
    if not m:
        return None
    for p in m["phases"]:
        if p["name"] == name:
            return p["duration_ns"]
    return None


def markdown(doc):
    meta = doc.get("meta", {})
    out = ["## Phases and top findings", ""]
    if meta.get("gpu"):
        out.append("%s, PyTorch %s; one run of each program under the shim (default sampling); "
                   "`tests/gpu/phases_check.py`, %s." % (meta["gpu"], meta.get("torch", "?"), meta.get("date", "")))
    else:
        out.append("Existing trace folders only (no program run); `tests/gpu/phases_check.py`, %s."
                   % meta.get("date", ""))
    out.append("")
    out.append("| program | wall | start-up | warm-up | steady state | teardown | steady method | steps x step "
               "| warm-up module loads | compile processes | top finding |")
    out.append("|---|---:|---:|---:|---:|---:|---|---|---:|---:|---|")
    for e in doc.get("entries", []):
        if e.get("skipped") or e.get("failed"):
            out.append("| %s | %s | | | | | | | | | |" % (
                e["name"], ("skipped: " + e["skipped"][:80]) if e.get("skipped") else "failed"))
            continue
        s = e["summary"]
        m = s.get("main")
        top = s["top"][0] if s["top"] else None
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            e["name"], fs(s["wall_ns"]), fs(phase_dur(m, "start-up")), fs(phase_dur(m, "warm-up")),
            fs(phase_dur(m, "steady state")), fs(phase_dur(m, "teardown")), (m or {}).get("steady_method", "n/a"),
            ("%s x %s" % (m["steps"], fs(m["step_ns"]))) if m and m.get("steps") is not None else "n/a",
            (m or {}).get("warmup_module_loads", "n/a"), s.get("compile_processes"),
            ("%s %s (wall %s, steady %s)" % (top["id"], top["severity"], pct(top["wall_share"]),
                                             pct(top["steady_share"]))) if top else "none"))
    out.append("")
    for e in doc.get("entries", []):
        if e.get("skipped"):
            out.append("- **%s** skipped: %s" % (e["name"], e["skipped"]))
            continue
        if e.get("failed"):
            out.append("- **%s** failed: %s" % (e["name"], e["failed"].splitlines()[0]))
            continue
        s = e["summary"]
        out.append("- **%s** (%s): %s launches, %s distinct kernels, %s processes (%s compilers), busy estimate %s; "
                   "findings: %s" % (e["name"], e.get("what", ""), s["launches"], s["kernels_distinct"],
                                     s["processes"], s["compiler_processes_seen"], pct(s["busy_estimate"]),
                                     ", ".join(s["findings"]) or "none"))
        for i, b in enumerate(s["top"]):
            out.append("  %d. `%s` %s: time lost %s, wall %s, steady %s: %s" % (
                i + 1, b["id"], b["severity"], fs(b["time_lost_ns"]), pct(b["wall_share"]),
                pct(b["steady_share"]) if b["steady_share"] is not None else "n/a",
                b["summary"].replace("|", "/")))
    return "\n".join(out) + "\n"


def verdict_of(entries):
    return {
        "ok": not any(e.get("failed") for e in entries),
        "ran": [e["name"] for e in entries if not e.get("failed") and not e.get("skipped")],
        "failed": [e["name"] for e in entries if e.get("failed")],
        "skipped": [e["name"] for e in entries if e.get("skipped")],
        "top_finding": {e["name"]: (e["summary"]["top"][0]["id"] if e["summary"]["top"] else None)
                        for e in entries if e.get("summary")},
        "steady_method": {e["name"]: (e["summary"]["main"] or {}).get("steady_method")
                          for e in entries if e.get("summary")},
    }


def write_outputs(out, doc):
    doc["verdict"] = verdict_of(doc["entries"])
    with open(os.path.join(out, "phases.json"), "w") as f:
        json.dump(doc, f, indent=1)
    md = markdown(doc)
    with open(os.path.join(out, "phases.md"), "w") as f:
        f.write(md)
    return md


# ---- the harness ----------------------------------------------------------------------------------
def base_env():
    env = dict(os.environ)
    for k in ("LD_PRELOAD", "WSLSHIM_OUTPUT", "WSLSHIM_GPU_TIMING") + tuple(CACHE_VARS):
        env.pop(k, None)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def read_report(report, tdir, name, out, timeout):
    """wslshim-report --json and the text report over tdir; saves both; returns the JSON."""
    if not [f for f in os.listdir(tdir) if f.endswith(".trace.zst")]:
        raise Failed("%s: no trace in %s" % (name, tdir))
    try:
        pj = subprocess.run([report, "--json", tdir], capture_output=True, text=True, timeout=timeout)
        pt = subprocess.run([report, "--color=never", tdir], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Failed("wslshim-report %s ran past the %d s timeout" % (tdir, timeout))
    if pj.returncode != 0:
        raise Failed("wslshim-report --json %s exited %d: %s" % (tdir, pj.returncode, tail(pj.stderr)))
    if pt.returncode != 0:
        raise Failed("wslshim-report %s exited %d: %s" % (tdir, pt.returncode, tail(pt.stderr)))
    try:
        rep = json.loads(pj.stdout)
    except ValueError as e:
        raise Failed("wslshim-report --json %s: not JSON (%s)" % (tdir, e))
    os.makedirs(os.path.join(out, "reports"), exist_ok=True)
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_.") or "report"
    with open(os.path.join(out, "reports", base + ".json"), "w") as f:
        f.write(pj.stdout)
    with open(os.path.join(out, "reports", base + ".txt"), "w") as f:
        f.write(pt.stdout)
    return rep


def run_sample(args, path, report, out, label):
    e = {"name": label, "what": "existing traces in %s" % path, "kind": "sample", "path": path}
    try:
        if not os.path.isdir(path):
            raise Failed("%s is not a folder" % path)
        log("%s: reading %s" % (label, path))
        e["summary"] = summarize(read_report(report, path, label, out, args.timeout))
    except Failed as ex:
        e["failed"] = str(ex)
        log("%s FAILED: %s" % (label, ex))
    return e


def run_workload(args, name, shim, report, out):
    spec = WORKLOADS[name]
    e = {"name": name, "what": spec["what"], "kind": "workload"}
    tdir = os.path.join(out, "traces", name)
    shutil.rmtree(tdir, ignore_errors=True)
    os.makedirs(tdir)
    env = dict(base_env(), LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"))
    env.update(spec.get("env", {}))
    cache = None
    if spec.get("fresh_caches"):
        os.makedirs(os.path.join(out, "cache"), exist_ok=True)
        cache = tempfile.mkdtemp(prefix=name + "-", dir=os.path.join(out, "cache"))
        for var, sub in CACHE_VARS.items():
            env[var] = os.path.join(cache, sub)
            os.makedirs(env[var])
    e["env"] = {k: env[k] for k in list(spec.get("env", {})) + (list(CACHE_VARS) if cache else [])}
    cmd = [sys.executable, os.path.abspath(__file__), "--workload", name, "--steps", str(args.steps),
           "--iters", str(args.iters)]
    try:
        log("%s: run under the shim (%s)" % (name, spec["what"]))
        try:
            rc, so, se, wall = run_prog(cmd, env, args.timeout)
        finally:
            if cache:
                shutil.rmtree(cache, ignore_errors=True)
        if rc == 77:
            e["skipped"] = (last_json(so) or {}).get("skip") or tail(se, 300) or "exit 77"
            log("%s: skipped: %s" % (name, e["skipped"]))
            return e
        if rc is None:
            raise Failed("%s ran past the %d s timeout; stderr tail:\n%s" % (name, args.timeout, tail(se)))
        if rc != 0:
            raise Failed("%s exited %d: %s\nstderr tail:\n%s" % (name, rc, last_line(se), tail(se)))
        e["harness_wall_s"] = round(wall, 3)
        e["program"] = last_json(so)
        log("%s: ran in %.1f s; the report" % (name, wall))
        e["summary"] = summarize(read_report(report, tdir, name, out, args.timeout))
    except Failed as ex:
        e["failed"] = str(ex)
        log("%s FAILED: %s" % (name, ex))
    return e


def gpu_info():
    code = ("import json, torch, sys\n"
            "if not torch.cuda.is_available(): sys.exit(3)\n"
            "print(json.dumps({'gpu': torch.cuda.get_device_name(0), 'torch': torch.__version__}))\n")
    try:
        p = subprocess.run([sys.executable, "-c", code], env=base_env(), capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None, "python -c 'import torch ...' ran past 300 s"
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["torch.cuda.is_available() is false"])[-1]
    return json.loads(p.stdout.strip().splitlines()[-1]), ""


def finish(out, doc, t0):
    md = write_outputs(out, doc)
    for e in doc["entries"]:
        print("\n".join(text_block(e)), flush=True)
    print("", flush=True)
    print(md, end="", flush=True)
    log("done in %.0f s; %s" % (time.perf_counter() - t0, os.path.join(out, "phases.md")))
    return doc["verdict"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build")
    ap.add_argument("--out")
    ap.add_argument("--sample", action="append", default=[], metavar="DIR",
                    help="an existing trace folder to read as well (repeatable)")
    ap.add_argument("--no-workloads", action="store_true", help="read the --sample folders only")
    ap.add_argument("--only", help="NAME[,NAME]: these workloads only (%s)" % ", ".join(ORDER))
    ap.add_argument("--timeout", type=int, default=600, help="seconds per program run")
    ap.add_argument("--steps", type=int, default=COMPILE_STEPS, help="torch.compile training steps")
    ap.add_argument("--iters", type=int, default=ITERS, help="JAX and CuPy loop iterations")
    ap.add_argument("--render", metavar="JSON", help="print the summary of a phases.json again")
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.workload:
        if args.workload not in WORKLOADS:
            ap.error("unknown workload %s" % args.workload)
        workload(args.workload, args.steps, args.iters)
        return 0
    if args.render:
        with open(args.render) as f:
            doc = json.load(f)
        doc["verdict"] = verdict_of(doc["entries"])
        for e in doc["entries"]:
            print("\n".join(text_block(e)))
        print()
        print(markdown(doc), end="")
        print(json.dumps(doc["verdict"]))
        return 1 if doc["verdict"]["failed"] else 0
    if not args.build or not args.out:
        ap.error("--build and --out are needed")
    if args.steps < 1 or args.iters < 1 or args.timeout < 1:
        ap.error("--steps, --iters and --timeout must be positive")
    names = [] if args.no_workloads else ORDER
    if args.only and not args.no_workloads:
        names = [n.strip() for n in args.only.split(",") if n.strip()]
        bad = [n for n in names if n not in WORKLOADS]
        if bad or not names:
            ap.error("--only: unknown workload %s (workloads: %s)" % (", ".join(bad) or "(none)", ", ".join(ORDER)))
    if not names and not args.sample:
        ap.error("nothing to do: --no-workloads without --sample")
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    shim = os.path.join(build, "lib", "libwslshim.so")
    report = os.path.join(build, "analyzer", "wslshim-report")
    for path in ([shim] if names else []) + [report]:
        if not os.path.exists(path):
            print("%s: not found (build first)" % path, file=sys.stderr)
            print(json.dumps({"error": "%s not found" % path}))
            return 2
    os.makedirs(out, exist_ok=True)
    t0 = time.perf_counter()
    doc = {"meta": {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "python": sys.version.split()[0], "build": build,
                    "steps": args.steps, "iters": args.iters, "samples": args.sample,
                    "wslshim_env": {k: v for k, v in os.environ.items() if k.startswith("WSLSHIM_")}},
           "entries": []}
    used = set()
    for path in args.sample:
        label = "sample " + path
        while label in used:
            label += "'"
        used.add(label)
        doc["entries"].append(run_sample(args, os.path.abspath(path), report, out, label))
        write_outputs(out, doc)

    if names:
        info, why = gpu_info()
        if info is None:
            print("SKIPPED: no CUDA GPU with PyTorch (%s)" % why, file=sys.stderr)
            if doc["entries"]:
                finish(out, doc, t0)
            print(json.dumps({"skip": "no CUDA GPU with PyTorch: %s" % why}))
            return 77
        doc["meta"].update(gpu=info["gpu"], torch=info["torch"])
        log("%s, PyTorch %s: workloads %s" % (info["gpu"], info["torch"], ", ".join(names)))
        for i, name in enumerate(names):
            log("workload %d/%d: %s" % (i + 1, len(names), name))
            doc["entries"].append(run_workload(args, name, shim, report, out))
            doc["meta"]["elapsed_s"] = round(time.perf_counter() - t0, 1)
            write_outputs(out, doc)
    v = finish(out, doc, t0)
    print(json.dumps(v))
    return 0 if v["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
