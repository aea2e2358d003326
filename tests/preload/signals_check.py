#!/usr/bin/env python3
"""Signals under the shim: for every signal the shim handles and every way a
program treats it (no handler, SIG_IGN, its own handler set by sigaction or
signal(), SA_RESETHAND, a faulthandler-style re-raise, from a thread), the
program's output, exit status and terminating signal are the same with and
without the shim, and the trace holds every driver call made before the
signal, ended properly (not cut short). Then quick_exit, exit() from a
thread, and Python's own SIGINT handler (KeyboardInterrupt).
    signals_check.py SHIM REPORT FAKEDIR CLIENT WORKDIR"""
import glob, json, os, resource, shutil, signal, subprocess, sys

shim, report, fakedir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
N = 1000
failures = []


def no_core():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def run(argv, tracedir=None, timeout=30):
    env = dict(os.environ, LD_LIBRARY_PATH=fakedir, WSLSHIM_IO="0")
    env.pop("LD_PRELOAD", None)
    if tracedir:
        env.update(LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tracedir, "%p.trace.zst"))
    p = subprocess.run(argv, env=env, capture_output=True, timeout=timeout, preexec_fn=no_core)
    return p.returncode, p.stdout, p.stderr


def check(name, argv, want_calls=None, api="cuCtxSynchronize", io=False):
    tracedir = os.path.join(work, name)
    os.makedirs(tracedir)
    base = run(argv)
    shimmed = run(argv, tracedir)
    if base != shimmed:
        failures.append(f"{name}: without the shim {base!r}, with it {shimmed!r}")
        return
    traces = glob.glob(os.path.join(tracedir, "*.trace.zst*"))
    if len(traces) != 1:
        failures.append(f"{name}: {len(traces)} traces")
        return
    r = subprocess.run([report, "--json", tracedir], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{name}: report exit {r.returncode}: {r.stderr.strip()}")
        return
    d = json.loads(r.stdout)
    proc = d["processes"][0]
    calls = d["api"].get(api, {}).get("calls", 0)
    if proc.get("truncated") or "cut short" in r.stderr:
        failures.append(f"{name}: trace cut short (not flushed and ended)")
    elif want_calls is not None and calls != want_calls:
        failures.append(f"{name}: {calls} {api} calls in the trace, expected {want_calls}")
    else:
        print(f"ok  {name}: status {base[0]}, {calls} {api} calls, output {base[1].decode().strip()!r}")


for sig in ("SEGV", "BUS", "ABRT", "TERM", "INT"):
    for how in ("dfl", "ign", "handler_exit", "signal_exit", "resethand", "reraise", "thread", "query"):
        check(f"{sig}-{how}", [client, sig, how, str(N)], N)
check("quick_exit", [client, "TERM", "quick_exit", str(N)], N)
check("thread_exit", [client, "TERM", "thread_exit", str(N)], N)

# Python installs its own SIGINT handler at start (after the shim's): Ctrl-C
# becomes KeyboardInterrupt, whose traceback and exit by SIGINT must be as
# without the shim. The trace must end properly.
data = os.path.join(work, "python-data")
with open(data, "w") as f:
    f.write("x" * 100)
py = ("import os, signal, time\n"
      f"for i in range(50):\n"
      f"    open({data!r}).read()\n"
      "print('handler is python:', signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)\n"
      "os.kill(os.getpid(), signal.SIGINT)\n"
      "time.sleep(5)\n")
env_io = dict(os.environ)
tracedir = os.path.join(work, "python-sigint")
os.makedirs(tracedir)
def py_run(traced):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if traced:
        env.update(LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tracedir, "%p.trace.zst"))
    p = subprocess.run([sys.executable, "-c", py], env=env, capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout, p.stderr
a, b = py_run(False), py_run(True)
if a != b:
    failures.append(f"python-sigint: without the shim {a!r}, with it {b!r}")
elif a[0] != -signal.SIGINT or "KeyboardInterrupt" not in a[2]:
    failures.append(f"python-sigint: unexpected baseline {a!r}")
else:
    r = subprocess.run([report, "--json", tracedir], capture_output=True, text=True)
    d = json.loads(r.stdout) if r.returncode == 0 else {}
    procs = [p for p in d.get("processes", []) if "python" in os.path.basename(p["exe"])]
    opens = procs[0]["io"]["opens"] if procs else 0
    if r.returncode != 0 or not procs or procs[0].get("truncated") or opens < 50:
        failures.append(f"python-sigint: report {r.returncode} {r.stderr.strip()} files_opened={opens}")
    else:
        print(f"ok  python-sigint: status {a[0]}, KeyboardInterrupt as without the shim, {opens} opens in the trace")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print("OK: all signal cases behave as without the shim and their traces are complete")
