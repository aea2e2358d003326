#!/usr/bin/env python3
"""Launch-bound workloads against builds of the shim (measured, not asserted).

    ab_launch.py ROUNDS NAME=LIBWSLSHIM... [--build BUILD_DIR]

Each round runs the PyTorch elementwise loop (workloads.py, 10,000 launches, best
of 5 loops), the pageable-copy loop (5,000 copies of 64 KiB and their adds, best of
5) and launch_probe (20,000 launches, 7 repeats) without the shim and
under each build in turn; prints, per figure, the median without and each
build's median and slowdown. Pinned to CPUs 4-7 on 8 CPUs or more."""
import json, os, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        if line.strip().startswith("{"):
            return json.loads(line)
    raise ValueError(text[-300:])


def main():
    args = sys.argv[1:]
    build = "build"
    if "--build" in args:
        i = args.index("--build")
        build = args[i + 1]
        del args[i:i + 2]
    if len(args) < 2 or not args[0].isdigit() or int(args[0]) < 1 or any("=" not in a for a in args[1:]):
        print("usage: ab_launch.py ROUNDS NAME=LIBWSLSHIM... [--build BUILD_DIR] (ROUNDS at least 1)", file=sys.stderr)
        return 2
    rounds, shims = int(args[0]), dict(a.split("=", 1) for a in args[1:])
    for lib in shims.values():
        if not os.path.isfile(lib):
            print(f"ab_launch.py: {lib} not found", file=sys.stderr)
            return 2
    if not os.path.isfile(os.path.join(build, "bin", "launch_probe")):
        print(f"ab_launch.py: {build}/bin/launch_probe not found: is {build} a build tree?", file=sys.stderr)
        return 2
    pin = ["taskset", "-c", "4-7"] if os.cpu_count() >= 8 else []
    work = {
        "torch_loop_s": ([sys.executable, os.path.join(HERE, "workloads.py"), "elementwise", "--iters", "10000",
                          "--repeat", "5"], ["loop_s"]),
        "pageable_copy_s": ([sys.executable, os.path.join(HERE, "workloads.py"), "pageable_copy", "--iters", "5000",
                             "--repeat", "5"], ["loop_s"]),
        "probe": ([os.path.join(build, "bin", "launch_probe"), "--launches", "20000", "--repeats", "7"],
                  ["launch_async_ns_median", "launch_sync_ns_median"]),
    }
    tmp = tempfile.mkdtemp()
    got = {}
    for _ in range(rounds):
        for wname, (cmd, keys) in work.items():
            for cfg in ["plain"] + list(shims):
                env = dict(os.environ)
                if cfg != "plain":
                    env.update(LD_PRELOAD=os.path.abspath(shims[cfg]), WSLSHIM_OUTPUT=os.path.join(tmp, "%p.trace.zst"))
                p = subprocess.run(pin + cmd, env=env, capture_output=True, text=True)
                if p.returncode != 0:
                    err = (p.stderr.strip().splitlines() or ["no output"])[-1]
                    print(f"ab_launch.py: {wname} ({cfg}) exited {p.returncode}: {err}", file=sys.stderr)
                    return 1
                out = last_json(p.stdout)
                for k in keys:
                    got.setdefault(wname if len(keys) == 1 else k, {}).setdefault(cfg, []).append(out[k])
                if os.environ.get("AB_RAW"):
                    print(f"raw {wname} {cfg} " + " ".join(f"{k}={out[k]:.6g}" for k in keys), file=sys.stderr, flush=True)
                for f in os.listdir(tmp):
                    os.unlink(os.path.join(tmp, f))
    for k, by in got.items():
        base = statistics.median(by["plain"])
        rest = ", ".join(f"{c} {statistics.median(v):.6g} ({100 * (statistics.median(v) / base - 1):+.1f}%)"
                         for c, v in by.items() if c != "plain")
        print(f"{k}: {rounds} rounds, plain {base:.6g}; {rest}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
