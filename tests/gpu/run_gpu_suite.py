#!/usr/bin/env python3
"""GPU suite: real CUDA programs under the shim, checked against what they did.

    run_gpu_suite.py --build BUILD_DIR --out OUT_DIR [--quick] [--bench-rounds N]

For each program: it runs without and with the shim; outputs must be identical
bit for bit; the trace's per-API counts must match what the program made (the
driver-API probe states its own calls; the PyTorch elementwise loop's launches
are checked against torch.profiler's CUPTI kernel count for the same loop).
Then a launch-bound benchmark runs interleaved with and without the shim.
Writes OUT_DIR/gpu_results.json; exits 0 if every check passed, 1 if one
failed, 77 if there is no GPU.
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd, env=None, check=True):
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr[-2000:]}")
    return p


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError(f"no JSON in output: {text[-500:]}")


class Suite:
    def __init__(self, build, out, traces):
        self.build = os.path.abspath(build)
        self.out = os.path.abspath(out)
        self.traces = os.path.abspath(traces)
        self.shim = os.path.join(self.build, "lib", "libwslshim.so")
        self.report = os.path.join(self.build, "analyzer", "wslshim-report")
        self.results = {"checks": [], "runs": {}}
        self.failed = 0

    def check(self, name, ok, detail):
        self.results["checks"].append({"check": name, "ok": bool(ok), "detail": detail})
        print(f"{'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)
        if not ok:
            self.failed += 1

    def traced(self, tag, cmd):
        """Runs cmd under the shim; returns (program output JSON, report JSON)."""
        tdir = os.path.join(self.traces, tag)
        shutil.rmtree(tdir, ignore_errors=True)
        os.makedirs(tdir)
        env = dict(os.environ, LD_PRELOAD=self.shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"))
        p = run(cmd, env=env)
        rep = run([self.report, "--json", tdir])
        return last_json(p.stdout), json.loads(rep.stdout)

    def plain(self, cmd):
        return last_json(run(cmd).stdout)

    @staticmethod
    def calls(report, api):
        return report.get("api", {}).get(api, {}).get("calls", 0)

    def probe(self, resolve):
        cmd = [os.path.join(self.build, "bin", "launch_probe"), "--resolve", resolve, "--launches", "2000"]
        res, rep = self.traced(f"probe-{resolve}", cmd)
        self.results["runs"][f"probe-{resolve}"] = {"program": res, "api": rep.get("api")}
        for api, n in res["expect"].items():
            got = self.calls(rep, api)
            self.check(f"probe[{resolve}] {api}", got == n, f"trace {got}, program made {n}")

    def workload(self, name, iters, extra=(), compare_profiler=False, expect_api=None):
        cmd = [sys.executable, os.path.join(HERE, "workloads.py"), name, "--iters", str(iters), *extra]
        p = run(cmd, check=False)
        if p.returncode == 77:
            self.check(f"{name} available", True, f"skipped: {p.stdout.strip()}")
            return None
        if p.returncode != 0:
            self.check(f"{name} runs without the shim", False, p.stderr[-500:])
            return None
        base = last_json(p.stdout)
        res, rep = self.traced(name, cmd)
        self.check(f"{name} output unchanged", res["checksum"] == base["checksum"],
                   f"with shim {res['checksum']}, without {base['checksum']}")
        api = {k: v.get("calls") for k, v in rep.get("api", {}).items()}
        self.results["runs"][name] = {"without": base, "with": res, "api_calls": api,
                                      "processes": rep.get("processes")}
        if compare_profiler:
            _, rep0 = self.traced(f"{name}-0", [*cmd[:4], "0", *extra])
            launches = self.calls(rep, "cuLaunchKernel") - self.calls(rep0, "cuLaunchKernel")
            profiled = self.plain([*cmd, "--profile"])
            prof = profiled["profiler_kernels"]
            top = (rep.get("gpu", {}).get("kernels") or [{}])[0]
            self.results["runs"][name]["top_kernel"] = {"shim": top, "profiler": profiled.get("profiler_top_kernel")}
            ours = (top.get("name") or "").split("<")[0].split("(")[0].split("::")[-1]
            self.check(f"{name} top kernel named as torch.profiler names it",
                       bool(ours) and ours in (profiled.get("profiler_top_kernel") or ""),
                       f"shim: {top.get('name', '')[:90]!r} x{top.get('count')}, "
                       f"torch.profiler: {(profiled.get('profiler_top_kernel') or '')[:90]!r}")
            self.results["runs"][name]["profiler_kernels"] = prof
            self.results["runs"][name]["loop_launches"] = launches
            self.check(f"{name} launches == torch.profiler kernels", launches == prof,
                       f"shim saw {launches} cuLaunchKernel in the loop, torch.profiler {prof} kernels")
        gpu = rep.get("gpu", {})
        launches, unnamed = gpu.get("launches", 0), gpu.get("unnamed_launches", 0)
        if launches:
            self.check(f"{name} kernels named", unnamed <= 0.05 * launches,
                       f"{launches - unnamed} of {launches} launches named; top: "
                       f"{[(k.get('name', '')[:60], k.get('count')) for k in gpu.get('kernels', [])[:2]]}")
        for api_name, minimum in (expect_api or {}).items():
            got = self.calls(rep, api_name)
            self.check(f"{name} records {api_name}", got >= minimum, f"{got} calls (expected >= {minimum})")
        return rep

    def dataloader(self, files, steps):
        """PyTorch DataLoader, 4 workers, over a folder of small JPEGs (PIL)."""
        script = os.path.join(HERE, "dataloader.py")
        data = os.path.join(self.traces, "dataset")
        if not os.path.isdir(data):
            p = run([sys.executable, script, "make", data, "--files", str(files)], check=False)
            if p.returncode == 77:
                self.check("dataloader available", True, f"skipped: {p.stdout.strip()}")
                return
        cmd = [sys.executable, script, "train", data, "--workers", "4", "--steps", str(steps)]
        res, rep = self.traced("dataloader", cmd)
        io = rep.get("io", {})
        ids = [b.get("id") for b in rep.get("bottlenecks", [])]
        self.results["runs"]["dataloader"] = {"program": res, "io": io, "bottlenecks": rep.get("bottlenecks"),
                                              "processes": len(rep.get("processes", [])),
                                              "api_calls": {k: v.get("calls") for k, v in rep.get("api", {}).items()}}
        self.check("dataloader: a trace per worker", len(rep.get("processes", [])) >= 5,
                   f"{len(rep.get('processes', []))} processes traced (main + 4 workers expected)")
        self.check("dataloader: files opened cover the samples read", io.get("files_opened", 0) >= res["samples"],
                   f"{io.get('files_opened')} files opened, {res['samples']} samples consumed")
        self.check("dataloader: small_file_reads diagnosed", "small_file_reads" in ids, f"bottlenecks: {ids}")
        self.check("dataloader: no cross_os_reads on a Linux filesystem", "cross_os_reads" not in ids,
                   f"by_fs: {sorted(io.get('by_fs', {}))}")

    def memory(self):
        """Peak live device bytes against torch.cuda.max_memory_reserved()."""
        cmd = [sys.executable, os.path.join(HERE, "workloads.py"), "memory"]
        res, rep = self.traced("memory", cmd)
        mem = rep.get("memory", {})
        peak, want = mem.get("peak_device_bytes"), res["max_memory_reserved"]
        self.results["runs"]["memory"] = {"program": res, "memory": mem}
        ok = isinstance(peak, int) and want and abs(peak - want) <= 0.05 * want
        self.check("memory: peak device bytes within 5% of torch.cuda.max_memory_reserved()", ok,
                   f"shim {peak}, torch {want} ({(peak or 0) / want * 100 - 100:+.2f}%)")

    def interleaved(self, name, cmd, keys, rounds):
        """Runs cmd `rounds` times without and with the shim, alternating, and
        compares the medians of each figure in `keys`."""
        env_shim = dict(os.environ, LD_PRELOAD=self.shim,
                        WSLSHIM_OUTPUT=os.path.join(self.traces, "bench-%p.trace.zst"))
        os.makedirs(self.traces, exist_ok=True)
        runs = {"with": [], "without": []}
        for _ in range(rounds):
            runs["without"].append(last_json(run(cmd).stdout))
            runs["with"].append(last_json(run(cmd, env=env_shim).stdout))
        for f in glob.glob(os.path.join(self.traces, "bench-*")):
            os.unlink(f)
        for key in keys:
            w = [r[key] for r in runs["with"]]
            wo = [r[key] for r in runs["without"]]
            m_with, m_without = statistics.median(w), statistics.median(wo)
            slow = (m_with / m_without - 1) * 100
            self.results.setdefault("bench", {})[f"{name}.{key}"] = {
                "rounds": rounds, "with": w, "without": wo, "median_with": m_with,
                "median_without": m_without, "median_slowdown_pct": slow}
            print(f"BENCH {name} {key}: median {m_without:.6g} without, {m_with:.6g} with the shim: "
                  f"{slow:+.2f}%", flush=True)

    def bench(self, rounds, iters):
        """A launch-bound PyTorch loop and the driver-API probe, interleaved runs."""
        self.interleaved("torch_elementwise_loop", [sys.executable, os.path.join(HERE, "workloads.py"),
                         "elementwise", "--iters", str(iters), "--repeat", "5"], ["loop_s"], rounds)
        self.interleaved("launch_probe", [os.path.join(self.build, "bin", "launch_probe"),
                         "--launches", "20000", "--repeats", "7"],
                         ["launch_async_ns_median", "launch_sync_ns_median", "alloc_free_1mib_ns_median"], rounds)


def have_gpu(build):
    probe = os.path.join(build, "bin", "launch_probe")
    p = subprocess.run([probe, "--launches", "1", "--repeats", "1"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    return p.returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--quick", action="store_true", help="only the driver-API probe and the elementwise loop")
    ap.add_argument("--bench-rounds", type=int, default=0)
    ap.add_argument("--traces", help="where traces go (default OUT_DIR/traces)")
    args = ap.parse_args()
    if not have_gpu(args.build):
        print("SKIP: no usable GPU or CUDA driver")
        return 77
    os.makedirs(args.out, exist_ok=True)
    s = Suite(args.build, args.out, args.traces or os.path.join(args.out, "traces"))
    try:
        s.probe("dlsym")
        s.probe("proc")
        s.workload("elementwise", 2000, compare_profiler=True)
        if not args.quick:
            s.workload("matmul", 100, expect_api={"cuLaunchKernel": 100})
            s.workload("mlp", 500, expect_api={"cuLaunchKernel": 500, "cuStreamSynchronize": 50})
            s.workload("triton_add", 100, expect_api={"cuLaunchKernelEx": 100})
            s.workload("cupy_elementwise", 100, expect_api={"cuLaunchKernel": 100})
            s.workload("graph_replay", 100, expect_api={"cuGraphLaunch": 100})
            s.dataloader(20000, 100)
            s.memory()
        if args.bench_rounds:
            s.bench(args.bench_rounds, 10000)
    except Exception as exc:  # a crash of a traced program is a failure, not a skip
        s.check("suite ran to the end", False, repr(exc))
    with open(os.path.join(args.out, "gpu_results.json"), "w") as f:
        json.dump(s.results, f, indent=1)
    print(f"{len(s.results['checks']) - s.failed} passed, {s.failed} failed")
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
