#!/usr/bin/env python3
"""The two zstd command lines the trace checks use (tests/unit/relayout.py, packed_traces_gpu.py), through
libzstd, for GPU hosts that have the library but not the zstd command: link it as `zstd` on PATH.

    zstd -dcq FILE        decompress FILE to stdout (a cut stream: what came out, then exit 1)
    zstd -q -1 -c         compress stdin at level 1 to stdout
"""
import ctypes
import ctypes.util
import sys


class Buf(ctypes.Structure):
    _fields_ = [("ptr", ctypes.c_void_p), ("size", ctypes.c_size_t), ("pos", ctypes.c_size_t)]


def lib():
    z = ctypes.CDLL(ctypes.util.find_library("zstd") or "libzstd.so.1")
    z.ZSTD_createDStream.restype = ctypes.c_void_p
    z.ZSTD_decompressStream.restype = ctypes.c_size_t
    z.ZSTD_decompressStream.argtypes = [ctypes.c_void_p, ctypes.POINTER(Buf), ctypes.POINTER(Buf)]
    z.ZSTD_isError.argtypes = [ctypes.c_size_t]
    z.ZSTD_compressBound.restype = ctypes.c_size_t
    z.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
    z.ZSTD_compress.restype = ctypes.c_size_t
    z.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
    return z


def decompress(z, path):
    data = open(path, "rb").read()
    ds = z.ZSTD_createDStream()
    z.ZSTD_initDStream(ctypes.c_void_p(ds))
    src = ctypes.create_string_buffer(data, len(data))
    inb = Buf(ctypes.cast(src, ctypes.c_void_p), len(data), 0)
    out = ctypes.create_string_buffer(1 << 20)
    ok, last = True, 0
    while True:
        ob = Buf(ctypes.cast(out, ctypes.c_void_p), len(out), 0)
        r = z.ZSTD_decompressStream(ctypes.c_void_p(ds), ctypes.byref(ob), ctypes.byref(inb))
        sys.stdout.buffer.write(out.raw[:ob.pos])
        if z.ZSTD_isError(r):
            ok = False
            break
        if inb.pos == inb.size and ob.pos < len(out):
            ok = r == 0  # a frame left unfinished: a cut stream
            break
    sys.stdout.flush()
    return 0 if ok else 1


def compress(z, level):
    data = sys.stdin.buffer.read()
    cap = z.ZSTD_compressBound(len(data))
    out = ctypes.create_string_buffer(cap)
    n = z.ZSTD_compress(out, cap, data, len(data), level)
    if z.ZSTD_isError(n):
        return 1
    sys.stdout.buffer.write(out.raw[:n])
    return 0


def main(argv):
    z = lib()
    if argv[:1] == ["-dcq"] and len(argv) == 2:
        return decompress(z, argv[1])
    if argv == ["-q", "-1", "-c"]:
        return compress(z, 1)
    sys.stderr.write("zstd_cli.py: only 'zstd -dcq FILE' and 'zstd -q -1 -c'\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
