#!/usr/bin/env python3
"""GPU check of the HTML report, on a real GPU with PyTorch.

    html_gpu_check.py --build BUILD_DIR --out OUT_DIR

Runs, under `wslshim run`, a launch-bound PyTorch loop (20000 tiny element-wise
kernels, then 200 large matmuls, then a DataLoader reading 64 files with 2
workers), once with --gpu-timing 1 and once with --gpu-timing 10, and for each:
  - `wslshim report --html` exits 0 and the page passes the html tests' checks
    (tests/html/html_check.py: strict structure, nothing external);
  - timeline launches add up to the JSON report's cuLaunchKernel +
    cuLaunchKernelEx + cuGraphLaunch calls;
  - the kernel histogram holds the JSON report's gpu.kernels_timed;
  - with GPU timing, the GPU busy panel has points; bytes read add up to at
    least the files' 64 x 256 KiB;
  - if chromium is installed, a screenshot (OUT_DIR/<tag>.png).
Writes OUT_DIR/html_gpu_check.json (figures: report times with and without
--html); exits 0 if every check passed, 1 if one failed, 77 without GPU or PyTorch.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "html"))
import html_check  # noqa: E402

WORKLOAD = r"""
import os, sys, torch
from torch.utils.data import DataLoader, Dataset
x = torch.ones(256, device="cuda")
for _ in range(20000):
    x = x * 1.0000001 + 0.0
torch.cuda.synchronize()
a = torch.randn(4096, 4096, device="cuda")
for _ in range(200):
    a = (a @ a).clamp_(-1, 1)
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
print(f"RESULT {float(x[0]):.4f} {total:.1f}")
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
    data = os.path.join(a.out, "data")
    os.makedirs(data)
    for i in range(64):
        with open(os.path.join(data, f"{i:03d}.bin"), "wb") as f:
            f.write(bytes([i]) * (256 << 10))
    prog = os.path.join(a.out, "workload.py")
    with open(prog, "w") as f:
        f.write(WORKLOAD)
    results, fails = {}, []
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    for tag, timing in (("timing1", "1"), ("timing10", "10")):
        run_dir = os.path.join(a.out, tag)
        shutil.rmtree(run_dir, ignore_errors=True)  # wslshim run refuses a folder holding a run
        p = subprocess.run([wslshim, "run", "--gpu-timing", timing, "-o", os.path.join(run_dir, "%p.trace.zst"),
                            "--", sys.executable, prog, data], capture_output=True, text=True)
        if p.returncode != 0:
            fails.append(f"{tag}: run exit {p.returncode}: {p.stderr[-800:]}")
            continue
        t0 = time.time()
        rep = subprocess.run([report, "--json", run_dir], capture_output=True, text=True)
        t_json = time.time() - t0
        page_path = os.path.join(a.out, tag + ".html")
        t0 = time.time()
        h = subprocess.run([report, "--html", page_path, run_dir], capture_output=True, text=True)
        t_html = time.time() - t0
        results[tag] = {"json_s": round(t_json, 3), "html_s": round(t_html, 3),
                        "trace_bytes": sum(os.path.getsize(os.path.join(run_dir, f)) for f in os.listdir(run_dir)),
                        "html_bytes": os.path.getsize(page_path) if os.path.exists(page_path) else 0}
        if rep.returncode != 0 or h.returncode != 0:
            fails.append(f"{tag}: report exit {rep.returncode}/{h.returncode}: {rep.stderr.strip()} {h.stderr.strip()}")
            continue
        js = json.loads(rep.stdout)
        with open(page_path, encoding="utf-8") as f:
            page = f.read()
        html_check.FAILS.clear()
        pg = html_check.parse(page, tag)
        html_check.no_external(pg, page, tag)
        fails += html_check.FAILS
        launches = sum(html_check.chart_points(pg, "launches"))
        want = sum(js["api"].get(n, {}).get("calls", 0) for n in ("cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch"))
        results[tag].update(launches=launches, launch_calls=want, kernels_timed=js["gpu"].get("kernels_timed"))
        if launches < want or launches < 20000:
            fails.append(f"{tag}: timeline launches {launches}, the report counts {want} launch calls")
        hist = sum(html_check.chart_points(pg, "kernel-hist"))
        if hist != js["gpu"].get("kernels_timed", 0) or not hist:
            fails.append(f"{tag}: kernel histogram {hist}, kernels_timed {js['gpu'].get('kernels_timed')}")
        if not html_check.chart_points(pg, "gpu-busy"):
            fails.append(f"{tag}: no GPU busy points")
        io = sum(html_check.chart_points(pg, "io-bytes"))
        results[tag]["io_bytes"] = io
        if io < 64 * (256 << 10):
            fails.append(f"{tag}: bytes read in the timeline {io}, the files hold {64 * (256 << 10)}")
        if chromium:
            shot = os.path.join(a.out, tag + ".png")
            subprocess.run([chromium, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
                            "--user-data-dir=" + os.path.join(a.out, "profile"), "--window-size=1280,2600",
                            "--screenshot=" + shot, "file://" + os.path.abspath(page_path)],
                           capture_output=True, timeout=120)
            results[tag]["screenshot"] = shot if os.path.exists(shot) else None
    results["fails"] = fails
    with open(os.path.join(a.out, "html_gpu_check.json"), "w") as f:
        json.dump(results, f, indent=1)
    for msg in fails:
        print("FAIL:", msg)
    print(json.dumps(results, indent=1))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
