#!/usr/bin/env python3
"""The slow_writes rule against a measured outcome (analyzer/rules/rule_slow_writes.c).

  slow_writes_test.py SHIM REPORT WORKDIR

A Python loop does some CPU work per step and saves a 4 MiB checkpoint (write + fsync) every
5 steps. Run A writes the checkpoints into a folder emulated as a slow Windows drive
(WSLSHIM_EMULATE=fs:DIR=9p,fswrite=40MB/s); run B, the rule's advice applied, writes them to
a local folder (the same emulation in force, for another path). Checks:
  - A's report has slow_writes, naming the folder's mount, with its evidence;
  - B's has none;
  - A's time lost is what the fix saved: within 25% of the loop-time difference B - A
    (median of 3 interleaved rounds, timed by the program).
"""
import json
import os
import shutil
import subprocess
import sys

SHIM, REPORT, WORK = sys.argv[1:4]
failures = []

CLIENT = r"""
import json, os, sys, time
out_dir, timing = sys.argv[1], sys.argv[2]
t0 = time.perf_counter()
x = 0
for step in range(40):
    for i in range(20000):
        x += i * i
    if step % 5 == 4:
        p = os.path.join(out_dir, f"ckpt-{step}.bin")
        with open(p, "wb") as f:
            f.write(b"w" * (4 << 20))
            f.flush()
            os.fsync(f.fileno())
t1 = time.perf_counter()
print(x)
json.dump({"loop_ns": int((t1 - t0) * 1e9)}, open(timing, "w"))
"""


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


slow = os.path.join(WORK, "slow")
fast = os.path.join(WORK, "fast")
SPEC = f"fs:{slow}=9p,fswrite=40MB/s"


def run(name, out_dir):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.makedirs(d)
    os.makedirs(out_dir)
    env = dict(os.environ, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"), WSLSHIM_EMULATE=SPEC)
    timing = os.path.join(WORK, name + ".json")
    p = subprocess.run([sys.executable, "-S", "-c", CLIENT, out_dir, timing], env=env, capture_output=True, text=True)
    check(p.returncode == 0, f"{name}: client exit {p.returncode}: {p.stderr[-300:]}")
    r = subprocess.run([REPORT, "--json", d], capture_output=True, text=True)
    check(r.returncode == 0, f"{name}: report exit {r.returncode}: {r.stderr.strip()}")
    return json.load(open(timing))["loop_ns"], json.loads(r.stdout)


os.makedirs(WORK, exist_ok=True)
rounds = []
for k in range(3):
    rounds.append((run("a", slow), run("b", fast)))
(_, da), (_, db) = rounds[-1]
fa = [f for f in da["bottlenecks"] if f["id"] == "slow_writes"]
fb = [f for f in db["bottlenecks"] if f["id"] == "slow_writes"]
if check(len(fa) == 1, f"slow_writes did not fire on the slow folder: {[f['id'] for f in da['bottlenecks']]}"):
    ev = fa[0]["evidence"]
    check(ev.get("syncs") == 8 and ev.get("bytes_written", 0) >= 8 * (4 << 20),
          f"evidence: {ev}")
check(not fb, f"slow_writes fired with the checkpoints on the fast folder: {fb}")

saved = sorted(a[0] - b[0] for a, b in rounds)[1]
lost = sorted(next((f["time_lost_ns"] for f in a[1]["bottlenecks"] if f["id"] == "slow_writes"), 0)
              for a, _ in rounds)[1]
err = (lost - saved) / saved if saved > 0 else float("inf")
print(f"slow_writes: time lost {lost / 1e6:.1f} ms, the fix saved {saved / 1e6:.1f} ms ({err * 100:+.1f}%); "
      f"loops A {[round(a[0] / 1e6) for a, _ in rounds]} ms, B {[round(b[0] / 1e6) for _, b in rounds]} ms")
check(abs(err) <= 0.25, f"time lost {lost} ns against {saved} ns saved")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
