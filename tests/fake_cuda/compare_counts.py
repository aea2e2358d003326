#!/usr/bin/env python3
"""Hold a fake-driver client's EXPECT line against the counts the driver kept.

Each client prints, as its last EXPECT line,
    EXPECT {"symbol": count, ...}
the calls it made, per exact driver symbol. The fake libcuda.so.1 writes the
calls it received to FAKE_CUDA_COUNTS at exit. The two must be equal.

  compare_counts.py run [--env K=V]... [--ignore SYM]... [--add-expect SYM=N]...
                        --client "PROGRAM ARGS" [--client ...]
      runs each client with FAKE_CUDA_COUNTS set to a fresh file, requires exit
      status 0, then compares. Any extra --env is set for the clients (for
      example LD_PRELOAD=/path/libwslshim.so).

  compare_counts.py compare [--ignore SYM]... STDOUT_FILE COUNTS_JSON
      compares a saved client output with a saved counts file.

--ignore drops a symbol from both sides (for example cuGetProcAddress when an
interposer makes lookups of its own). --add-expect exists to test the
comparison itself. Exit status 0 when equal, 1 otherwise.
"""
import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile


def parse_expect(stdout):
    lines = [l for l in stdout.splitlines() if l.startswith("EXPECT ")]
    if not lines:
        raise ValueError("no EXPECT line in the client's output")
    expect = json.loads(lines[-1][len("EXPECT "):])
    if not isinstance(expect, dict):
        raise ValueError("EXPECT is not a JSON object")
    return {str(k): int(v) for k, v in expect.items()}


def compare(expect, counts, ignore, label):
    expect = {k: v for k, v in expect.items() if k not in ignore and v}
    counts = {k: v for k, v in counts.items() if k not in ignore and v}
    if expect == counts:
        total = sum(counts.values())
        print(f"{label}: {len(counts)} symbols, {total} calls: driver counts match EXPECT")
        return True
    print(f"{label}: driver counts differ from EXPECT")
    print(f"  {'symbol':40} {'expected':>10} {'driver':>10}")
    for sym in sorted(set(expect) | set(counts)):
        e, c = expect.get(sym, 0), counts.get(sym, 0)
        if e != c:
            print(f"  {sym:40} {e:>10} {c:>10}")
    return False


def run_client(command, extra_env, ignore, add_expect):
    argv = shlex.split(command)
    label = os.path.basename(argv[0])
    with tempfile.TemporaryDirectory(prefix="fake_cuda_counts.") as tmp:
        path = os.path.join(tmp, "counts.json")
        env = dict(os.environ)
        env.update(extra_env)
        env["FAKE_CUDA_COUNTS"] = path
        proc = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, timeout=600)
        if proc.returncode != 0:
            print(f"{label}: exit status {proc.returncode}")
            sys.stdout.write(proc.stdout)
            sys.stdout.write(proc.stderr)
            return False
        try:
            expect = parse_expect(proc.stdout)
        except ValueError as e:
            print(f"{label}: {e}")
            sys.stdout.write(proc.stdout)
            return False
        for sym, n in add_expect.items():
            expect[sym] = expect.get(sym, 0) + n
        if not os.path.exists(path):
            print(f"{label}: the driver wrote no counts to {path} (not the fake driver?)")
            return False
        with open(path) as f:
            counts = json.load(f)
        return compare(expect, counts, ignore, label)


def key_value(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=VALUE")
    k, v = text.split("=", 1)
    return k, v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="mode", required=True)
    run = sub.add_parser("run")
    run.add_argument("--client", action="append", required=True)
    run.add_argument("--env", action="append", type=key_value, default=[])
    run.add_argument("--ignore", action="append", default=[])
    run.add_argument("--add-expect", action="append", type=key_value, default=[])
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("--ignore", action="append", default=[])
    cmp_.add_argument("stdout_file")
    cmp_.add_argument("counts_json")
    args = ap.parse_args()

    if args.mode == "compare":
        with open(args.stdout_file) as f:
            expect = parse_expect(f.read())
        with open(args.counts_json) as f:
            counts = json.load(f)
        return 0 if compare(expect, counts, set(args.ignore), os.path.basename(args.stdout_file)) else 1

    add_expect = {k: int(v) for k, v in args.add_expect}
    ok = True
    for command in args.client:
        ok = run_client(command, dict(args.env), set(args.ignore), add_expect) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
