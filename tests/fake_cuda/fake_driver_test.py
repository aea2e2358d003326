#!/usr/bin/env python3
"""Checks of the fake libcuda.so.1 itself, through ctypes.

  fake_driver_test.py exports LIB HOOK_ROWS
      HOOK_ROWS prints the shim's hook list (symbol base version per_thread).
      Every row must be exported by the fake and handed out by
      cuGetProcAddress_v2(base, version, per-thread flag) as that very address,
      never below its version, never without the per-thread flag when it is a
      per-thread variant; the deliberately missing rows (cuEventRecordWithFlags
      and its _ptsz) must be neither exported nor resolvable. The library's
      SONAME must be libcuda.so.1.

  fake_driver_test.py costs LIB
      each FAKE_CUDA_*_NS knob slows its own calls, and only those.
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

MISSING = {"cuEventRecordWithFlags", "cuEventRecordWithFlags_ptsz"}
PT = 2  # CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
CUDA_SUCCESS, CUDA_ERROR_NOT_FOUND = 0, 500
SUCCESS, SYMBOL_NOT_FOUND, VERSION_NOT_SUFFICIENT = 0, 1, 2

failures = []


def fail(msg):
    failures.append(msg)
    print("FAIL:", msg)


def load(path):
    lib = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_LOCAL)
    gpa = lib.cuGetProcAddress_v2
    gpa.restype = ctypes.c_int
    gpa.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_uint64,
                    ctypes.POINTER(ctypes.c_int)]
    return lib


def lookup(lib, base, version, flags):
    p = ctypes.c_void_p(1)
    status = ctypes.c_int(-1)
    rc = lib.cuGetProcAddress_v2(base.encode(), ctypes.byref(p), version, flags, ctypes.byref(status))
    return rc, p.value, status.value


def exported(lib, sym):
    try:
        return ctypes.cast(getattr(lib, sym), ctypes.c_void_p).value
    except AttributeError:
        return None


def check_exports(lib_path, rows_bin):
    rows = [line.split() for line in subprocess.run([rows_bin], check=True, stdout=subprocess.PIPE,
                                                     text=True).stdout.splitlines() if line.strip()]
    if len(rows) < 50:
        fail(f"{rows_bin} printed only {len(rows)} rows")
    lib = load(lib_path)
    for sym, base, ver, pt in rows:
        ver, pt = int(ver), int(pt)
        flags = PT if pt else 0
        addr = exported(lib, sym)
        rc, p, st = lookup(lib, base, ver, flags)
        if sym in MISSING:
            if addr is not None:
                fail(f"{sym} is exported but must be missing")
            if (rc, p, st) != (CUDA_ERROR_NOT_FOUND, None, SYMBOL_NOT_FOUND):
                fail(f"{base}@{ver} flags {flags}: got rc {rc} ptr {p} status {st}, want not found")
            continue
        if addr is None:
            fail(f"{sym} (hooked) is not exported")
            continue
        if (rc, st) != (CUDA_SUCCESS, SUCCESS) or p != addr:
            fail(f"{base}@{ver} flags {flags}: rc {rc} status {st}, not {sym}")
        rc, p, st = lookup(lib, base, ver - 1, flags)
        if p == addr:
            fail(f"{base}@{ver - 1} flags {flags} gave {sym}, which starts at {ver}")
        if rc != CUDA_SUCCESS and (rc, p, st) != (CUDA_ERROR_NOT_FOUND, None, VERSION_NOT_SUFFICIENT):
            fail(f"{base}@{ver - 1}: rc {rc} ptr {p} status {st}")
        if pt:
            rc, p, st = lookup(lib, base, ver, 0)
            if p == addr:
                fail(f"{base}@{ver} without the per-thread flag gave {sym}")
    # cuGetProcAddress resolves itself by ABI.
    for ver, want in ((11030, "cuGetProcAddress"), (11999, "cuGetProcAddress"),
                      (12000, "cuGetProcAddress_v2"), (13000, "cuGetProcAddress_v2")):
        rc, p, st = lookup(lib, "cuGetProcAddress", ver, 0)
        if (rc, st) != (CUDA_SUCCESS, SUCCESS) or p != exported(lib, want):
            fail(f"cuGetProcAddress@{ver} did not give {want}")
    rc, p, st = lookup(lib, "cuGetProcAddress", 11020, 0)
    if (rc, p, st) != (CUDA_ERROR_NOT_FOUND, None, VERSION_NOT_SUFFICIENT):
        fail(f"cuGetProcAddress@11020: rc {rc} ptr {p} status {st}")
    rc, p, st = lookup(lib, "cuNoSuchFunction", 13000, 0)
    if (rc, p, st) != (CUDA_ERROR_NOT_FOUND, None, SYMBOL_NOT_FOUND):
        fail(f"cuNoSuchFunction: rc {rc} ptr {p} status {st}")
    readelf = shutil.which("readelf")
    if readelf:
        dyn = subprocess.run([readelf, "-d", lib_path], check=True, stdout=subprocess.PIPE, text=True).stdout
        if "Library soname: [libcuda.so.1]" not in dyn:
            fail(f"{lib_path}: SONAME is not libcuda.so.1")
    if os.path.basename(os.path.realpath(lib_path)) != "libcuda.so.1":
        fail(f"{lib_path} is not a file named libcuda.so.1")
    if not os.path.exists(os.path.join(os.path.dirname(lib_path), "libcuda.so")):
        fail("no libcuda.so next to the fake for -lcuda")
    print(f"checked {len(rows)} hook rows against {lib_path}")


# ---- cost knobs ------------------------------------------------------------------
KNOBS = {"launch": "FAKE_CUDA_LAUNCH_NS", "sync": "FAKE_CUDA_SYNC_NS", "alloc": "FAKE_CUDA_ALLOC_NS",
         "free": "FAKE_CUDA_FREE_NS", "copy": "FAKE_CUDA_COPY_NS"}
KNOB_NS = 30_000_000
REPEAT = 3


def costs_child(lib_path):
    """Times one call of each kind (min of REPEAT); prints JSON {kind: ns}."""
    lib = ctypes.CDLL(lib_path)
    vp = ctypes.c_void_p
    assert lib.cuInit(0) == 0
    mod, fn = vp(), vp()
    assert lib.cuModuleLoadData(ctypes.byref(mod), b"image") == 0
    assert lib.cuModuleGetFunction(ctypes.byref(fn), mod, b"kernel") == 0
    lib.cuLaunchKernel.argtypes = [vp] + [ctypes.c_uint] * 7 + [vp, vp, vp]
    lib.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.c_size_t]
    lib.cuMemFree_v2.argtypes = [ctypes.c_uint64]
    lib.cuMemcpyHtoD_v2.argtypes = [ctypes.c_uint64, vp, ctypes.c_size_t]
    buf = ctypes.create_string_buffer(64)
    ptrs = []

    def alloc():
        d = ctypes.c_uint64()
        assert lib.cuMemAlloc_v2(ctypes.byref(d), 256) == 0
        ptrs.append(d.value)

    def launch():
        assert lib.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, None, None, None) == 0

    def sync():
        assert lib.cuCtxSynchronize() == 0

    def copy():
        assert lib.cuMemcpyHtoD_v2(ptrs[0], buf, 64) == 0

    def free():
        assert lib.cuMemFree_v2(ptrs.pop()) == 0

    ops = {"alloc": alloc, "launch": launch, "sync": sync, "copy": copy}
    best = {}
    for _ in range(REPEAT):
        alloc()  # spares for copy and free
    for kind, op in ops.items():
        for _ in range(REPEAT):
            t0 = time.perf_counter_ns()
            op()
            best[kind] = min(best.get(kind, 1 << 62), time.perf_counter_ns() - t0)
    for _ in range(REPEAT):
        t0 = time.perf_counter_ns()
        free()
        best["free"] = min(best.get("free", 1 << 62), time.perf_counter_ns() - t0)
    print(json.dumps(best))


def check_costs(lib_path):
    for knob in [None] + list(KNOBS):
        env = {k: v for k, v in os.environ.items() if k not in KNOBS.values()}
        if knob:
            env[KNOBS[knob]] = str(KNOB_NS)
        out = subprocess.run([sys.executable, __file__, "costs-child", lib_path], env=env, check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        best = json.loads(out)
        for kind, ns in best.items():
            if kind == knob and ns < KNOB_NS:
                fail(f"{KNOBS[knob]}={KNOB_NS}: {kind} took only {ns} ns")
            if kind != knob and ns >= KNOB_NS // 2:
                fail(f"{KNOBS[knob] if knob else 'no knob'}: {kind} took {ns} ns, should be unaffected")
        print(f"{KNOBS[knob] if knob else 'no knob':20} " + " ".join(f"{k}={v / 1e6:.3f}ms" for k, v in best.items()))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "costs-child":
        costs_child(sys.argv[2])
        return 0
    if len(sys.argv) == 4 and sys.argv[1] == "exports":
        check_exports(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "costs":
        check_costs(sys.argv[2])
    else:
        print(__doc__)
        return 2
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
