#!/usr/bin/env python3
"""wslshim-probe on a real GPU: is the calibration file complete, and how do its
figures compare with the native H200 figures measured earlier (docs/platform-costs.md)?

    probe_check.py --build BUILD_DIR --out OUT_DIR [--skip-full]

Runs `wslshim-probe --quick` and then the full probe (file probes in OUT_DIR and
/dev/shm), writes OUT_DIR/probe-quick.json, OUT_DIR/probe-full.json and
OUT_DIR/probe_summary.txt, prints each figure with the run times next to the
native H200 figures, and has the profile loader read both files back.
Exit 0 when both files are complete, 1 when a figure is missing or a run
failed, 77 when there is no usable GPU (the probe says it could not probe it).
No timing is judged: the figures are printed for a person to read.
"""
import argparse
import json
import os
import subprocess
import sys
import time

# Native H200, driver 580.159.04, CUDA 13.0, empty kernel via the runtime (two runs).
H200 = {
    "launch_ns": (4190, 4250),
    "launch.with_sync": (9280, 9380),
    "sync_ns": (1630, 1680),
    "alloc+free 1 MiB": (75000, 80000),
    "alloc+free 64 MiB": (126000, 137000),
    "alloc+free 1 GiB": (772000, 781000),
    "graph.per_kernel_ns": (510, 510),
}

problems = []


def problem(msg):
    problems.append(msg)
    print("MISSING:", msg)


def median(s):
    return s["median_ns"] if isinstance(s, dict) and isinstance(s.get("median_ns"), (int, float)) else None


def check_complete(d, label):
    before = len(problems)
    if d.get("schema") != 1 or d.get("gpu_probed") is not True or d.get("gpu_error") is not None:
        problem(f"{label}: schema {d.get('schema')}, gpu_probed {d.get('gpu_probed')}, gpu_error {d.get('gpu_error')}")
    for k in ("launch_ns", "memcpy_ns", "sync_ns", "alloc_ns", "free_ns"):
        if not isinstance(d.get(k), (int, float)):
            problem(f"{label}: {k} is {d.get(k)!r}")
    m = d.get("machine", {})
    for k in ("gpu", "driver_version", "libcuda", "kernel_release", "cpu"):
        if not m.get(k):
            problem(f"{label}: machine.{k} missing")
    for path in ("launch.async", "launch.with_sync", "sync.idle_stream", "event.record", "event.query",
                 "pool_alloc.alloc", "pool_alloc.free", "pinned.alloc_1mib", "pinned.free_1mib", "graph.launch",
                 "graph.launch_sync"):
        a, b = path.split(".")
        if median((d.get(a) or {}).get(b)) is None:
            problem(f"{label}: {path} missing")
    if not (d.get("pinned") or {}).get("max_bytes"):
        problem(f"{label}: pinned.max_bytes missing")
    sizes = [e.get("bytes") for e in d.get("alloc_by_size", [])]
    if (1 << 20) not in sizes or any(median(e.get("alloc")) is None for e in d.get("alloc_by_size", [])):
        problem(f"{label}: alloc_by_size incomplete: {sizes}")
    copies = d.get("copies", [])
    if len(copies) != 24 or any(median(c.get("sync")) is None or median(c.get("async")) is None for c in copies):
        problem(f"{label}: copies incomplete ({len(copies)} of 24)")
    bw = d.get("bandwidth", [])
    if len(bw) != 4 or any(not b.get("bytes_per_s") for b in bw):
        problem(f"{label}: bandwidth incomplete ({len(bw)} of 4)")
    if not (d.get("graph") or {}).get("per_kernel_ns"):
        problem(f"{label}: graph.per_kernel_ns missing")
    by_fs = (d.get("file") or {}).get("by_fs") or {}
    if not by_fs:
        problem(f"{label}: no file figures")
    for fs, f in by_fs.items():
        if f.get("error") or median(f.get("stat")) is None or median(f.get("open_read_close")) is None:
            problem(f"{label}: file.by_fs.{fs} incomplete: {f.get('error')}")
    return len(problems) == before


def alloc_pair(d, size):
    for e in d.get("alloc_by_size", []):
        if e.get("bytes") == size and median(e.get("alloc")) is not None and median(e.get("free")) is not None:
            return median(e["alloc"]) + median(e["free"])
    return None


def figures(d):
    g = lambda a, b: median((d.get(a) or {}).get(b))
    return {
        "launch_ns": d.get("launch_ns"),
        "launch.with_sync": g("launch", "with_sync"),
        "sync_ns": d.get("sync_ns"),
        "memcpy_ns (4 KiB HtoD async, pinned)": d.get("memcpy_ns"),
        "alloc_ns (1 MiB)": d.get("alloc_ns"),
        "free_ns (1 MiB)": d.get("free_ns"),
        "alloc+free 1 MiB": alloc_pair(d, 1 << 20),
        "alloc+free 64 MiB": alloc_pair(d, 64 << 20),
        "alloc+free 1 GiB": alloc_pair(d, 1 << 30),
        "pool alloc 1 MiB": g("pool_alloc", "alloc"),
        "pool free 1 MiB": g("pool_alloc", "free"),
        "event.record": g("event", "record"),
        "event.query": g("event", "query"),
        "pinned alloc 1 MiB": g("pinned", "alloc_1mib"),
        "graph.launch (100 kernels)": g("graph", "launch"),
        "graph.per_kernel_ns": (d.get("graph") or {}).get("per_kernel_ns"),
    }


def fmt_ns(v):
    if v is None:
        return "-"
    return f"{v / 1000:.2f} us" if v >= 1000 else f"{v:.0f} ns"


def summary(runs, out):
    lines = []
    names = list(figures(runs[0][1]).keys())
    head = f"{'figure':40s}" + "".join(f"{label:>14s}" for label, _, _ in runs) + f"{'H200 native':>22s}"
    lines.append(head)
    for n in names:
        row = f"{n:40s}"
        for _, d, _ in runs:
            row += f"{fmt_ns(figures(d)[n]):>14s}"
        if n in H200:
            lo, hi = H200[n]
            row += f"{(fmt_ns(lo) if lo == hi else fmt_ns(lo) + '-' + fmt_ns(hi)):>22s}"
        lines.append(row)
    for label, d, secs in runs:
        p = d.get("pinned") or {}
        lines.append(f"{label}: run {secs:.1f} s (probe says {d.get('run_s')} s); pinned max "
                     f"{(p.get('max_bytes') or 0) / 2**30:.2f} GiB ({p.get('limited_by')}, cap "
                     f"{(p.get('cap_bytes') or 0) / 2**30:.1f} GiB, {p.get('attempts')} attempts)")
        for b in d.get("bandwidth", []):
            lines.append(f"  {b['direction']} {b['host']:8s} 64 MiB: {(b.get('bytes_per_s') or 0) / 1e9:.1f} GB/s")
        small = [c for c in d.get("copies", []) if c["bytes"] == 4]
        for c in small:
            lines.append(f"  {c['direction']} {c['host']:8s} 4 B: sync {fmt_ns(median(c['sync']))}, "
                         f"async submit {fmt_ns(median(c['async']))}")
        for fs, f in ((d.get("file") or {}).get("by_fs") or {}).items():
            seq = f.get("seq_read") or {}
            cold = seq.get("cold_bytes_per_s")
            lines.append(f"  file {fs} ({f.get('kind')}, {f.get('dir')}): stat {fmt_ns(median(f.get('stat')))}, "
                         f"open+read+close 4 KiB {fmt_ns(median(f.get('open_read_close')))}, seq read cold "
                         f"{(f'{cold / 1e9:.2f} GB/s' if cold else 'not measured')}, warm "
                         f"{(seq.get('warm_bytes_per_s') or 0) / 1e9:.2f} GB/s ({seq.get('note')})")
        m = d.get("machine", {})
        lines.append(f"  machine: {m.get('gpu')}, driver {m.get('driver_version')} ({m.get('libcuda')}), "
                     f"{m.get('cpu')} x{m.get('cpus')}, kernel {m.get('kernel_release')}, platform {d.get('platform')}")
    text = "\n".join(lines)
    print(text)
    with open(os.path.join(out, "probe_summary.txt"), "w") as f:
        f.write(text + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--skip-full", action="store_true", help="only the --quick run")
    a = ap.parse_args()
    probe = os.path.join(a.build, "bin", "wslshim-probe")
    loader = os.path.join(a.build, "tests", "probes", "test_profiles")
    os.makedirs(a.out, exist_ok=True)
    dirs = ["--dir", os.path.abspath(a.out)]
    if os.path.isdir("/dev/shm"):
        dirs += ["--dir", "/dev/shm"]
    runs = []
    for label, extra in (("quick", ["--quick"]), ("full", [])):
        if label == "full" and a.skip_full:
            continue
        path = os.path.join(a.out, f"probe-{label}.json")
        t0 = time.monotonic()
        p = subprocess.run([probe] + extra + dirs + ["--out", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True, timeout=590)
        secs = time.monotonic() - t0
        sys.stderr.write(p.stderr)
        if p.returncode == 1 and os.path.exists(path):
            with open(path) as f:
                d = json.load(f)
            if d.get("gpu_probed") is False:
                print(f"no usable GPU: {d.get('gpu_error')}")
                sys.exit(77)
        if p.returncode != 0:
            problem(f"{label}: wslshim-probe exited {p.returncode}")
            continue
        with open(path) as f:
            d = json.load(f)
        check_complete(d, label)
        lp = subprocess.run([loader, "--load", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) \
            if os.path.exists(loader) else None
        if lp is not None and lp.returncode != 0:
            problem(f"{label}: the profile loader rejected the file: {lp.stderr.strip()}")
        runs.append((label, d, secs))
    if runs:
        summary(runs, a.out)
    if problems:
        print(f"{len(problems)} problem(s)")
        sys.exit(1)
    print("complete")


if __name__ == "__main__":
    main()
