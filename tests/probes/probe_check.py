#!/usr/bin/env python3
"""wslshim-probe against the fake driver (tests/fake_cuda).

  probe_check.py CASE --probe BIN --fake-lib DIR --loader BIN

CASE:
  complete     every figure is there, and the simulated costs (FAKE_CUDA_*_NS)
               show up as lower bounds; the profile loader reads the file back
               to the same figures
  pinned       a pinned ceiling in the driver (FAKE_CUDA_PINNED_MAX) is found
               by the search, within its stated resolution
  no_driver    libcuda.so.1 is not a CUDA driver: a clear message, exit 1,
               the file is still written with the file figures
  no_gpu       --no-gpu: file figures only, the driver is never loaded
  usage        bad options: one line on stderr, exit 2
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def run(args, env_extra, fake_lib):
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = fake_lib
    for k in list(env):
        if k.startswith("FAKE_CUDA_"):
            del env[k]
    env.update(env_extra)
    p = subprocess.run(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    return p


def stat_ok(s, name, at_least=0.0):
    if not isinstance(s, dict):
        fail(f"{name}: missing statistics ({s!r})")
        return False
    for k in ("median_ns", "p10_ns", "p90_ns", "samples"):
        if not isinstance(s.get(k), (int, float)):
            fail(f"{name}.{k} missing")
            return False
    if not (s["p10_ns"] <= s["median_ns"] <= s["p90_ns"]):
        fail(f"{name}: p10 {s['p10_ns']} <= median {s['median_ns']} <= p90 {s['p90_ns']} does not hold")
    if s["samples"] < 3:
        fail(f"{name}: only {s['samples']} samples")
    if s["median_ns"] < at_least:
        fail(f"{name}: median {s['median_ns']} ns, want >= {at_least} (simulated cost)")
    return True


def check_files(d, tmp):
    by_fs = d.get("file", {}).get("by_fs", {})
    if len(by_fs) != 1:
        fail(f"file.by_fs should have one filesystem, has {list(by_fs)}")
        return
    fstype, f = next(iter(by_fs.items()))
    if f.get("dir") != os.path.realpath(tmp):
        fail(f"file.by_fs.{fstype}.dir is {f.get('dir')}, want {tmp}")
    if f.get("error") is not None:
        fail(f"file probe error: {f.get('error')}")
    stat_ok(f.get("open_read_close"), f"file.{fstype}.open_read_close")
    stat_ok(f.get("stat"), f"file.{fstype}.stat")
    seq = f.get("seq_read", {})
    if not seq.get("bytes") or not seq.get("warm_bytes_per_s"):
        fail(f"seq_read incomplete: {seq}")
    if seq.get("cold_bytes_per_s") is None and not seq.get("note"):
        fail("no cold read and no note saying why")
    if not f.get("kind") or not f.get("mount_point"):
        fail(f"file.by_fs.{fstype}: kind/mount_point missing")
    left = os.listdir(tmp)
    if left:
        fail(f"the probe left files behind in {tmp}: {left}")


def case_complete(a, tmp):
    costs = {"FAKE_CUDA_LAUNCH_NS": 20000, "FAKE_CUDA_SYNC_NS": 15000, "FAKE_CUDA_ALLOC_NS": 30000,
             "FAKE_CUDA_FREE_NS": 25000, "FAKE_CUDA_COPY_NS": 12000}
    out = os.path.join(tmp, "..", os.path.basename(tmp) + ".json")
    p = run([a.probe, "--quick", "--pinned-cap", "512M", "--dir", tmp, "--out", out],
            {k: str(v) for k, v in costs.items()}, a.fake_lib)
    if p.returncode != 0:
        fail(f"exit {p.returncode}: {p.stderr.strip()}")
        return
    with open(out) as f:
        d = json.load(f)
    if d.get("schema") != 1 or d.get("platform") not in ("native", "wsl1", "wsl2"):
        fail(f"schema/platform: {d.get('schema')} {d.get('platform')}")
    m = d.get("machine", {})
    for k in ("kernel_release", "wsl", "cpu", "cpus", "mem_total_bytes", "libcuda", "driver_version", "gpu"):
        if m.get(k) in (None, ""):
            fail(f"machine.{k} missing")
    if m.get("gpu") != "Fake GPU" or not str(m.get("libcuda", "")).startswith(os.path.realpath(a.fake_lib)):
        fail(f"machine identity: gpu {m.get('gpu')} libcuda {m.get('libcuda')}")
    if m.get("driver_version") != 13000:
        fail(f"driver_version {m.get('driver_version')}")
    if d.get("gpu_probed") is not True or d.get("gpu_error") is not None:
        fail(f"gpu_probed {d.get('gpu_probed')} error {d.get('gpu_error')}")
    # The contract's five, each at least its simulated cost.
    want = {"launch_ns": costs["FAKE_CUDA_LAUNCH_NS"], "sync_ns": costs["FAKE_CUDA_SYNC_NS"],
            "alloc_ns": costs["FAKE_CUDA_ALLOC_NS"], "free_ns": costs["FAKE_CUDA_FREE_NS"],
            "memcpy_ns": costs["FAKE_CUDA_COPY_NS"]}
    for k, lo in want.items():
        v = d.get(k)
        if not isinstance(v, (int, float)):
            fail(f"{k} missing: {v!r}")
        elif v < lo:
            fail(f"{k} = {v}, want >= {lo}")
    stat_ok(d["launch"].get("async"), "launch.async", costs["FAKE_CUDA_LAUNCH_NS"])
    stat_ok(d["launch"].get("with_sync"), "launch.with_sync",
            costs["FAKE_CUDA_LAUNCH_NS"] + costs["FAKE_CUDA_SYNC_NS"])
    stat_ok(d["sync"].get("idle_stream"), "sync.idle_stream", costs["FAKE_CUDA_SYNC_NS"])
    stat_ok(d["event"].get("record"), "event.record")
    stat_ok(d["event"].get("query"), "event.query")
    sizes = [e["bytes"] for e in d.get("alloc_by_size", [])]
    if sizes != [1 << 20, 64 << 20, 1 << 30]:
        fail(f"alloc_by_size sizes {sizes}")
    for e in d.get("alloc_by_size", []):
        stat_ok(e.get("alloc"), f"alloc {e['bytes']}", costs["FAKE_CUDA_ALLOC_NS"])
        stat_ok(e.get("free"), f"free {e['bytes']}", costs["FAKE_CUDA_FREE_NS"])
    pool = d.get("pool_alloc") or {}
    stat_ok(pool.get("alloc"), "pool_alloc.alloc", costs["FAKE_CUDA_ALLOC_NS"])
    stat_ok(pool.get("free"), "pool_alloc.free", costs["FAKE_CUDA_FREE_NS"])
    pinned = d.get("pinned") or {}
    stat_ok(pinned.get("alloc_1mib"), "pinned.alloc_1mib", costs["FAKE_CUDA_ALLOC_NS"])
    stat_ok(pinned.get("free_1mib"), "pinned.free_1mib")
    if pinned.get("max_bytes") != 512 << 20 or pinned.get("limited_by") != "cap":
        fail(f"pinned search under a 512M cap with no driver limit: {pinned}")
    copies = d.get("copies", [])
    keys = {(c["direction"], c["host"], c["bytes"]) for c in copies}
    for direction in ("htod", "dtoh"):
        for host in ("pinned", "pageable"):
            for size in (4, 64, 1024, 4096, 16384, 65536):
                if (direction, host, size) not in keys:
                    fail(f"copy {direction} {host} {size} missing")
    for c in copies:
        name = f"copy {c['direction']} {c['host']} {c['bytes']}"
        stat_ok(c.get("sync"), name + " sync", costs["FAKE_CUDA_COPY_NS"])
        stat_ok(c.get("async"), name + " async", costs["FAKE_CUDA_COPY_NS"])
    bw = d.get("bandwidth", [])
    if len(bw) != 4:
        fail(f"bandwidth has {len(bw)} entries, want 4")
    for b in bw:
        stat_ok(b.get("per_call"), f"bandwidth {b.get('direction')} {b.get('host')}", costs["FAKE_CUDA_COPY_NS"])
        if not b.get("bytes_per_s") or b["bytes_per_s"] > b["bytes"] / (costs["FAKE_CUDA_COPY_NS"] / 1e9):
            fail(f"bandwidth {b} not consistent with a copy of at least {costs['FAKE_CUDA_COPY_NS']} ns")
    graph = d.get("graph") or {}
    stat_ok(graph.get("launch"), "graph.launch", costs["FAKE_CUDA_LAUNCH_NS"])
    stat_ok(graph.get("launch_sync"), "graph.launch_sync", costs["FAKE_CUDA_LAUNCH_NS"] + costs["FAKE_CUDA_SYNC_NS"])
    if graph.get("kernels") != 100 or not graph.get("per_kernel_ns"):
        fail(f"graph: {graph}")
    check_files(d, tmp)

    # The loader reads the same figures back.
    lp = subprocess.run([a.loader, "--load", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if lp.returncode != 0:
        fail(f"the profile loader rejected the probe's file: {lp.stderr.strip()}")
        return
    prof = json.loads(lp.stdout)
    pairs = {"launch_ns": d["launch_ns"], "memcpy_ns": d["memcpy_ns"], "sync_ns": d["sync_ns"],
             "alloc_ns": d["alloc_ns"], "free_ns": d["free_ns"],
             "launch_sync_ns": d["launch"]["with_sync"]["median_ns"],
             "graph_kernel_ns": graph.get("per_kernel_ns"),
             "pinned_max_bytes": pinned.get("max_bytes"),
             "pool_alloc_ns": pool["alloc"]["median_ns"]}
    for k, v in pairs.items():
        if prof.get(k) != v:
            fail(f"loader: {k} = {prof.get(k)}, file says {v}")
    if prof.get("alloc_sizes") != 3 or prof.get("gpu") != "Fake GPU":
        fail(f"loader: alloc sizes {prof.get('alloc_sizes')} gpu {prof.get('gpu')}")
    fs = next(iter(d["file"]["by_fs"]))
    if prof.get("fs", {}).get(fs, {}).get("stat_ns") != d["file"]["by_fs"][fs]["stat"]["median_ns"]:
        fail(f"loader: file costs of {fs} differ: {prof.get('fs')}")
    os.unlink(out)
    print("complete: launch %.0f ns, sync %.0f ns, alloc %.0f ns, free %.0f ns, memcpy %.0f ns" %
          (d["launch_ns"], d["sync_ns"], d["alloc_ns"], d["free_ns"], d["memcpy_ns"]))


def case_pinned(a, tmp):
    for limit_mib, cap in ((700, "4G"), (1536, "8G"), (100, "4G")):
        p = run([a.probe, "--quick", "--pinned-cap", cap, "--dir", tmp],
                {"FAKE_CUDA_PINNED_MAX": str(limit_mib << 20)}, a.fake_lib)
        if p.returncode != 0:
            fail(f"exit {p.returncode}: {p.stderr.strip()}")
            continue
        pinned = json.loads(p.stdout)["pinned"]
        limit = limit_mib << 20
        got, res = pinned["max_bytes"], pinned["resolution_bytes"]
        if pinned["limited_by"] != "driver" or not (limit - res <= got <= limit):
            fail(f"driver limit {limit_mib} MiB: found {got} (resolution {res}), {pinned['limited_by']}")
        else:
            print(f"pinned: limit {limit_mib} MiB found as {got >> 20} MiB in {pinned['attempts']} attempts")


def case_no_driver(a, tmp):
    # A library that is not a CUDA driver, under the driver's name.
    libdir = os.path.join(tmp, "..", os.path.basename(tmp) + "-lib")
    os.makedirs(libdir, exist_ok=True)
    libm = None
    for cand in ("/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6", "/lib64/libm.so.6",
                 "/usr/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"):
        if os.path.exists(cand):
            libm = cand
            break
    if not libm:
        print("no libm.so.6 found to stand in for a broken driver; skipping")
        return
    link = os.path.join(libdir, "libcuda.so.1")
    if not os.path.exists(link):
        os.symlink(libm, link)
    p = run([a.probe, "--quick", "--dir", tmp], {}, libdir)
    shutil.rmtree(libdir)
    if p.returncode != 1:
        fail(f"not a driver: exit {p.returncode}, want 1")
    lines = [l for l in p.stderr.splitlines() if l.strip()]
    if not lines or "lacks cuInit" not in p.stderr or "file figures measured" not in p.stderr:
        fail(f"not a driver: message {p.stderr!r}")
    d = json.loads(p.stdout)
    if d.get("gpu_probed") is not False or "lacks cuInit" not in (d.get("gpu_error") or ""):
        fail(f"not a driver: gpu_probed {d.get('gpu_probed')} gpu_error {d.get('gpu_error')}")
    for k in ("launch_ns", "memcpy_ns", "sync_ns", "alloc_ns", "free_ns"):
        if k not in d or d[k] is not None:
            fail(f"not a driver: {k} should be present and null, is {d.get(k, 'absent')}")
    check_files(d, tmp)


def case_no_gpu(a, tmp):
    p = run([a.probe, "--quick", "--no-gpu", "--dir", tmp], {}, a.fake_lib)
    if p.returncode != 0:
        fail(f"--no-gpu: exit {p.returncode}: {p.stderr.strip()}")
        return
    d = json.loads(p.stdout)
    if d.get("gpu_probed") is not False or d["machine"].get("libcuda") is not None:
        fail(f"--no-gpu probed the GPU or loaded a driver: {d.get('gpu_probed')} {d['machine'].get('libcuda')}")
    if d.get("launch_ns") is not None:
        fail("--no-gpu: launch_ns should be null")
    check_files(d, tmp)
    # The loader takes a GPU-less file: the five are unknown.
    out = os.path.join(tmp, "..", os.path.basename(tmp) + "-nogpu.json")
    with open(out, "w") as f:
        f.write(p.stdout)
    lp = subprocess.run([a.loader, "--load", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    os.unlink(out)
    if lp.returncode != 0 or json.loads(lp.stdout).get("launch_ns") is not None:
        fail(f"loader on a --no-gpu file: {lp.returncode} {lp.stdout} {lp.stderr}")


def case_usage(a, tmp):
    bad = [["--bogus"], ["--out"], ["--dir"], ["--dir", "/nonexistent/x"], ["--dir", "/etc/hostname"],
           ["--pinned-cap", "lots"], ["--pinned-cap", "12Q"], ["--pinned-cap", "0"], ["--pinned-cap", "-1G"],
           ["--out", "/nonexistent/dir/cal.json"], ["--quick", "extra"]]
    for args in bad:
        p = run([a.probe] + args, {}, a.fake_lib)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("wslshim-probe: ") or p.stdout:
            fail(f"{args}: exit {p.returncode}, stderr {p.stderr!r}, stdout {len(p.stdout)} bytes")
    p = run([a.probe, "--help"], {}, a.fake_lib)
    if p.returncode != 0 or "--pinned-cap" not in p.stdout:
        fail(f"--help: exit {p.returncode}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["complete", "pinned", "no_driver", "no_gpu", "usage"])
    ap.add_argument("--probe", required=True)
    ap.add_argument("--fake-lib", required=True)
    ap.add_argument("--loader", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wslshim-probe-test-")
    try:
        globals()["case_" + a.case](a, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} failure(s)")
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
