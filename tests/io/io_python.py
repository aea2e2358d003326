#!/usr/bin/env python3
"""A Python program reading the io_reader data set (io_reader create DIR) the
ways Python programs do, for io_check.py: prints EXPECT {json} with what it
read from DIR, per process group.

    io_python.py DIR

  main     open().read() of small_00..09; os.open/os.read(3001) to EOF of
           small_10..19; os.read(1) to EOF of text.txt; os.pread of big_8m.bin at 8 offsets; os.stat and
           os.path.exists of every small file; /proc/self/status (not data)
  workers  4 multiprocessing (fork) processes, each reading a disjoint share:
           small_20..49 by i % 4, and an 8 MiB quarter of big_33m.bin by pread
  threads  8 threads at once in the main process: a 1 MiB eighth of big_8m.bin
           by os.pread in 64 KiB pieces, and text.txt with open().read()

Every read is checked against the file's size (and the workers' results are
their exit status), so the program fails on its own if a read comes back wrong.
"""
import json
import multiprocessing
import os
import sys
import threading

MIB = 1 << 20


def small(d, i):
    return os.path.join(d, "small_%02d.bin" % i)


def small_size(i):
    return 1024 + (i * 2654435761 % (1 << 32)) % 7169


def pread_range(path, start, end, piece):
    """Reads [start, end) of path with os.pread in pieces; returns (bytes, calls)."""
    fd = os.open(path, os.O_RDONLY)
    got = calls = 0
    try:
        off = start
        while off < end:
            b = os.pread(fd, min(piece, end - off), off)
            calls += 1
            if not b:
                raise SystemExit(f"{path}: short at {off}")
            got += len(b)
            off += len(b)
    finally:
        os.close(fd)
    return got, calls


def os_read_to_end(path, piece, size, m):
    """os.open, os.read of `piece` bytes to the end, os.close; counted into m."""
    fd = os.open(path, os.O_RDONLY)
    m["opens"] += 1
    m["files"].add(path)
    n = 0
    while True:
        b = os.read(fd, piece)
        m["os_read_calls"] += 1
        if not b:
            break
        n += len(b)
    os.close(fd)
    assert n == size, (path, n, size)
    m["bytes_read"] += n


def worker(d, w):
    total = 0
    for i in range(20, 50):
        if i % 4 == w:
            with open(small(d, i), "rb") as f:
                n = len(f.read())
            if n != small_size(i):
                sys.exit(3)
            total += n
    got, _ = pread_range(os.path.join(d, "big_33m.bin"), w * 8 * MIB, (w + 1) * 8 * MIB, MIB)
    total += got
    with open("/proc/self/stat", "rb") as f:  # not data
        f.read()
    sys.exit(0 if got == 8 * MIB else 4)


def main():
    d = os.path.realpath(sys.argv[1])
    text_size = os.path.getsize(os.path.join(d, "text.txt"))
    groups = {}

    # ---- main process, sequential ----
    m = {"bytes_read": 0, "opens": 0, "files": set(), "os_read_calls": 0, "os_pread_calls": 0}
    for i in range(10):
        with open(small(d, i), "rb") as f:
            data = f.read()
        assert len(data) == small_size(i), (i, len(data))
        m["bytes_read"] += len(data)
        m["opens"] += 1
        m["files"].add(small(d, i))
    for i in range(10, 20):
        os_read_to_end(small(d, i), 3001, small_size(i), m)
    # one byte at a time: more alike reads in a row than a folded slot holds (16383)
    assert text_size > 2 * 16383, text_size
    os_read_to_end(os.path.join(d, "text.txt"), 1, text_size, m)
    big8 = os.path.join(d, "big_8m.bin")
    fd = os.open(big8, os.O_RDONLY)
    m["opens"] += 1
    m["files"].add(big8)
    for k in range(8):
        b = os.pread(fd, 256 * 1024, k * MIB + k)
        m["os_pread_calls"] += 1
        assert len(b) == 256 * 1024
        m["bytes_read"] += len(b)
    os.close(fd)
    stats = 0
    for i in range(50):
        assert os.stat(small(d, i)).st_size == small_size(i)
        assert os.path.exists(small(d, i))
        stats += 2
    with open("/proc/self/status", "rb") as f:  # not data: must not count in the data dir
        proc_bytes = len(f.read())
    groups["main"] = m

    # ---- 4 forked workers, disjoint shares ----
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=worker, args=(d, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit(f"worker exited {p.exitcode}")
    wk = {"bytes_read": 32 * MIB, "opens": 4, "files": {os.path.join(d, "big_33m.bin")}}
    for i in range(20, 50):
        wk["bytes_read"] += small_size(i)
        wk["opens"] += 1
        wk["files"].add(small(d, i))
    groups["workers"] = wk

    # ---- 8 threads at once ----
    results = [None] * 8
    barrier = threading.Barrier(8)

    def thread_body(t):
        barrier.wait()
        got, calls = pread_range(big8, t * MIB, (t + 1) * MIB, 64 * 1024)
        with open(os.path.join(d, "text.txt"), "rb") as f:
            got += len(f.read())
        results[t] = (got, calls)

    threads = [threading.Thread(target=thread_body, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == (MIB + text_size, 16) for r in results), results
    groups["threads"] = {"bytes_read": 8 * (MIB + text_size), "opens": 16,
                         "files": {big8, os.path.join(d, "text.txt")}, "os_pread_calls": 8 * 16}

    files = set()
    for g in groups.values():
        files |= g["files"]
        g["files"] = len(g["files"])
    expect = {
        "dir": d,
        "processes": 5,
        "bytes_read": sum(g["bytes_read"] for g in groups.values()),
        "opens": sum(g["opens"] for g in groups.values()),
        "files": len(files),
        # every file read to its end at least once per open; os.read counted exactly
        "min_reads": sum(g["opens"] for g in groups.values()),
        "os_read_calls": m["os_read_calls"],
        "os_pread_calls": m["os_pread_calls"] + groups["threads"]["os_pread_calls"] + 4 * 8,
        "stat_calls_min": stats,
        "proc_status_bytes": proc_bytes,
        "groups": groups,
    }
    print("EXPECT " + json.dumps(expect), flush=True)


if __name__ == "__main__":
    main()
