#!/usr/bin/env python3
"""Sustained load on the shim: THREADS threads making RATE driver calls per
second in total for SECONDS (default 8 x 5 M/s x 20 s). Checks and prints:
the calls made, the events in the trace and the drops it counts (their sum
must equal the calls, exactly), peak RSS with and without the shim, the trace
size, and the writer's share of CPU. Speed is measured here, not asserted in
ctest.
    tests/bench/run_load.py BUILD [--threads 8] [--rate 5e6] [--seconds 20]"""
import argparse, json, os, shutil, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("build")
ap.add_argument("--threads", type=int, default=8)
ap.add_argument("--rate", type=float, default=5e6)
ap.add_argument("--seconds", type=float, default=20)
a = ap.parse_args()
build = os.path.abspath(a.build)
bench = os.path.join(build, "tests", "bench", "load_bench")
report = os.path.join(build, "analyzer", "wslshim-report")
tmp = tempfile.mkdtemp()
env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(build, "tests", "fake_cuda", "lib"), WSLSHIM_IO="0")
env.pop("LD_PRELOAD", None)


def run(traced):
    pre = []
    if traced:
        pre = ["env", "LD_PRELOAD=" + os.path.join(build, "lib", "libwslshim.so"),
               "WSLSHIM_OUTPUT=" + os.path.join(tmp, "%p.trace.zst")]
    # GNU time measures the program itself (a Python child's RSS before exec would count otherwise)
    p = subprocess.run(["/usr/bin/time", "-f", "RUSAGE %M %U %S"] + pre + [bench, str(a.threads), str(a.rate),
                       str(a.seconds)], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"load_bench failed: {p.returncode} {p.stderr}")
    d = json.loads(p.stdout)
    ru = [l.split() for l in p.stderr.splitlines() if l.startswith("RUSAGE ")][-1]
    d["maxrss_mib"] = round(int(ru[1]) / 1024, 1)
    d["cpu_s"] = round(float(ru[2]) + float(ru[3]), 2)
    return d


plain = run(False)
traced = run(True)
traces = [os.path.join(tmp, f) for f in os.listdir(tmp)]
r = subprocess.run([report, "--json", tmp], capture_output=True, text=True)
rep = json.loads(r.stdout)
proc = rep["processes"][0]
in_trace = sum(v["calls"] for v in rep["api"].values())
out = {
    "threads": a.threads, "rate_asked": a.rate, "seconds": a.seconds,
    "calls_made": traced["calls"], "calls_per_s": traced["calls_per_s"],
    "events_in_trace": in_trace, "events_dropped": proc["dropped"],
    "account_exact": in_trace + proc["dropped"] == traced["calls"],
    "trace_mib": round(sum(os.path.getsize(t) for t in traces) / 2**20, 2),
    "bytes_per_event": round(sum(os.path.getsize(t) for t in traces) / max(in_trace, 1), 3),
    "maxrss_mib_without": plain["maxrss_mib"], "maxrss_mib_with": traced["maxrss_mib"],
    "cpu_s_without": plain["cpu_s"], "cpu_s_with": traced["cpu_s"],
    "nproc": os.cpu_count(),
}
print(json.dumps(out, indent=1))
shutil.rmtree(tmp)
sys.exit(0 if out["account_exact"] else 1)
