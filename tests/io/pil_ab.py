"""A decoding workload for the file-I/O overhead (run by run_io_bench.sh; measured, not asserted).

    pil_ab.py make DIR N          write N small JPEGs (32x32, about 1.5 KiB each)
    pil_ab.py run DIR N           decode the first N with PIL, as a dataset loop does
                                  (open, convert to RGB, to a numpy array); prints seconds
    pil_ab.py ab DIR N RUNS SHIM  RUNS pairs of `run`, one without and one with SHIM
                                  preloaded, started together on disjoint halves of this
                                  process's CPUs (which half each gets alternates); prints
                                  the median of the pairs' with/without ratios, and the same
                                  for RUNS control pairs with the shim in neither run

Both runs of a pair share the host's state of the moment, so a drift common to the whole
host cancels in their ratio. What does not cancel (the two halves of the CPUs running at
different speeds) shows in the control pairs: their spread is how much a ratio can be trusted.
Exit status 77 when PIL or numpy is not installed.
"""
import os
import statistics
import subprocess
import sys
import time


def make(d, n):
    import numpy as np
    from PIL import Image

    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        a = (rng.random((32, 32, 3)) * 255).astype("uint8")
        Image.fromarray(a).save(os.path.join(d, f"img{i:06d}.jpg"), quality=90)


def run(d, n):
    import numpy as np
    from PIL import Image

    names = sorted(x for x in os.listdir(d) if x.startswith("img"))[:n]
    t0 = time.perf_counter()
    s = 0
    for x in names:
        with Image.open(os.path.join(d, x)) as im:
            s += int(np.asarray(im.convert("RGB")).sum()) & 1
    print(time.perf_counter() - t0)


def ab(d, n, runs, shim):
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    sets = [cpus[:half], cpus[half:2 * half] or cpus[:half]]

    def pair(k, second):
        procs = []
        for j, env in enumerate(({}, second)):
            mine = sets[(j + k) % 2]
            procs.append(subprocess.Popen([sys.executable, __file__, "run", d, str(n)],
                                          env={**os.environ, **env}, stdout=subprocess.PIPE, text=True,
                                          preexec_fn=lambda m=mine: os.sched_setaffinity(0, m)))
        out = [p.communicate()[0] for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError("a run failed")
        return float(out[0]), float(out[1])

    without, with_, ratios, control = [], [], [], []
    try:
        for k in range(runs):
            a, b = pair(k, {"LD_PRELOAD": shim})
            without.append(a)
            with_.append(b)
            ratios.append(b / a)
            a, b = pair(k, {})
            control.append(b / a)
    except RuntimeError as e:
        print(f"pil_ab: {e}", file=sys.stderr)
        return 1
    r, c = statistics.median(ratios), statistics.median(control)
    print(f"decoding workload (Python, PIL: {n} 32x32 JPEGs opened, decoded, made numpy arrays), "
          f"{runs} pairs run together on {half} CPU(s) each: without shim "
          f"{statistics.median(without) * 1e6 / n:.1f} us/image, with shim {statistics.median(with_) * 1e6 / n:.1f}; "
          f"median ratio {r:.4f} (range {min(ratios):.4f}-{max(ratios):.4f}): shim cost {100 * (r - 1):+.2f}%; "
          f"control pairs without the shim in either: {100 * (c - 1):+.2f}% (range {min(control):.4f}-{max(control):.4f})")
    return 0


def main():
    if len(sys.argv) < 4 or (sys.argv[1] == "ab" and len(sys.argv) != 6) or not sys.argv[3].isdigit():
        print("usage: pil_ab.py make|run DIR N | pil_ab.py ab DIR N RUNS SHIM", file=sys.stderr)
        return 2
    mode, d, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode in ("run", "ab") and not os.path.isdir(d):
        print(f"pil_ab: {d}: no such folder (make it with: pil_ab.py make DIR N)", file=sys.stderr)
        return 2
    try:
        import numpy  # noqa: F401
        import PIL  # noqa: F401
    except ImportError:
        print("pil_ab: PIL or numpy is not installed", file=sys.stderr)
        return 77
    if mode == "make":
        make(d, n)
    elif mode == "run":
        run(d, n)
    elif mode == "ab":
        if not sys.argv[4].isdigit() or int(sys.argv[4]) < 1:
            print("pil_ab: RUNS must be a positive number", file=sys.stderr)
            return 2
        return ab(d, n, int(sys.argv[4]), sys.argv[5])
    else:
        print(f"pil_ab: unknown mode {mode}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
