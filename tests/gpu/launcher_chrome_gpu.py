#!/usr/bin/env python3
"""GPU check of the launcher and the timeline export, on a real GPU with PyTorch.

    launcher_chrome_gpu.py --build BUILD_DIR --out OUT_DIR

1. `wslshim run --gpu-timing 1 --report` of a PyTorch loop (2000 x (x*1.0001+1), then a
   DataLoader with 2 workers reading files): exit 0, the program's output intact, the traces
   named on stderr, a report printed.
2. Exit status through the launcher with CUDA up: 3 from sys.exit(3); SIGTERM sent to the
   launcher mid-loop: the launcher dies of SIGTERM and the traces still read.
3. `wslshim report --chrome` of run 1: valid JSON; launch slices per API equal the report's
   calls; every process of the run present; if GPU_KERNEL events were recorded: kernel slices
   equal the report's kernels_timed + graphs_timed (when it has them), all on "GPU stream"
   tracks, every flow paired, and no kernel drawn more than 50 us before the launch that
   submitted it (the count and largest gap below that are recorded: clock-mapping error).
Writes OUT_DIR/launcher_chrome_gpu.json; exits 0 if every check passed, 1 if one failed,
77 if there is no GPU or no PyTorch.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time

WORKLOAD = r"""
import os, sys, torch
from torch.utils.data import DataLoader, Dataset
x = torch.ones(1 << 16, device="cuda")
for _ in range(2000):
    x = x * 1.0001 + 1
torch.cuda.synchronize()
class Files(Dataset):
    def __init__(self, d):
        self.files = sorted(os.path.join(d, f) for f in os.listdir(d))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        with open(self.files[i], "rb") as f:
            return torch.frombuffer(bytearray(f.read()), dtype=torch.uint8).float().sum()
total = sum(float(b.sum()) for b in DataLoader(Files(sys.argv[1]), batch_size=8, num_workers=2))
print(f"RESULT {float(x[0]):.6f} {total:.1f}")
"""

LOOP = r"""
import sys, time, torch
x = torch.ones(1024, device="cuda")
open(sys.argv[1], "w").close()
while True:
    x = x * 1.0001 + 1
    torch.cuda.synchronize()
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    wslshim = os.path.join(a.build, "bin", "wslshim")
    report = os.path.join(a.build, "analyzer", "wslshim-report")
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    if probe.returncode != 0 or probe.stdout.strip() != "True":
        print("SKIP: no GPU or no PyTorch")
        return 77
    shutil.rmtree(a.out, ignore_errors=True)
    os.makedirs(a.out)
    results, fails = {}, []

    data = os.path.join(a.out, "data")
    os.makedirs(data)
    for i in range(64):
        with open(os.path.join(data, f"{i:03d}.bin"), "wb") as f:
            f.write(bytes([i]) * 4096)
    prog = os.path.join(a.out, "workload.py")
    with open(prog, "w") as f:
        f.write(WORKLOAD)

    # 1. a run with --report
    plain = subprocess.run([sys.executable, prog, data], capture_output=True, text=True)
    run_dir = os.path.join(a.out, "run")
    shutil.rmtree(run_dir, ignore_errors=True)  # wslshim run refuses a folder holding a run
    t0 = time.time()
    p = subprocess.run([wslshim, "run", "--gpu-timing", "1", "--report", "-o", os.path.join(run_dir, "%p.trace.zst"),
                        "--", sys.executable, prog, data], capture_output=True, text=True)
    results["run_s"] = time.time() - t0
    results["run_stderr"] = p.stderr[-2000:]
    out_lines = [l for l in p.stdout.splitlines() if l.startswith("RESULT")]
    if p.returncode != 0:
        fails.append(f"run: exit {p.returncode}: {p.stderr[-1000:]}")
    if out_lines != [l for l in plain.stdout.splitlines() if l.startswith("RESULT")]:
        fails.append(f"run: output {out_lines} differs from the plain run's")
    traces = sorted(os.listdir(run_dir)) if os.path.isdir(run_dir) else []
    if not traces or any(t not in p.stderr for t in traces):
        fails.append(f"run: traces {traces} not all named on stderr")
    if "wslshim report:" not in p.stdout:
        fails.append("run: --report printed no report")

    # 2. exit status and SIGTERM with CUDA up
    shutil.rmtree(os.path.join(a.out, "exit3"), ignore_errors=True)
    r = subprocess.run([wslshim, "run", "-o", os.path.join(a.out, "exit3", "%p.trace.zst"), "--", sys.executable, "-c",
                        "import torch, sys; torch.zeros(1, device='cuda'); sys.exit(3)"], capture_output=True, text=True)
    if r.returncode != 3:
        fails.append(f"exit 3: launcher exited {r.returncode}")
    loop = os.path.join(a.out, "loop.py")
    with open(loop, "w") as f:
        f.write(LOOP)
    ready = os.path.join(a.out, "loop.ready")
    term_dir = os.path.join(a.out, "term")
    shutil.rmtree(term_dir, ignore_errors=True)
    lp = subprocess.Popen([wslshim, "run", "-o", os.path.join(term_dir, "%p.trace.zst"), "--", sys.executable, loop,
                           ready], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while not os.path.exists(ready) and time.time() < deadline and lp.poll() is None:
        time.sleep(0.05)
    time.sleep(1.0)
    lp.send_signal(signal.SIGTERM)
    try:
        lp.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        lp.kill()
        fails.append("SIGTERM: the launcher did not end")
    if lp.returncode != -signal.SIGTERM:
        fails.append(f"SIGTERM: launcher status {lp.returncode}, expected {-signal.SIGTERM}")
    r = subprocess.run([report, "--json", term_dir], capture_output=True, text=True)
    if r.returncode != 0:
        fails.append(f"SIGTERM: the traces do not read: {r.stderr.strip()}")
    else:
        results["sigterm_launches"] = json.loads(r.stdout)["api"].get("cuLaunchKernel", {}).get("calls", 0)

    # 3. the timeline
    rep = subprocess.run([report, "--json", run_dir], capture_output=True, text=True)
    timeline = os.path.join(a.out, "timeline.json")
    t0 = time.time()
    ch = subprocess.run([wslshim, "report", "--chrome", timeline, run_dir], capture_output=True, text=True)
    results["chrome_s"] = time.time() - t0
    results["chrome_stderr"] = ch.stderr.strip()
    if rep.returncode != 0 or ch.returncode != 0:
        fails.append(f"report/chrome: {rep.stderr.strip()} {ch.stderr.strip()}")
    else:
        rj = json.loads(rep.stdout)
        with open(timeline) as f:
            doc = json.load(f)
        ev = doc["traceEvents"]
        results["timeline_bytes"] = os.path.getsize(timeline)
        results["timeline_events"] = len(ev)
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
        for api in ("cuLaunchKernel", "cuLaunchKernelEx", "cuMemAlloc", "cuStreamSynchronize"):
            want = rj["api"].get(api, {}).get("calls", 0)
            got = sum(1 for e in ev if e["ph"] == "X" and e.get("cat") == "cuda" and e["name"] == api)
            results[f"slices_{api}"] = got
            if got != want:
                fails.append(f"timeline: {got} {api} slices, the report counts {want}")
        pids = {e["pid"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
        if pids != {pp["pid"] for pp in rj["processes"]}:
            fails.append(f"timeline processes {sorted(pids)} differ from the report's")
        kernels = [e for e in ev if e["ph"] == "X" and e.get("cat") == "kernel"]
        results["kernel_slices"] = len(kernels)
        gpu = rj.get("gpu", {})
        timed = None if "kernels_timed" not in gpu else gpu["kernels_timed"] + gpu.get("graphs_timed", 0)
        results["report_kernels_and_graphs_timed"] = timed
        if timed is not None and len(kernels) != timed:
            fails.append(f"timeline: {len(kernels)} kernel slices, the report timed {timed} kernels and graphs")
        if kernels:
            if any(not names.get((k["pid"], k["tid"]), "").startswith("GPU stream 0x") for k in kernels):
                fails.append("timeline: a kernel slice off the GPU stream tracks")
            s = {e["id"]: e for e in ev if e["ph"] == "s"}
            f_ = {e["id"]: e for e in ev if e["ph"] == "f"}
            results["flows"] = len(s)
            if set(s) != set(f_):
                fails.append(f"timeline: {len(s)} flow starts, {len(f_)} ends")
            # a kernel cannot start before its launch began: what the timeline shows earlier is the
            # error of the GPU-to-host clock mapping (informational below 50 us)
            gaps = [s[i]["ts"] - f_[i]["ts"] for i in s if i in f_]
            results["kernels_before_launch"] = sum(1 for g in gaps if g > 0)
            results["kernel_before_launch_max_us"] = max([0.0] + gaps)
            if max([0.0] + gaps) > 50.0:
                fails.append(f"timeline: a kernel starts {max(gaps):.1f} us before its launch")
        else:
            results["note"] = "no GPU_KERNEL events in the traces (GPU timing not recorded by this build)"

    results["fails"] = fails
    with open(os.path.join(a.out, "launcher_chrome_gpu.json"), "w") as f:
        json.dump(results, f, indent=1)
    print(json.dumps({k: v for k, v in results.items() if not k.endswith("stderr")}, indent=1))
    if fails:
        print("FAIL:\n  " + "\n  ".join(fails))
        return 1
    print("OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
