#!/usr/bin/env python3
"""The demo's data loader, in plain Python (no dependencies).

    dataset.py make DIR [--files N]       N small files in 10 class folders
    dataset.py read DIR [--workers W]     read them all with W forked workers,
                                          as a DataLoader does, and print a summary
"""
import argparse
import multiprocessing as mp
import os
import random


def make(d, n):
    rnd = random.Random(0)
    for i in range(n):
        sub = os.path.join(d, f"class{i % 10}")
        os.makedirs(sub, exist_ok=True)
        with open(os.path.join(sub, f"sample{i:06d}.bin"), "wb") as f:
            f.write(rnd.randbytes(rnd.randrange(1024, 16384)))


def load(path):
    os.stat(path)
    with open(path, "rb") as f:
        data = f.read()
    return len(data), sum(data[:64])


def read(d, workers):
    files = sorted(os.path.join(r, n) for r, _, names in os.walk(d) for n in names)
    pool = mp.get_context("fork").Pool(workers)
    got = pool.map(load, files, chunksize=64)
    pool.close()  # workers finish and exit (Pool's context manager would SIGTERM them)
    pool.join()
    print(f"read {len(got)} files, {sum(n for n, _ in got)} bytes with {workers} workers")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["make", "read"])
    ap.add_argument("dir")
    ap.add_argument("--files", type=int, default=3000)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    make(a.dir, a.files) if a.mode == "make" else read(a.dir, a.workers)


if __name__ == "__main__":
    main()
