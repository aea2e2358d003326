"""In-process A/B for Python file reads (run by run_io_bench.sh; measured, not asserted).

    py_ab.py DIR N [--idle-thread]

Reads the first N files of DIR (named f*), each once, in 64 rounds, each of
two batches of N/128 files in turn: one with `with open(p, 'rb') as f:
f.read()` (the calls the shim hooks) and one by raw system calls through
ctypes (which it does not see). Prints "ratio", the median over pairs of
rounds of the geometric mean of their first's time over the second's (which
batch goes first alternates, and the second of a round runs faster: a pair
has each order once, as bench_io's pair_median). The shim's cost is that
ratio with the shim over the ratio without it, minus 1. Both batches run a few ms apart in one process, so a
shared host's drifting speed cancels out. --idle-thread starts a thread that
waits, as PyTorch or any thread pool does: the program is then
multi-threaded without the shim too.
"""
import ctypes
import os
import platform
import statistics
import sys
import threading
import time

SYSCALLS = {"x86_64": (257, 0, 3), "aarch64": (56, 63, 57)}  # openat, read, close


def main():
    d, n = sys.argv[1], int(sys.argv[2])
    if "--idle-thread" in sys.argv[3:]:
        threading.Thread(target=threading.Event().wait, daemon=True).start()
    nums = SYSCALLS.get(platform.machine())
    if nums is None:
        print(f"py_ab: no system call numbers for {platform.machine()}", file=sys.stderr)
        return 2
    sys_openat, sys_read, sys_close = nums
    names = sorted(x for x in os.listdir(d) if x.startswith("f"))[:n]
    paths = [os.path.join(d, x) for x in names]
    raw_paths = [p.encode() for p in paths]
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    buf = ctypes.create_string_buffer(8192)

    def raw(batch):
        for p in batch:
            fd = syscall(sys_openat, -100, p, os.O_RDONLY)  # AT_FDCWD
            if fd < 0:
                raise OSError(ctypes.get_errno(), p)
            while syscall(sys_read, fd, buf, 8192) > 0:
                pass
            syscall(sys_close, fd)

    def hooked(batch):
        for p in batch:
            with open(p, "rb") as f:
                f.read()

    rounds = 64
    per = len(paths) // (2 * rounds)
    if per < 1:
        print(f"py_ab: {len(paths)} files, need at least {2 * rounds}", file=sys.stderr)
        return 2
    ratios, per_file = [], []
    for k in range(rounds):
        t = {}
        for j, which in enumerate((hooked, raw) if k % 2 == 0 else (raw, hooked)):
            first = (2 * k + j) * per  # each batch has files of its own
            batch = (paths if which is hooked else raw_paths)[first:first + per]
            t0 = time.perf_counter_ns()
            which(batch)
            t[which] = time.perf_counter_ns() - t0
        ratios.append(t[hooked] / t[raw])
        per_file.append(t[hooked] / per)
    pairs = [(ratios[k] * ratios[k + 1]) ** 0.5 for k in range(0, rounds - 1, 2)]
    print('{"files": %d, "py_ns_per_file": %.0f, "ratio": %.4f}'
          % (2 * per * rounds, statistics.median(per_file), statistics.median(pairs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
