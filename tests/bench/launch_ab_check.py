"""launch_ab against the fake driver: the hooked launches, and only they, are in the shim's trace.

    launch_ab_check.py LAUNCH_AB SHIM REPORT FAKE_LIB_DIR WORKDIR

launch_ab loads the driver before the shim and launches through both in one process
(tests/bench/launch_ab.c); its "real" batches must bypass the shim, or its added_ns
would compare the hook with itself. Checks: exit 0, one JSON line with the fields
docs/overhead.md quotes, and the trace's cuLaunchKernel count equal to hooked_launches
(a real launch that reached the hook would make it larger; a hooked one lost, smaller).
"""
import glob
import json
import os
import shutil
import subprocess
import sys


def main():
    launch_ab, shim, report, fake_dir, work = sys.argv[1:6]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    env = dict(os.environ, LD_LIBRARY_PATH=fake_dir, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"))
    env.pop("LD_PRELOAD", None)
    rounds, per = 40, 50
    p = subprocess.run([launch_ab, shim, "--rounds", str(rounds), "--per-batch", str(per)],
                       env=env, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(f"launch_ab exited {p.returncode}: {p.stderr.strip()}")
        return 1
    out = json.loads(p.stdout)
    for k in ("real_ns", "hooked_ns", "real2_ns", "added_ns", "real2_minus_real_ns", "hooked_launches"):
        if not isinstance(out.get(k), (int, float)):
            print(f"launch_ab's output lacks {k}: {p.stdout.strip()}")
            return 1
    want = 1000 + rounds * per
    if out["hooked_launches"] != want:
        print(f"hooked_launches {out['hooked_launches']}, expected {want}")
        return 1
    traces = glob.glob(os.path.join(work, "*.trace.zst"))
    if len(traces) != 1:
        print(f"expected one trace, found {traces}")
        return 1
    r = subprocess.run([report, "--json", traces[0]], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        print(f"wslshim-report exited {r.returncode}: {r.stderr.strip()}")
        return 1
    calls = json.loads(r.stdout)["api"].get("cuLaunchKernel", {}).get("calls", 0)
    if calls != want:
        print(f"the trace holds {calls} cuLaunchKernel calls, launch_ab hooked {want} "
              f"(and made {2 * (1000 + rounds * per) - 1000} through the driver's own)")
        return 1
    print(f"ok: {calls} hooked launches in the trace, the real ones not; {p.stdout.strip()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
