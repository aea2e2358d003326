#!/usr/bin/env python3
"""Reliability on a GPU: a PyTorch training run with 4 DataLoader worker
processes reading a folder of small files, checkpoints written with
torch.save, and a SIGTERM at the end that the program handles the way
trainers do (its own handler saves a checkpoint, then puts the default action
back and dies of SIGTERM). Run once without the shim and once under it:

  - exit status (killed by SIGTERM), stdout and stderr are the same;
  - the checkpoints are byte-identical (deterministic training);
  - every process's trace reads (the trainer, its 4 workers, anything else it
    started), the trainer's ended by the shim's signal flush (not cut short)
    and holding kernel launches, the workers' holding the data files' reads.

    python3 tests/gpu/reliability_gpu.py --build BUILD --out OUT --seconds 120
    python3 tests/gpu/reliability_gpu.py --build BUILD --out OUT --run-seconds 600

--seconds bounds the whole check (two runs): the step of the SIGTERM is a guess
from the time. --run-seconds T makes each run long and both end at the same
step: the plain run sends itself SIGTERM after the first step that ends past T
seconds of training (step S), the traced run after step S. In that mode the
trainer keeps only its last 4 periodic checkpoints (as long runs do), and the
summary carries the figures of both runs (steps/s, peak RSS, trace sizes,
events by kind, the workers' reads). --together-steps N runs both at once, each
to step N (an A/B under the same load, in the time of one run; the machine
lending the GPU takes it back when idle, so one long run is safer than two),
and --min-traced-seconds M fails the check if the traced run trained less.

    python3 tests/gpu/reliability_gpu.py --build BUILD --out OUT \
        --together-steps 220000 --min-traced-seconds 600

Exit 0 pass, 1 fail, 77 skip (no torch or no GPU). Writes OUT/summary.json
(OUT/progress.json after each run), and OUT/trainer-report.txt (the text report
of the trainer's trace).
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

TRAIN = r'''
import json, os, signal, sys, time
import torch

data_dir, ckpt_dir, meta_path, stop, budget, keep = \
    sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], float(sys.argv[5]), int(sys.argv[6])
# stop: "step:N" sends itself SIGTERM after step N, "time:T" after the first step ending past T s of training
stop_kind, stop_value = stop.split(":")
stop_step = int(stop_value) if stop_kind == "step" else None
stop_time = float(stop_value) if stop_kind == "time" else None
torch.manual_seed(0)
torch.use_deterministic_algorithms(True)
files = sorted(os.path.join(data_dir, f) for f in os.listdir(data_dir))

class Files(torch.utils.data.Dataset):
    def __len__(self):
        return len(files)
    def __getitem__(self, i):
        with open(files[i], "rb") as f:
            raw = f.read()
        x = torch.frombuffer(bytearray(raw[:256]), dtype=torch.uint8).float() / 255.0
        return x, int(raw[0]) % 10

model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator()
g.manual_seed(0)
loader = torch.utils.data.DataLoader(Files(), batch_size=64, shuffle=True, num_workers=4, generator=g,
                                     persistent_workers=True, multiprocessing_context="fork")
step = 0
t0 = time.time()

def on_term(signum, frame):
    print(f"SIGTERM at step {step}: saving", flush=True)
    torch.save(model.state_dict(), os.path.join(ckpt_dir, "on-sigterm.pt"))
    # timing goes to a side file: stdout and stderr must not depend on the clock
    with open(meta_path, "w") as f:
        json.dump({"step": step, "loop_s": time.time() - t0}, f)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)
    print("not reached", flush=True)

signal.signal(signal.SIGTERM, on_term)
t0 = time.time()
while True:
    for x, y in loader:
        x, y = x.cuda(non_blocking=True), y.cuda(non_blocking=True)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if step % 50 == 0:
            torch.save(model.state_dict(), os.path.join(ckpt_dir, f"step{step}.pt"))
            if keep and step > 50 * keep:
                os.remove(os.path.join(ckpt_dir, f"step{step - 50 * keep}.pt"))
            print(f"step {step} loss {loss.item():.4f}", flush=True)
        if step == stop_step or (stop_time is not None and time.time() - t0 > stop_time):
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(10)
        if time.time() - t0 > budget:
            print("budget exceeded before the planned SIGTERM", flush=True)
            sys.exit(3)
'''


def proc_table():
    """{pid: (ppid, cmdline)} of the processes visible now."""
    table = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # the command name may hold spaces and parentheses: the fields follow the last ')'
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) >= 2 and fields[1].isdigit():
            table[int(d)] = (int(fields[1]), cmd)
    return table


def peak_rss_kb(pid):
    """(KiB, field): the process's peak resident set (VmHWM), or its current one (VmRSS) where the kernel
    keeps no peak; None if it is gone."""
    got = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmHWM", "VmRSS"):
                    got[k] = int(v.split()[0])
    except (OSError, ValueError, IndexError):
        return None
    for k in ("VmHWM", "VmRSS"):
        if k in got:
            return got[k], k
    return None


def run_trainers(runs, timeout):
    """Runs the trainers of `runs` ({name: (cmd, env, out_prefix, marker)}) at once; polls the peak RSS of
    each and of its child processes once a second; after each has gone, waits for every process whose
    command line holds its `marker` (its workers) to end. Returns {name: result}."""
    res, procs, files, peaks = {}, {}, {}, {}
    t0 = time.time()
    for name, (cmd, env, out_prefix, marker) in runs.items():
        res[name] = {"timed_out": False, "worker_peak_rss_kb": {}}
        so, se = open(out_prefix + ".stdout", "w"), open(out_prefix + ".stderr", "w")
        files[name] = (so, se)
        procs[name] = subprocess.Popen(cmd, env=env, stdout=so, stderr=se)
        peaks[name] = {}
    running = dict(procs)
    while running:
        for name, p in list(running.items()):
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid != p.pid and time.time() - t0 > timeout:
                res[name]["timed_out"] = True
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
            if pid == p.pid:
                res[name]["wall_s"] = time.time() - t0
                p.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
                res[name].update(rc=p.returncode, trainer_pid=p.pid, trainer_maxrss_kb_wait4=ru.ru_maxrss)
                del running[name]
        if not running:
            break
        table = proc_table()
        for name, p in running.items():
            for cpid, (ppid, _) in table.items():
                if cpid == p.pid or ppid == p.pid:
                    got = peak_rss_kb(cpid)
                    if got is not None:
                        peaks[name][cpid] = max(peaks[name].get(cpid, 0), got[0])
                        res[name]["rss_field"] = got[1]
        time.sleep(1.0)
    for name, (cmd, env, out_prefix, marker) in runs.items():
        r = res[name]
        for f in files[name]:
            f.close()
        # the peak from /proc, sampled once a second (VmHWM only grows: at most the last second is missed);
        # wait4's ru_maxrss for comparison: it also counts the resident set of this script at the fork
        r["trainer_peak_rss_kb"] = peaks[name].pop(r["trainer_pid"], None)
        r["worker_peak_rss_kb"] = {str(k): v for k, v in sorted(peaks[name].items())}
        # the workers notice their parent is gone and leave; give them time to end their traces
        t1 = time.time()
        while time.time() - t1 < 60 and any(marker in c for _, c in proc_table().values()):
            time.sleep(0.5)
        r["workers_gone_s"] = round(time.time() - t1, 1)
        r["workers_left"] = sorted(pid for pid, (_, c) in proc_table().items() if marker in c)
        with open(out_prefix + ".stdout") as f:
            r["stdout"] = f.read()
        with open(out_prefix + ".stderr") as f:
            r["stderr"] = f.read()
    return res


def file_hashes(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        h = hashlib.sha256()
        with open(os.path.join(folder, name), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        out[name] = h.hexdigest()
    return out


def sigterm_step(res, meta_path):
    """The step at which the run's handler saw SIGTERM: from its side file, else from its stdout."""
    try:
        with open(meta_path) as f:
            meta = json.load(f)
        return int(meta["step"]), float(meta["loop_s"])
    except (OSError, ValueError, KeyError, TypeError):
        m = re.search(r"^SIGTERM at step (\d+): saving$", res["stdout"], re.M)
        return (int(m.group(1)) if m else None), None


def calls(api, pred):
    return sum(v.get("calls", 0) for k, v in api.items() if pred(k))


def trace_figures(report, path):
    """Reads one trace with wslshim-report --json; returns its figures, or an error string."""
    t0 = time.time()
    r = subprocess.run([report, "--json", path], capture_output=True, text=True)
    if r.returncode != 0:
        return f"{os.path.basename(path)} does not read (exit {r.returncode}): {r.stderr.strip()[-500:]}"
    try:
        d = json.loads(r.stdout)
        pr = d["processes"][0]
    except (ValueError, KeyError, IndexError) as exc:
        return f"{os.path.basename(path)}: report JSON without a process: {exc}"
    api = d.get("api", {})
    io = d.get("io", {})
    return {"trace": os.path.basename(path), "bytes": os.path.getsize(path), "read_s": round(time.time() - t0, 2),
            "pid": pr["pid"], "ppid": pr["ppid"], "exe": pr["exe"], "forked": pr["forked"],
            "truncated": pr["truncated"], "events": pr["events"], "dropped": pr["dropped"],
            "threads": pr["threads"],
            "launches": calls(api, lambda k: k.startswith("cuLaunch") or k == "cuGraphLaunch"),
            "syncs": calls(api, lambda k: "Synchronize" in k),
            "allocs": calls(api, lambda k: k.startswith("cuMemAlloc") or k in ("cuMemCreate", "cuMemHostAlloc")),
            "frees": calls(api, lambda k: k.startswith("cuMemFree") or k == "cuMemRelease"),
            "copies": calls(api, lambda k: k.startswith("cuMemcpy")),
            "cuda_calls": calls(api, lambda k: True),
            "reads": io.get("reads", 0), "bytes_read": io.get("bytes_read", 0), "opens": io.get("opens", 0),
            "io_calls": {k: v.get("calls", 0) for k, v in sorted(d.get("io_calls", {}).items())},
            "bottlenecks": [b.get("id") for b in d.get("bottlenecks", []) if isinstance(b, dict)]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seconds", type=float, default=120,
                    help="bound on the whole check (two runs); the SIGTERM step is guessed from it")
    ap.add_argument("--run-seconds", type=float, default=None,
                    help="each run trains T s: the plain run stops after the first step past T s, the traced "
                         "run after the same step")
    ap.add_argument("--together-steps", type=int, default=None,
                    help="run both at once, each to step N (an A/B under the same load, in half the time)")
    ap.add_argument("--min-traced-seconds", type=float, default=0,
                    help="with --together-steps: fail if the traced run trained for less than this")
    ap.add_argument("--files", type=int, default=4000)
    a = ap.parse_args()
    if (a.run_seconds is not None and a.run_seconds <= 0 or a.seconds <= 0 or a.files < 64
            or a.together_steps is not None and (a.together_steps < 1 or a.run_seconds is not None)):
        print("reliability_gpu.py: --seconds and --run-seconds must be positive, --files at least 64, "
              "--together-steps at least 1 and not with --run-seconds",
              file=sys.stderr)
        return 2
    # asked in a child: torch imported here would swell this process, and a child's getrusage peak counts
    # the parent's resident set it started from (exec keeps the larger of the two)
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip().endswith("True"):
        print(f"SKIP: no torch or no GPU: {(r.stdout + r.stderr).strip()[-300:]}")
        return 77
    torch_version = r.stdout.split()[0]
    build = os.path.abspath(a.build)
    shim = os.path.join(build, "lib", "libwslshim.so")
    report = shutil.which("wslshim-report", path=os.path.join(build, "analyzer")) or \
        os.path.join(build, "bin", "wslshim-report")
    for f_ in (shim, report):
        if not os.path.isfile(f_):
            print(f"reliability_gpu.py: {f_} not found: is {a.build} a build tree?", file=sys.stderr)
            return 2
    out = os.path.abspath(a.out)
    shutil.rmtree(out, ignore_errors=True)
    data = os.path.join(out, "data")
    os.makedirs(data)
    for i in range(a.files):
        with open(os.path.join(data, f"f{i:06d}.bin"), "wb") as f:
            f.write(bytes((i * 7 + j * 13) % 256 for j in range(1024)))
    long_mode = a.run_seconds is not None
    together = a.together_steps is not None
    if long_mode or together:
        T = a.run_seconds
        keep = 4
    else:
        # steps: a rough fit to the time (each run gets under half of it)
        per_run = a.seconds / 2
        planned = max(60, int(a.seconds * 4))
        keep = 0

    results = {}
    fails = []
    specs = {}
    for name, traced in (("plain", False), ("traced", True)):
        ckpt = os.path.join(out, name, "ckpt")
        traces = os.path.join(out, name, "traces")
        os.makedirs(ckpt)
        os.makedirs(traces)
        # a copy of the program per run: its path on the workers' command lines tells whose they are
        train_py = os.path.join(out, name, "train.py")
        with open(train_py, "w") as f:
            f.write(TRAIN)
        meta = os.path.join(out, name, "meta.json")
        if together:
            # both at once, to the same step; a guard far past any plausible time
            stop, budget = f"step:{a.together_steps}", a.together_steps / 20 + 600
            timeout = budget + 120
        elif not long_mode:
            stop, budget, timeout = f"step:{planned - 3}", per_run * 0.9, per_run + 30
        elif not traced:
            stop, budget, timeout = f"time:{T}", T + 120, T + 300
        else:
            stop, budget, timeout = None, 3 * T + 60, 3 * T + 180  # stop: the plain run's step, below
        env = dict(os.environ, CUBLAS_WORKSPACE_CONFIG=":4096:8", PYTHONHASHSEED="0")
        env.pop("LD_PRELOAD", None)
        env.pop("WSLSHIM_OUTPUT", None)
        if traced:
            env.update(LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"))
        specs[name] = {"args": [sys.executable, train_py, data, ckpt, meta], "stop": stop, "budget": budget,
                       "timeout": timeout, "env": env, "prefix": os.path.join(out, name, "train"),
                       "marker": train_py, "meta": meta, "ckpt": ckpt}

    def launch(names):
        runs = {n: (specs[n]["args"] + [specs[n]["stop"], str(specs[n]["budget"]), str(keep)], specs[n]["env"],
                    specs[n]["prefix"], specs[n]["marker"]) for n in names}
        for n in names:
            print(f"{n}: start, stop at {specs[n]['stop']}", flush=True)
        got = run_trainers(runs, max(specs[n]["timeout"] for n in names))
        for n in names:
            res = got[n]
            res["sigterm_step"], res["loop_s"] = sigterm_step(res, specs[n]["meta"])
            if res["sigterm_step"] and res["loop_s"]:
                res["steps_per_s"] = round(res["sigterm_step"] / res["loop_s"], 1)
            res["ckpts"] = file_hashes(specs[n]["ckpt"])
            results[n] = res
            print(f"{n}: exit {res['rc']}, SIGTERM at step {res['sigterm_step']}, wall {res['wall_s']:.1f} s, "
                  f"training loop {res['loop_s']} s, trainer peak RSS {res['trainer_peak_rss_kb']} KiB, "
                  f"workers gone after {res['workers_gone_s']} s", flush=True)
        with open(os.path.join(out, "progress.json"), "w") as f:
            json.dump({k: {kk: vv for kk, vv in v.items() if kk not in ("stdout", "stderr", "ckpts")}
                       for k, v in results.items()}, f, indent=1)

    if together:
        launch(["plain", "traced"])
        for n in ("plain", "traced"):
            res = results[n]
            if res["rc"] != -signal.SIGTERM or res["sigterm_step"] != a.together_steps:
                fails.append(f"the {n} run did not die of SIGTERM after step {a.together_steps}: exit {res['rc']}, "
                             f"step {res['sigterm_step']}, stderr {res['stderr'][-500:]!r}")
    else:
        launch(["plain"])
        res = results["plain"]
        if res["rc"] != -signal.SIGTERM or res["sigterm_step"] is None:
            fails.append(f"the plain run did not die of SIGTERM after a step: exit {res['rc']}, "
                         f"step {res['sigterm_step']}, stderr {res['stderr'][-500:]!r}")
        else:
            if long_mode:
                # the same step as the plain run; room for a slower traced run before the guard trips
                specs["traced"]["stop"] = f"step:{res['sigterm_step']}"
            launch(["traced"])
    if together and a.min_traced_seconds and (results["traced"]["loop_s"] or 0) < a.min_traced_seconds:
        fails.append(f"the traced run trained {results['traced']['loop_s']} s, under the "
                     f"{a.min_traced_seconds} s asked for: give --together-steps more steps")

    if "plain" in results and "traced" in results:
        A, B = results["plain"], results["traced"]
        for k in ("rc", "stdout", "stderr", "sigterm_step"):
            if A[k] != B[k]:
                fails.append(f"{k} differs: plain {A[k]!r:.600} / traced {B[k]!r:.600}")
        if list(A["ckpts"]) != list(B["ckpts"]):
            fails.append(f"checkpoints differ in names: {list(A['ckpts'])} / {list(B['ckpts'])}")
        elif A["ckpts"] != B["ckpts"]:
            fails.append("checkpoint contents differ (training not deterministic, or changed by the shim): " +
                         ", ".join(f for f in A["ckpts"] if A["ckpts"][f] != B["ckpts"][f]))
        if "on-sigterm.pt" not in B["ckpts"]:
            fails.append("the program's SIGTERM handler did not save its checkpoint under the shim")
        for name in ("plain", "traced"):
            if results[name]["timed_out"]:
                fails.append(f"the {name} run outlasted its time limit and was killed")
            if results[name]["workers_left"]:
                fails.append(f"{name}: processes still running 60 s after the trainer died: "
                             f"{results[name]['workers_left']}")

    per = []
    traces = os.path.join(out, "traced", "traces")
    for t in sorted(os.listdir(traces)) if "traced" in results else []:
        fig = trace_figures(report, os.path.join(traces, t))
        if isinstance(fig, str):
            fails.append(f"trace {fig}")
        else:
            per.append(fig)
    trainer = [p for p in per if p["launches"] > 0]
    workers = [p for p in per if p["forked"] and trainer and p["ppid"] == trainer[0]["pid"] and p["reads"] >= 1]
    ended_by_signal_flush = None
    if "traced" in results:
        if len(trainer) != 1:
            fails.append(f"expected one process with kernel launches, got {trainer}")
        else:
            # the program never returns from main: it dies of SIGTERM's default action, so a trace that
            # is whole (its END chunk there) was ended by the shim's signal flush
            ended_by_signal_flush = (not trainer[0]["truncated"]) and results["traced"]["rc"] == -signal.SIGTERM
            if trainer[0]["truncated"]:
                fails.append("the trainer's trace was cut short: the SIGTERM flush did not run")
            if trainer[0]["pid"] != results["traced"]["trainer_pid"]:
                fails.append(f"the trace with launches is pid {trainer[0]['pid']}, the trainer was "
                             f"{results['traced']['trainer_pid']}")
            r = subprocess.run([report, os.path.join(traces, trainer[0]["trace"])], capture_output=True, text=True)
            with open(os.path.join(out, "trainer-report.txt"), "w") as f:
                f.write(r.stdout + (f"\n[wslshim-report exit {r.returncode}]\n{r.stderr}" if r.returncode else ""))
        if len(workers) < 4:
            fails.append(f"expected 4 DataLoader workers' traces with reads, got {len(workers)}: {per}")
        for p in per:
            if p["dropped"]:
                fails.append(f"trace {p['trace']} dropped {p['dropped']} events")
            if p is not (trainer[0] if trainer else None) and p["truncated"]:
                fails.append(f"trace {p['trace']} (pid {p['pid']}) was cut short")

    runs = {}
    for k, v in results.items():
        runs[k] = {"rc": v["rc"], "sigterm_step": v["sigterm_step"], "wall_s": round(v["wall_s"], 1),
                   "loop_s": None if v["loop_s"] is None else round(v["loop_s"], 1),
                   "steps_per_s": v.get("steps_per_s"), "trainer_peak_rss_kb": v["trainer_peak_rss_kb"],
                   "rss_field": v.get("rss_field"), "trainer_maxrss_kb_wait4": v["trainer_maxrss_kb_wait4"],
                   "worker_peak_rss_kb": v["worker_peak_rss_kb"], "workers_gone_s": v["workers_gone_s"],
                   "stdout_lines": v["stdout"].count("\n"), "stderr_bytes": len(v["stderr"]),
                   "checkpoints": len(v["ckpts"]), "timed_out": v["timed_out"]}
    same = {}
    if len(results) == 2:
        A, B = results["plain"], results["traced"]
        same = {k: A[k] == B[k] for k in ("rc", "stdout", "stderr", "ckpts")}
    summary = {"ok": not fails, "failures": fails,
               "mode": "together" if together else "run-seconds" if long_mode else "seconds",
               "run_seconds": a.run_seconds if long_mode else None, "together_steps": a.together_steps,
               "torch": torch_version,
               "steps": results.get("traced", results["plain"])["sigterm_step"],
               "rc": results.get("traced", results["plain"])["rc"],
               "wall_s": {k: round(v["wall_s"], 1) for k, v in results.items()},
               "runs": runs, "same_as_plain": same,
               "trainer_ended_by_signal_flush": ended_by_signal_flush,
               "trainer": trainer[0] if len(trainer) == 1 else None,
               "workers": {"count": len(workers), "reads": sum(p["reads"] for p in workers),
                           "bytes_read": sum(p["bytes_read"] for p in workers),
                           "events": sum(p["events"] for p in workers),
                           "dropped": sum(p["dropped"] for p in workers),
                           "trace_bytes": sum(p["bytes"] for p in workers)},
               "traces": per}
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1)
    for f_ in fails:
        print("FAIL", f_)
    if fails:
        return 1
    print(f"OK: {len(per)} traces read back ({len(workers)} workers), exit {B['rc']} and output as without the shim; "
          f"SIGTERM at step {summary['steps']}; wall {summary['wall_s']}; steps/s "
          f"{ {k: v['steps_per_s'] for k, v in runs.items()} }")
    return 0


if __name__ == "__main__":
    sys.exit(main())
