#!/usr/bin/env python3
"""wslshim-doctor on fixture trees (--root): a broken WSL2 layout, a healthy
WSL2 layout, a native layout, and bad options.

  doctor_check.py CASE --doctor BIN

The fixtures are built here, file by file: osrelease, mountinfo, meminfo,
cgroup, device nodes, libcuda files and symlinks, a binary ld.so.cache in
glibc's 1.1 format, a .wslconfig, a toolkit's cuda.h, a probe file.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def write(root, path, text, mode="w"):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, mode) as f:
        f.write(text)


def symlink(root, path, target):
    full = os.path.join(root, path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    os.symlink(target, full)


def ld_cache(entries):
    """glibc's new-format ld.so.cache: header, 24-byte entries, strings; offsets from the header."""
    header_size, entry_size = 48, 24
    strings = b""
    offsets = []
    base = header_size + entry_size * len(entries)
    for key, value in entries:
        k = base + len(strings)
        strings += key.encode() + b"\0"
        v = base + len(strings)
        strings += value.encode() + b"\0"
        offsets.append((k, v))
    out = b"glibc-ld.so.cache" + b"1.1"
    out += struct.pack("<IIB3xI3I", len(entries), len(strings), 2, 0, 0, 0, 0)
    assert len(out) == header_size
    for k, v in offsets:
        out += struct.pack("<iIIIQ", 0x0303, k, v, 0, 0)
    return out + strings


MOUNTS_WSL2 = """\
61 56 8:32 / / rw,relatime - ext4 /dev/sdc rw,discard,errors=remount-ro,data=ordered
64 61 0:56 / /usr/lib/wsl/drivers ro,nosuid,nodev,noatime - 9p drivers ro,dirsync,aname=drivers;fmask=222;dmask=222,mmap,access=client,msize=65536,trans=fd,rfd=8,wfd=8
77 61 0:71 / /mnt/c rw,noatime - 9p C:\\134 rw,dirsync,aname=drvfs;path=C:\\134;uid=1000;gid=1000;symlinkroot=/mnt/,mmap,access=client,msize=65536,trans=fd,rfd=5,wfd=5
70 61 0:62 / /mnt/wsl rw,relatime shared:1 - tmpfs none rw
"""

MOUNTS_NATIVE = """\
25 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw,errors=remount-ro
40 25 0:45 / /data rw,relatime shared:20 - nfs4 fileserver:/export/data rw,vers=4.2,rsize=1048576
30 25 0:26 / /dev/shm rw,nosuid,nodev shared:4 - tmpfs tmpfs rw
"""


def probe_file(root, name, driver_version, pinned_max, limited_by):
    d = {"schema": 1, "platform": "wsl2", "launch_ns": 7000, "memcpy_ns": 6000, "sync_ns": 9000,
         "alloc_ns": 90000, "free_ns": 30000, "machine": {"driver_version": driver_version, "gpu": "NVIDIA H200"},
         "pinned": {"max_bytes": pinned_max, "limited_by": limited_by, "alloc_1mib": {"median_ns": 300000}}}
    path = os.path.join(root, "..", name)
    with open(path, "w") as f:
        json.dump(d, f)
    return os.path.abspath(path)


def wsl2_tree(root, stray=True):
    write(root, "/proc/sys/kernel/osrelease", "5.15.167.4-microsoft-standard-WSL2\n")
    write(root, "/proc/self/mountinfo", MOUNTS_WSL2)
    write(root, "/proc/meminfo", "MemTotal:        8029128 kB\nMemFree:         6000000 kB\n"
                                 "MemAvailable:    7000000 kB\nSwapTotal:       2097152 kB\n")
    write(root, "/sys/fs/cgroup/memory.max", "max\n")
    write(root, "/dev/dxg", "")
    write(root, "/usr/lib/wsl/lib/libcuda.so.1.1", "ELF-ish")
    symlink(root, "/usr/lib/wsl/lib/libcuda.so.1", "libcuda.so.1.1")
    entries = [("libc.so.6", "/lib/x86_64-linux-gnu/libc.so.6")]
    if stray:
        write(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14", "ELF-ish")
        symlink(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.550.54.14")
        entries.append(("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"))
    entries.append(("libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1"))
    write(root, "/etc/ld.so.cache", ld_cache(entries), "wb")
    write(root, "/mnt/c/Users/alice/.wslconfig", "[wsl2]\r\nmemory=8GB\r\nswap=2GB\r\n")
    write(root, "/usr/local/cuda/include/cuda.h", "/* toolkit */\n#define CUDA_VERSION 12040\n")
    write(root, "/usr/local/cuda/version.json", json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.1"}}))


def native_tree(root, devices=True):
    write(root, "/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    write(root, "/proc/self/mountinfo", MOUNTS_NATIVE)
    write(root, "/proc/meminfo", "MemTotal:       131072000 kB\nMemAvailable:   120000000 kB\nSwapTotal: 0 kB\n")
    write(root, "/sys/fs/cgroup/memory.max", "34359738368\n")
    if devices:
        write(root, "/dev/nvidia0", "")
        write(root, "/dev/nvidiactl", "")
    write(root, "/proc/driver/nvidia/version",
          "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue Jan 1 00:00:00 UTC 2026\n"
          "GCC version:  gcc version 13.3.0\n")
    write(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04", "ELF-ish")
    symlink(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "libcuda.so.580.159.04")
    write(root, "/etc/ld.so.cache", ld_cache([("libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")]), "wb")
    write(root, "/usr/local/cuda/include/cuda.h", "#define CUDA_VERSION 13000\n")


def doctor(a, root, args, env_extra=None, json_out=True):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "WSL_DISTRO_NAME", "CUDA_HOME")}
    env.update(env_extra or {})
    cmd = [a.doctor, "--root", root] + (["--json"] if json_out else []) + args
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    if p.returncode != 0:
        fail(f"{cmd}: exit {p.returncode}: {p.stderr.strip()}")
        return None
    return json.loads(p.stdout) if json_out else p.stdout


def by_id(d, fid):
    return [f for f in d["findings"] if f["id"] == fid]


def expect(d, fid, status, *needles, where="summary", index=0):
    fs = by_id(d, fid)
    if len(fs) <= index:
        fail(f"no finding {fid}[{index}]; have {[f['id'] for f in d['findings']]}")
        return None
    f = fs[index]
    if f["status"] != status:
        fail(f"{fid}: status {f['status']}, want {status}: {f['summary']}")
    text = f["summary"] if where == "summary" else "\n".join(f["evidence"]) if where == "evidence" else f["fix"] or ""
    for n in needles:
        if n not in text:
            fail(f"{fid}: {where} lacks {n!r}: {text!r}")
    return f


def case_wsl2(a, tmp):
    root = os.path.join(tmp, "wsl2")
    wsl2_tree(root)
    probe = probe_file(root, "probe-wsl2.json", 12040, 768 << 20, "driver")
    d = doctor(a, root, ["--path", "/mnt/c/data/imagenet", "--path", "/home/alice/data", "--probe", probe])
    if not d:
        return
    if d["platform"] != "wsl2" or d["schema"] != 1:
        fail(f"platform {d['platform']}")
    expect(d, "platform", "ok", "WSL2")
    expect(d, "platform", "ok", "microsoft-standard-WSL2", where="evidence")
    expect(d, "gpu_device", "ok", "/dev/dxg")
    f = expect(d, "libcuda", "error", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "instead of WSL's")
    if f:
        ev = f["evidence"]
        if not (ev and ev[0].startswith("1. /usr/lib/x86_64-linux-gnu/libcuda.so.1 -> "
                                       "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.14 (ld.so.cache)")):
            fail(f"libcuda evidence should list the Linux driver first, via ld.so.cache: {ev}")
        if not any(e.startswith("2. /usr/lib/wsl/lib/libcuda.so.1 -> /usr/lib/wsl/lib/libcuda.so.1.1") for e in ev):
            fail(f"libcuda evidence should list WSL's second: {ev}")
        if "never to install" not in (f["fix"] or ""):
            fail(f"libcuda fix: {f['fix']}")
    expect(d, "linux_driver_in_wsl", "error", "Linux NVIDIA driver")
    expect(d, "linux_driver_in_wsl", "error", "libcuda.so.550.54.14", where="evidence")
    if by_id(d, "wsl_driver_lib"):
        fail("wsl_driver_lib reported although /usr/lib/wsl/lib/libcuda.so.1 exists")
    expect(d, "data_location", "warn", "/mnt/c/data/imagenet", "Windows drive", "9p", index=0)
    expect(d, "data_location", "warn", "aname=drvfs", where="evidence", index=0)
    expect(d, "data_location", "warn", "into the Linux filesystem", where="fix", index=0)
    expect(d, "data_location", "ok", "/home/alice/data", "ext4", index=1)
    expect(d, "memory", "warn", "7.7 GiB")
    expect(d, "memory", "warn", "memory=8GB", ".wslconfig", where="evidence")
    expect(d, "memory", "warn", ".wslconfig", where="fix")
    expect(d, "pinned_memory", "warn", "above 768 MiB")
    expect(d, "versions", "ok", "CUDA 12.4")
    expect(d, "versions", "ok", "12.4.1", where="evidence")
    if d["counts"]["error"] != 2 or d["counts"]["warn"] != 3:
        fail(f"counts {d['counts']}")

    # LD_LIBRARY_PATH comes before the cache.
    write(root, "/opt/nv/lib/libcuda.so.1", "ELF-ish")
    d = doctor(a, root, ["--path", "/home/alice"], {"LD_LIBRARY_PATH": "/nowhere:/opt/nv/lib"})
    if d:
        f = expect(d, "libcuda", "error", "/opt/nv/lib/libcuda.so.1")
        if f and not f["evidence"][0].endswith("(LD_LIBRARY_PATH)"):
            fail(f"LD_LIBRARY_PATH candidate not first: {f['evidence']}")
        expect(d, "libcuda", "error", "LD_LIBRARY_PATH=/nowhere:/opt/nv/lib", where="evidence")
        expect(d, "pinned_memory", "info", "not measured")
        expect(d, "pinned_memory", "info", "microsoft/WSL#14078", where="evidence")

    # GPUs hidden, and the text output.
    out = doctor(a, root, [], {"CUDA_VISIBLE_DEVICES": ""}, json_out=False)
    if out is not None:
        for line in ("wslshim doctor: wsl2 (kernel 5.15.167.4-microsoft-standard-WSL2)",
                     "[ERROR] libcuda: a process would load /usr/lib/x86_64-linux-gnu/libcuda.so.1",
                     "[ERROR] cuda_visible_devices: CUDA_VISIBLE_DEVICES hides every GPU",
                     "        evidence: CUDA_VISIBLE_DEVICES=", "        fix: unset CUDA_VISIBLE_DEVICES"):
            if line not in out:
                fail(f"text output lacks {line!r}:\n{out}")


def case_wsl2_healthy(a, tmp):
    root = os.path.join(tmp, "wsl2ok")
    wsl2_tree(root, stray=False)
    write(root, "/proc/meminfo", "MemTotal:  65000000 kB\nMemAvailable: 60000000 kB\nSwapTotal: 0 kB\n")
    d = doctor(a, root, ["--path", "/home/alice/data"], {"CUDA_VISIBLE_DEVICES": "0"})
    if not d:
        return
    expect(d, "libcuda", "ok", "/usr/lib/wsl/lib/libcuda.so.1", "WSL's")
    if by_id(d, "linux_driver_in_wsl"):
        fail("linux_driver_in_wsl without a Linux driver")
    expect(d, "data_location", "ok", "ext4")
    expect(d, "memory", "ok", "GiB of memory")
    expect(d, "cuda_visible_devices", "info", "restricts")
    expect(d, "versions", "info", "toolkit is CUDA 12.4")
    if d["counts"]["error"] or d["counts"]["warn"]:
        fail(f"a healthy WSL2 layout has findings: {[(f['id'], f['status']) for f in d['findings']]}")
    # No /dev/dxg, no WSL driver library.
    os.unlink(os.path.join(root, "dev/dxg"))
    os.unlink(os.path.join(root, "usr/lib/wsl/lib/libcuda.so.1"))
    d = doctor(a, root, [])
    if d:
        expect(d, "gpu_device", "error", "no /dev/dxg")
        expect(d, "libcuda", "error", "no libcuda.so.1")
        expect(d, "wsl_driver_lib", "error", "missing")


def case_native(a, tmp):
    root = os.path.join(tmp, "native")
    native_tree(root)
    probe = probe_file(root, "probe-native.json", 12080, 64 << 30, "cap")
    d = doctor(a, root, ["--path", "/data/set1", "--path", "/home/u", "--probe", probe])
    if not d:
        return
    if d["platform"] != "native":
        fail(f"platform {d['platform']}")
    expect(d, "platform", "ok", "native Linux")
    expect(d, "gpu_device", "ok", "1 NVIDIA device node")
    expect(d, "gpu_device", "ok", "580.159.04", where="evidence")
    expect(d, "libcuda", "ok", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    expect(d, "libcuda", "ok", "libcuda.so.580.159.04", where="evidence")
    expect(d, "data_location", "info", "/data/set1", "nfs4", index=0)
    expect(d, "data_location", "ok", "/home/u", "ext4", index=1)
    expect(d, "memory", "warn", "limited to 32.0 GiB")
    expect(d, "memory", "warn", "/sys/fs/cgroup/memory.max", where="evidence")
    expect(d, "versions", "error", "toolkit (13.0) is newer than the driver supports (12.8)")
    expect(d, "pinned_memory", "ok", "64.0 GiB", "cap")
    for fid in ("linux_driver_in_wsl", "wsl_driver_lib", "gpu_device_nodes"):
        if by_id(d, fid):
            fail(f"{fid} on a native machine")

    # The WSL library on a native machine, and no device nodes.
    write(root, "/usr/lib/wsl/lib/libcuda.so.1", "ELF-ish")
    os.unlink(os.path.join(root, "dev/nvidia0"))
    d = doctor(a, root, [], {"LD_LIBRARY_PATH": "/usr/lib/wsl/lib"})
    if d:
        expect(d, "libcuda", "error", "WSL's", "not WSL2")
        expect(d, "gpu_device", "error", "no NVIDIA device nodes")


def case_usage(a, tmp):
    bad_probe = os.path.join(tmp, "bad.json")
    with open(bad_probe, "w") as f:
        f.write('{"schema": 1, "platform": "x", "launch_ns": "fast"}')
    for args in (["--bogus"], ["--root"], ["--root", "/nonexistent/root"], ["--path"], ["--probe", bad_probe],
                 ["--probe", "/nonexistent/p.json"], ["json"]):
        p = subprocess.run([a.doctor] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if p.returncode != 2 or len(lines) != 1 or not lines[0].startswith("wslshim-doctor: ") or p.stdout:
            fail(f"{args}: exit {p.returncode}, stderr {p.stderr!r}")
    # Every option as --opt VALUE and --opt=VALUE (one parser for every tool): the same report.
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    forms = [subprocess.run([a.doctor, "--json"] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            timeout=60) for args in (["--root", empty, "--path", tmp], [f"--root={empty}", f"--path={tmp}"])]
    if any(f.returncode != 0 for f in forms) or json.loads(forms[0].stdout).get("root") != \
            json.loads(forms[1].stdout).get("root"):
        fail(f"--opt VALUE and --opt=VALUE differ: {[(f.returncode, f.stderr[-200:]) for f in forms]}")
    v = subprocess.run([a.doctor, "--version"], stdout=subprocess.PIPE, text=True, timeout=60)
    if v.returncode != 0 or not v.stdout.startswith("wslshim-doctor "):
        fail(f"--version: {v.returncode} {v.stdout!r}")
    # An empty root: every check copes, nothing crashes, exit 0.
    d = doctor(a, empty, [])
    if d is not None:
        expect(d, "platform", "warn", "cannot read the kernel release")
        expect(d, "libcuda", "error", "no libcuda.so.1")
    # A corrupt ld.so.cache is reported, not trusted.
    native_tree(os.path.join(tmp, "corrupt"))
    write(os.path.join(tmp, "corrupt"), "/etc/ld.so.cache", b"glibc-ld.so.cache1.1" + b"\xff" * 40, "wb")
    d = doctor(a, os.path.join(tmp, "corrupt"), [])
    if d is not None:
        expect(d, "libcuda", "ok", "/usr/lib/x86_64-linux-gnu/libcuda.so.1")  # the loader's default folder
        expect(d, "libcuda", "ok", "/etc/ld.so.cache: truncated", "(default directory)", where="evidence")
    # Garbage caches, mount tables and .wslconfig files: never a crash, always exit 0 with findings.
    import random
    rnd = random.Random(6)
    root = os.path.join(tmp, "fuzz")
    wsl2_tree(root)
    good_cache = ld_cache([("libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1")] * 3)
    for i in range(40):
        cache = bytearray(good_cache)
        for _ in range(rnd.randint(1, 8)):
            cache[rnd.randrange(20, len(cache))] = rnd.randrange(256)
        if i % 4 == 0:
            cache = cache[:rnd.randrange(20, len(cache))]
        write(root, "/etc/ld.so.cache", bytes(cache), "wb")
        lines = MOUNTS_WSL2.splitlines()
        line = list(rnd.choice(lines))
        for _ in range(rnd.randint(1, 5)):
            line[rnd.randrange(len(line))] = rnd.choice(" -\\:0a\t")
        write(root, "/proc/self/mountinfo", "\n".join(lines + ["".join(line)]) + "\n")
        write(root, "/mnt/c/Users/alice/.wslconfig", bytes(rnd.randrange(256) for _ in range(200)), "wb")
        d = doctor(a, root, ["--path", "/mnt/c/x"])
        if d is None or not d.get("findings"):
            fail(f"fuzz round {i}: no findings")
            break
    p = subprocess.run([a.doctor, "--help"], stdout=subprocess.PIPE, text=True)
    if p.returncode != 0 or "--root" not in p.stdout:
        fail("--help")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case", choices=["wsl2", "wsl2_healthy", "native", "usage"])
    ap.add_argument("--doctor", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wslshim-doctor-test-")
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
