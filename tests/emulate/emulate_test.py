#!/usr/bin/env python3
"""WSLSHIM_EMULATE against the fake driver (docs/emulation.md).

  emulate_test.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR

CLIENT is tests/project/client_project. Checks:
  - a launch-bound run under WSLSHIM_EMULATE=launch=+20us,sync=+30us takes
    about N x 20 us + S x 30 us longer than the same run without it (within
    10% of the added time), the trace says so (JSON "emulation" on the run and
    on the process, the text report's first lines), and the report's mean
    launch host time is about 20 us higher;
  - the program's output and exit status are the same with and without the
    emulation, and with a SPEC the shim refuses (one error line, no emulation);
  - `--project SPEC` of the unemulated run lands within 10% of the emulated
    run's wall time;
  - the exposure: +1 us a launch moves a launch-bound run by about 1 us a
    launch, a GPU-bound run (100 us kernels queued 50 deep) by far less.
"""
import json
import os
import subprocess
import sys

SHIM, REPORT, CLIENT, LIBDIR, WORK = sys.argv[1:6]
failures = []
N = 4000            # launches; a cuStreamSynchronize every 50
SYNCS = N // 50 + 1  # and the context sync at the end (a sync too)
SPEC = "launch=+20us,sync=+30us"
ATTEMPTS = 4


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


def run(name, spec, kernel_ns=0, workload="launch", n=N):
    d = os.path.join(WORK, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"),
               FAKE_CUDA_LAUNCH_NS="3000", FAKE_CUDA_SYNC_NS="2000", FAKE_CUDA_KERNEL_NS=str(kernel_ns),
               FAKE_CUDA_PROC_ALIASES="0")
    env.pop("WSLSHIM_EMULATE", None)
    if spec is not None:
        env["WSLSHIM_EMULATE"] = spec
    p = subprocess.run([CLIENT, workload, str(n)], env=env, capture_output=True, text=True)
    return d, p


def report(args, text=False):
    p = subprocess.run([REPORT] + ([] if text else ["--json"]) + args, capture_output=True, text=True)
    if not check(p.returncode == 0, f"report {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}"):
        return None
    return p.stdout if text else json.loads(p.stdout)


def disturbance(doc):
    """Host time in calls beyond every call taking its API's median: ~0 when undisturbed."""
    total = sum(a["total_ns"] for a in doc["api"].values())
    typical = sum(a["calls"] * a["p50_ns"] for a in doc["api"].values())
    return max(0, total - typical)


os.makedirs(WORK, exist_ok=True)

# ---- output unchanged --------------------------------------------------------------
_, plain = run("out-plain", None, n=300)
_, emu = run("out-emu", SPEC, n=300)
_, bad = run("out-bad", "launch=+fast")
check(plain.returncode == 0 and emu.returncode == plain.returncode and bad.returncode == plain.returncode,
      f"exit status changed: {plain.returncode} {emu.returncode} {bad.returncode}")
check(emu.stdout == plain.stdout and plain.stdout, f"stdout differs under emulation: {plain.stdout!r} vs {emu.stdout!r}")
check("WSLSHIM_EMULATE" in bad.stderr and "not emulated" in bad.stderr,
      f"a bad SPEC was not reported: {bad.stderr!r}")
bad_doc = report([os.path.join(WORK, "out-bad")])
if bad_doc:
    check("emulation" not in bad_doc, "a refused SPEC still marked the run emulated")

# ---- emulated costs: the wall time, the trace, the report -----------------------------
added = N * 20000 + SYNCS * 30000
# The added time is spun on the CPU: on a machine shared with other work the
# spinning thread gets a share of a core, and the run stretches beyond the
# added cost. Such stretch shows as calls far above their API's median
# (disturbance); the emulated wall time is read less the disturbance it has
# beyond the native run's ("corrected"). An undisturbed attempt needs no
# correction; the best of ATTEMPTS is used.
def projection_error(dn, em, excess):
    """--project SPEC of the unemulated run against the emulated run's wall (less its excess disturbance)."""
    pr = report(["--project", SPEC, dn])
    if not pr:
        return None, None
    actual = em["wall_ns"] - excess
    return pr, (pr["projection"]["wall_ns"] - actual) / actual


# An attempt holds when the emulated run is the added time slower (+-10%) and
# the projection of its native run lands within 10% of it; both read the same
# pair of runs, so a disturbed pair is retried as a whole.
ok_timing = ok_proj = False
best = None
for attempt in range(ATTEMPTS):
    dn, pn = run("native", None)
    de, pe = run("emulated", SPEC)
    check(pn.returncode == 0 and pe.returncode == 0, f"client failed: {pn.stderr} {pe.stderr}")
    nat, em = report([dn]), report([de])
    if not nat or not em:
        break
    excess = max(0, disturbance(em) - disturbance(nat))
    got = em["wall_ns"] - excess - nat["wall_ns"]
    pr, err = projection_error(dn, em, excess)
    if pr is None:
        break
    print(f"attempt {attempt + 1}: native {nat['wall_ns'] / 1e6:.2f} ms, emulated {em['wall_ns'] / 1e6:.2f} ms "
          f"({excess / 1e6:.2f} ms of it disturbance), added {got / 1e6:.2f} ms (expected {added / 1e6:.2f} ms); "
          f"projected {pr['projection']['wall_ns'] / 1e6:.2f} ms ({err * 100:+.1f}%)")
    good_t, good_p = abs(got - added) <= 0.10 * added, abs(err) <= 0.10
    if best is None or (good_t and good_p) or (not best[5] and excess < best[2]):
        best = (nat, em, excess, dn, de, good_t and good_p, pr, err)
    ok_timing |= good_t
    ok_proj |= good_t and good_p
    if good_t and good_p and excess < 0.05 * added:
        break
check(ok_timing, f"emulated run not {added / 1e6:.1f} ms (+-10%) slower in {ATTEMPTS} attempts")
check(ok_proj, f"projection onto {SPEC} not within 10% of the emulated run in {ATTEMPTS} attempts")
nat, em, excess, dn, de, _, pr, err = best if best else (None, None, 0, None, None, False, None, None)

if em and nat:
    e = em.get("emulation")
    if check(isinstance(e, dict), "no run-level emulation key"):
        check(e["spec"] == SPEC and e["added_ns"]["launch"] == 20000 and e["added_ns"]["sync"] == 30000
              and e["added_ns"]["alloc"] == 0, f"emulation key wrong: {e}")
    check(all(isinstance(p.get("emulation"), dict) for p in em["processes"]), "a process lacks its emulation key")
    check("emulation" not in nat and all("emulation" not in p for p in nat["processes"]),
          "an unemulated run says it was emulated")
    dl = em["api"]["cuLaunchKernel"]["p50_ns"] - nat["api"]["cuLaunchKernel"]["p50_ns"]
    check(abs(dl - 20000) < 2000, f"launch host time p50 moved by {dl} ns, not ~20000")
    ds = em["api"]["cuStreamSynchronize"]["p50_ns"] - nat["api"]["cuStreamSynchronize"]["p50_ns"]
    check(abs(ds - 30000) < 3000, f"sync host time p50 moved by {ds} ns, not ~30000")
    text = report([de], text=True)
    if text:
        head = "\n".join(text.splitlines()[:3])
        check("EMULATED RUN" in head and SPEC in head, f"the text report's first lines do not say emulated:\n{head}")
    text = report([dn], text=True)
    if text:
        check("EMULATED" not in text, "an unemulated run's text report says emulated")
    if pr:
        p = pr["projection"]
        check(p.get("emulation", {}).get("spec") == SPEC, f"projection does not name the SPEC: {p.get('emulation')}")
        check(not p["unknown_figures"], f"an emulation SPEC needs no figure: {p['unknown_figures']}")

# ---- exposure: launch-bound against GPU-bound -----------------------------------------
# A run whose thread lost the CPU inside a synchronization reads, rightly, as
# waiting on the GPU there, and absorbs part of +1 us a launch: such a pair is
# retried (the replay itself is deterministic for a given trace).
xl = xg = None
for attempt in range(ATTEMPTS):
    dl_, _ = run("expo-launch", None, kernel_ns=0, n=2000)
    dg_, _ = run("expo-gpu", None, kernel_ns=100000, n=2000)
    xl = report(["--project", "wsl2", dl_])
    xg = report(["--project", "wsl2", dg_])
    if not xl or not xg:
        break
    el, eg = xl["projection"]["exposure"], xg["projection"]["exposure"]
    per_l = el["launch"]["wall_ns"] / max(1, el["launch"]["calls"])
    per_g = eg["launch"]["wall_ns"] / max(1, eg["launch"]["calls"])
    print(f"exposure attempt {attempt + 1}: per +1 us a launch: launch-bound {per_l:.0f} ns a launch, GPU-bound "
          f"{per_g:.0f} ns a launch; step {el['launch']['step_ns']} / {eg['launch']['step_ns']}; disturbance "
          f"{disturbance(xl) / 1e6:.2f} / {disturbance(xg) / 1e6:.2f} ms")
    if 900 <= per_l <= 1100 and per_g < 200:
        break
if xl and xg:
    check(900 <= per_l <= 1100, f"launch-bound run: +1 us a launch moved the wall by {per_l:.0f} ns a launch "
          f"(the last of up to {ATTEMPTS} attempts)")
    check(per_g < 200, f"GPU-bound run: +1 us a launch moved the wall by {per_g:.0f} ns a launch")
    check(el["launch"]["calls"] == 2000 and eg["launch"]["calls"] == 2000, "exposure launch calls not 2000")
    # syncs: +1 us each lands on the wall in both (they end each batch)
    for name, x in (("launch-bound", el), ("GPU-bound", eg)):
        s = x["sync"]
        check(abs(s["wall_ns"] - 1000 * s["calls"]) <= 0.1 * 1000 * s["calls"] + 1000,
              f"{name}: +1 us a sync moved the wall by {s['wall_ns']} ns over {s['calls']} syncs")
        check(x["alloc"]["wall_ns"] == 0 and x["file_metadata"]["wall_ns"] == 0,
              f"{name}: no allocation or file call, yet exposure {x['alloc']} {x['file_metadata']}")
    # the built-in wsl2 target: a range, and never cheaper than native
    p = xl["projection"]
    check(p["wall_ns"] >= p["wall_ns_recorded"] * 0.99, f"wsl2 came out cheaper than native: {p['wall_ns']} < "
          f"{p['wall_ns_recorded']}")
    r = p.get("wall_ns_range")
    if check(isinstance(r, dict), "wsl2 projection of a native run has no wall_ns_range"):
        check(r["low"] <= r["high"] and r["high"] > p["wall_ns_recorded"] and r["high_open"],
              f"wsl2 range not a range above the recorded wall: {r}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
