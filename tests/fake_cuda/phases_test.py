#!/usr/bin/env python3
"""Phases and the host-side starvation rules against programs of known shape (fake driver).

  phases_test.py SHIM REPORT CLIENT FAKE_LIB_DIR WORKDIR

client_phases (tests/fake_cuda/client_phases.c) in three modes, under the shim:
  phases    300 ms start-up, a copy, 10 module loads of 30 ms (warm-up), 1000 steps of
            10 kernels (steady state), 200 ms teardown: the four phases found within a
            margin of what the client timed; the steady state from the launch stream's
            repetition (period 10); `compilation` fires on the module loads; launch_bound's
            severity follows its share of the steady state, not of the wall time
  dispatch  60 us of host work before each of 20000 launches: dispatch_bound (not
            launch_bound), its time lost the host's gaps less the GPU's work
  loader    the main thread blocks on a forked worker's pipe for 200 items:
            dataloader_wait, its time lost what the client measured it blocked
  loader-poll  the same, each item waited for in poll() before its read (as Python's
            multiprocessing queues do): the same finding and time lost
  loader-threads  the same, the step's launches mostly from a second thread (PyTorch's
            autograd thread): the waiting thread is not the busiest launching one; the same
            finding and time lost
  loader-pinned  the same wait, seen from the main thread as a wait on a semaphore: a thread
            that launches nothing polls the pipe and hands each item over (a DataLoader with
            pin_memory=True); the same finding and time lost, and its waits in the evidence
  loader-sync  a forked worker that hands nothing over, and a cuCtxSynchronize after each
            step of the main thread: no dataloader_wait (a wait for the GPU is not one for
            the worker; the analyzer once counted it as one)
"""
import json
import os
import subprocess
import sys

SHIM, REPORT, CLIENT, LIBDIR, WORK = sys.argv[1:6]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def run(mode, env_extra):
    d = os.path.join(WORK, mode)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        os.unlink(os.path.join(d, f))
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, FAKE_CUDA_PROC_ALIASES="0",
               WSLSHIM_OUTPUT=os.path.join(d, "%p.trace.zst"), **env_extra)
    p = subprocess.run([CLIENT, mode], env=env, capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, f"{mode}: client exit {p.returncode}: {p.stderr.strip()}")
    measured = next((json.loads(l[9:]) for l in p.stdout.splitlines() if l.startswith("MEASURED ")), {})
    r = subprocess.run([REPORT, "--json", d], capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, f"{mode}: report exit {r.returncode}: {r.stderr.strip()}")
    return measured, json.loads(r.stdout)


def finding(rep, fid):
    return next((b for b in rep["bottlenecks"] if b["id"] == fid), None)


def near(got, want, rel, what):
    check(abs(got - want) <= rel * want, f"{what}: {got / 1e6:.1f} ms, expected {want / 1e6:.1f} ms +- {rel:.0%}")


# ---- phases ------------------------------------------------------------------------------------
m, rep = run("phases", {"FAKE_CUDA_KERNEL_NS": "200", "FAKE_CUDA_LAUNCH_NS": "8000",
                        "FAKE_CUDA_MODULE_LOAD_NS": "30000000"})
main = [p for p in rep["phases"] if p["main"]]
check(len(main) == 1, f"phases: one main process, got {len(main)}")
if main and m:
    ph = {x["name"]: x["duration_ns"] for x in main[0]["phases"]}
    print("phases: found", {k: round(v / 1e6, 1) for k, v in ph.items()}, "ms; client",
          {k: round(v / 1e6, 1) for k, v in m.items()}, "ms")
    # the shim's process start is its constructor's, a little before main(): start-up is a bit longer
    near(ph["start-up"], m["startup_ns"], 0.25, "start-up")
    near(ph["warm-up"], m["warmup_ns"], 0.25, "warm-up")
    near(ph["steady state"], m["steady_ns"], 0.25, "steady state")
    near(ph["teardown"], m["teardown_ns"], 0.25, "teardown")
    check(main[0]["steady_method"] == "repetition", f"steady method {main[0]['steady_method']}")
    check(main[0]["period_launches"] == 10, f"period {main[0]['period_launches']} launches, 10 expected")
    check(main[0]["warmup_module_loads"] == 10 and main[0]["steady_module_loads"] == 0,
          f"module loads: {main[0]['warmup_module_loads']} in warm-up, {main[0]['steady_module_loads']} in steady")
    comp = finding(rep, "compilation")
    check(comp is not None, f"no compilation finding: {[b['id'] for b in rep['bottlenecks']]}")
    if comp:
        near(comp["time_lost_ns"], m["warmup_ns"], 0.3, "compilation time lost")
    lb = finding(rep, "launch_bound")
    check(lb is not None, f"no launch_bound finding: {[b['id'] for b in rep['bottlenecks']]}")
    if lb:
        print(f"phases: launch_bound {lb['severity']}, {lb['wall_share']:.0%} of wall, "
              f"{lb.get('steady_share', 0):.0%} of the steady state")
        # under 20% of the wall time (medium by it), at least 20% of the steady state: high
        check(lb["wall_share"] < 0.20 and lb.get("steady_share", 0) >= 0.20 and lb["severity"] == "high",
              f"launch_bound: severity {lb['severity']} with {lb['wall_share']:.0%} of wall and "
              f"{lb.get('steady_share', 0):.0%} of the steady state (severity follows the steady state)")
    ss = rep["steady_state"]
    check(ss["known"] and ss["findings_reread"], f"steady state {ss}")

# ---- dispatch ----------------------------------------------------------------------------------
m, rep = run("dispatch", {"FAKE_CUDA_KERNEL_NS": "2000", "FAKE_CUDA_LAUNCH_NS": "2000"})
ids = [b["id"] for b in rep["bottlenecks"]]
check("dispatch_bound" in ids and "launch_bound" not in ids, f"dispatch: findings {ids}")
db = finding(rep, "dispatch_bound")
if db and m:
    # the GPU waits for all but its own 2 us of each launch's gap; gaps over 2 ms (the client descheduled
    # on a loaded machine) are not dispatch: gpu_idle's
    want = m["loop_ns"] - m["launches"] * 2000 - db["evidence"]["long_gap_ns"]
    gi = finding(rep, "gpu_idle")
    idle = m["loop_ns"] - m["launches"] * 2000
    near(db["time_lost_ns"] + (gi["time_lost_ns"] if gi else 0), idle, 0.25, "dispatch_bound + gpu_idle time lost")
    print(f"dispatch: time lost {db['time_lost_ns'] / 1e6:.1f} ms, loop {m['loop_ns'] / 1e6:.1f} ms, "
          f"expected about {want / 1e6:.1f} ms")
    near(db["time_lost_ns"], want, 0.25, "dispatch_bound time lost")
    check(db["evidence"]["launch_interval_mean_ns"] >= 60000, f"dispatch gap {db['evidence']}")

# ---- loader, loader-poll, loader-threads: a wait for the worker, seen as it blocked ------------------
def loader_case(mode, what):
    """dataloader_wait's time lost within 25% of what the client blocked; returns the report."""
    m, rep = run(mode, {"FAKE_CUDA_KERNEL_NS": "1000", "FAKE_CUDA_LAUNCH_NS": "1000"})
    dw = finding(rep, "dataloader_wait")
    check(dw is not None, f"{mode}: no dataloader_wait: {[b['id'] for b in rep['bottlenecks']]}")
    if dw and m:
        print(f"{mode}: time lost {dw['time_lost_ns'] / 1e6:.1f} ms, the client blocked {m['waited_ns'] / 1e6:.1f} ms")
        near(dw["time_lost_ns"], m["waited_ns"], 0.25, f"dataloader_wait time lost ({what})")
        check(dw["evidence"]["workers"] == 1, f"{mode}: workers {dw['evidence']['workers']}")
    return rep


loader_case("loader", "blocking reads")
# the wait in poll(), the read finds the item ready
rep = loader_case("loader-poll", "poll")
polls = rep.get("io_calls", {}).get("poll", {}).get("calls", 0) if isinstance(rep.get("io_calls"), dict) else 0
check(polls >= 200, f"loader-poll: {polls} poll calls in the report, 200 or more made")
# the thread that waits launches the fewer kernels; the two launching threads wait for each other on
# semaphores, and those waits are not waits for data: no thread that launches nothing feeds them (the
# third thread, which launches nothing, polls a pipe of its own and reads it now and then, as the CUDA
# driver's event thread does: not a feeder)
rep = loader_case("loader-threads", "two launching threads")
dw = finding(rep, "dataloader_wait")
check(not dw or dw["evidence"]["thread_waits"] == 0,
      f"loader-threads: the step's handovers counted as waits for data: {dw and dw['evidence']}")

# the main thread waits on a semaphore for the thread that polls the pipe (pin_memory=True)
rep = loader_case("loader-pinned", "semaphore waits")
dw = finding(rep, "dataloader_wait")
if dw:
    ev = dw["evidence"]
    check(ev["thread_waits"] >= 150, f"loader-pinned: {ev['thread_waits']} semaphore waits counted, 200 made")
    check(ev["pipe_reads"] == 0, f"loader-pinned: {ev['pipe_reads']} pipe waits counted on the launching thread")
waits = rep.get("io_calls", {}) if isinstance(rep.get("io_calls"), dict) else {}
check(waits.get("sem_timedwait", {}).get("calls", 0) >= 75 and waits.get("sem_clockwait", {}).get("calls", 0) >= 75,
      f"loader-pinned: semaphore waits in the report: {[(k, v.get('calls')) for k, v in waits.items() if k.startswith('sem_')]}")

# ---- loader-sync: waits for the GPU, a worker beside ---------------------------------------------
m, rep = run("loader-sync", {"FAKE_CUDA_KERNEL_NS": "500000", "FAKE_CUDA_LAUNCH_NS": "1000"})
dw = finding(rep, "dataloader_wait")
if m:
    print(f"loader-sync: the client synchronized {m['synced_ns'] / 1e6:.1f} ms of {m['loop_ns'] / 1e6:.1f} ms; "
          f"dataloader_wait {'%.1f ms' % (dw['time_lost_ns'] / 1e6) if dw else 'absent'}")
    check(m["synced_ns"] > 0.3 * m["loop_ns"], f"loader-sync: the syncs took {m['synced_ns']} of {m['loop_ns']} ns")
check(dw is None, f"loader-sync: dataloader_wait fired on waits for the GPU: {dw and dw['evidence']}")

print("phases test:", "FAIL" if failures else "ok")
sys.exit(1 if failures else 0)
