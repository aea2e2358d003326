#!/usr/bin/env python3
"""NVTX capture end to end: nvtx_client (built from the nvtx3 headers, no
library linked) runs without the shim and under it; its output must be the
same, and the report's NVTX counts, nesting and attribution must equal exactly
what the client did (derived here from its arguments).

    nvtx_check.py SHIM REPORT CLIENT WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

shim, report, client, work = sys.argv[1:5]
N, T, R, B = 40, 4, 25, 4096
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def run(env_extra, traces):
    env = dict(os.environ)
    env.pop("NVTX_INJECTION64_PATH", None)
    env.update(env_extra)
    if traces:
        env["LD_PRELOAD"] = shim
        env["WSLSHIM_OUTPUT"] = os.path.join(traces, "%p.trace.zst")
    p = subprocess.run([client, str(N), str(T), data, str(R), str(B)], env=env, capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAIL: client exited {p.returncode}: {p.stderr}")
    return p.stdout


def report_of(traces):
    p = subprocess.run([report, "--json", traces], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAIL: report exited {p.returncode}: {p.stderr}")
    return json.loads(p.stdout)


shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
data = os.path.join(work, "data.bin")
with open(data, "wb") as f:
    f.write(os.urandom(B))

# 1. Under the shim, with nothing set: every range counted exactly.
plain = run({}, None)
traces = os.path.join(work, "traces")
os.makedirs(traces)
shimmed = run({}, traces)
check(plain == shimmed, f"output differs under the shim:\n{plain}\n---\n{shimmed}")
check("environ names an injection library: 0" in shimmed, "the environment was changed")
rep = report_of(traces)
check(len(rep["processes"]) == 2, f"{len(rep['processes'])} processes (want the client and its forked child)")

ranges = {(r["kind"], r["domain"], r["name"]): r for r in rep["nvtx"]}
want = {
    ("push", None, "outer"): dict(count=N + 5, top_level=N + 5, max_depth=0),
    ("push", None, "inner"): dict(count=2 * N, top_level=0, max_depth=1),
    ("push", None, "wide_r\u00e4nge_\u2713"): dict(count=N, top_level=N),
    ("push", None, "ex_ascii"): dict(count=N),
    ("push", None, "registered"): dict(count=N),
    ("push", "mydomain", "dom_range"): dict(count=N, top_level=N),
    ("push", "mydomain", "dom_registered_wide"): dict(count=N),
    ("push", None, "interleave_outer"): dict(count=1, top_level=1),
    ("push", "mydomain", "dom_inner"): dict(count=1, max_depth=1, top_level=0),
    ("start", None, "async"): dict(count=N, unclosed=0),
    ("start", "mydomain", "dom_async"): dict(count=N, unclosed=0),
    ("push", None, "worker"): dict(count=T * N, top_level=T * N),
    ("push", None, "worker_inner"): dict(count=T * N, max_depth=1),
    ("push", None, "io_outer"): dict(count=1, io_reads=0, io_calls=0),
    ("push", None, "io_range"): dict(count=1, io_reads=R, io_bytes=R * B, io_calls=R, max_depth=1),
    ("push", None, "unclosed"): dict(count=1, unclosed=1),
}
for key, fields in want.items():
    r = ranges.get(key)
    if not r:
        failures.append(f"range {key} missing")
        continue
    for k, v in fields.items():
        check(r[k] == v, f"range {key}: {k} = {r[k]}, want {v}")
    check(r["api_calls"] == 0 and r["launches"] == 0, f"range {key}: CUDA calls attributed in a program with none")
extra = sorted(set(ranges) - set(want))
check(not extra, f"ranges the client never made: {extra}")
io_outer = ranges.get(("push", None, "io_outer"), {})
check(io_outer.get("inclusive", {}).get("io_reads") == R and io_outer["inclusive"]["io_bytes"] == R * B,
      f"io_outer inclusive reads {io_outer.get('inclusive')}, want {R} reads of {R * B} bytes")
outer, inner = ranges.get(("push", None, "outer")), ranges.get(("push", None, "inner"))
if outer and inner:
    check(outer["total_ns"] >= inner["total_ns"] > 0, "nested time: outer must hold inner's time")
    check(outer["p50_ns"] <= outer["p99_ns"] <= outer["max_ns"], "outer quantiles out of order")

marks = {(m["domain"], m["name"]): m["count"] for m in rep["nvtx_summary"]["marks_by_name"]}
check(marks == {(None, "marker"): N, (None, "wide_mark"): 1, ("mydomain", "dom_mark"): 3}, f"marks {marks}")

pushes = (N + 5) + 2 * N + N + 2 * N + 2 * N + 2 + T * 2 * N + 2 + 1
s = rep["nvtx_summary"]
want_summary = dict(pushes=pushes, pops=pushes - 1 + 1, unmatched_pops=1, starts=2 * N, ends=2 * N,
                    unmatched_ends=0, unclosed=1, marks=N + 4, unnamed_ids=0, dropped=0)
for k, v in want_summary.items():
    check(s[k] == v, f"nvtx_summary.{k} = {s[k]}, want {v}")
check(s["step"] is not None and s["step"]["name"] == "worker" and s["step"]["steps"] == T * N,
      f"step {s['step']}: want the most frequent top-level range, worker")
proc = (s["step"] or {}).get("process")
check(proc is not None and proc["steps"] == T * N and proc["launches_per_step"] == 0,
      f"step process-wide figures {proc}: want {T * N} steps (the workers' overlapping ones), no launches")
check(not any(a.startswith("nvtx") for a in rep["api"]), "NVTX calls listed among the CUDA APIs")
text = subprocess.run([report, traces], capture_output=True, text=True).stdout
check("NVTX ranges by total time" in text and "Per step (range \"worker\"" in text, "text report lacks the NVTX section")

# 2. WSLSHIM_NVTX=0: no injection, nothing recorded, same output.
off = os.path.join(work, "off")
os.makedirs(off)
check(run({"WSLSHIM_NVTX": "0"}, off) == plain, "output differs with WSLSHIM_NVTX=0")
check(report_of(off)["nvtx"] == [], "NVTX recorded with WSLSHIM_NVTX=0")

# 3. A library the user names wins over the shim (here one that does not exist: NVTX stays a no-op).
user = os.path.join(work, "user")
os.makedirs(user)
env = {"NVTX_INJECTION64_PATH": os.path.join(work, "no-such-tool.so")}
check(run(env, user) == run(env, None), "output differs when the user names an injection library")
check(report_of(user)["nvtx"] == [], "the shim took over an injection library the user named")

if failures:
    print("FAIL:\n  " + "\n  ".join(failures))
    sys.exit(1)
print(f"OK: {len(want)} range names, {pushes} pushes, {2 * N} start/end ranges across threads, "
      f"{N + 4} marks, {R} reads attributed; output unchanged")
