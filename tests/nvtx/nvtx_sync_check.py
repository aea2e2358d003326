#!/usr/bin/env python3
"""Waits credited to NVTX ranges end to end: nvtx_sync_client (fake driver, nvtx3 headers) runs
without the shim and under it; its output must be the same, and the report's cuda_host.by_range
and sync_heavy's by_range evidence must credit each range with exactly the waits the client made
inside it (derived here from its arguments), the innermost range of the waiting thread counting.

    nvtx_sync_check.py SHIM REPORT FAKE_LIB_DIR CLIENT WORKDIR"""
import json
import os
import re
import shutil
import subprocess
import sys

shim, report, fakedir, client, work = sys.argv[1:6]
STEPS, FORWARD, METRICS, PREFETCH = 40, 3, 12, 30
SYNC_NS, COPY_NS = 200000, 50000
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run(traces):
    env = dict(os.environ, LD_LIBRARY_PATH=fakedir, FAKE_CUDA_SYNC_NS=str(SYNC_NS), FAKE_CUDA_COPY_NS=str(COPY_NS))
    env.pop("NVTX_INJECTION64_PATH", None)
    if traces:
        env["LD_PRELOAD"] = shim
        env["WSLSHIM_OUTPUT"] = os.path.join(traces, "%p.trace.zst")
    p = subprocess.run([client, str(STEPS), str(FORWARD), str(METRICS), str(PREFETCH)], env=env,
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        sys.exit(f"FAIL: client exited {p.returncode}: {p.stderr}")
    return p.stdout


shutil.rmtree(work, ignore_errors=True)
traces = os.path.join(work, "traces")
os.makedirs(traces)
plain = run(None)
shimmed = run(traces)
check(plain == shimmed, f"output differs under the shim:\n{plain}\n---\n{shimmed}")
r = subprocess.run([report, "--json", traces], capture_output=True, text=True, timeout=120)
if r.returncode != 0:
    sys.exit(f"FAIL: report exited {r.returncode}: {r.stderr}")
rep = json.loads(r.stdout)

# every wait the client made, by the range innermost on its thread ("prefetch" is the domain
# "loader"'s, on the second thread); the last cuCtxSynchronize is in none
want = {"step": STEPS, "forward": STEPS * FORWARD, "metrics": STEPS * METRICS, "prefetch": PREFETCH}
waits = rep["cuda_host"]["waits"]
total = sum(w["count"] for w in waits.values())
check(total == sum(want.values()) + 1, f"{total} waits in all, expected {sum(want.values()) + 1}: {waits}")
check(waits["blocking_copy"]["count"] == STEPS * METRICS, f"blocking copies {waits['blocking_copy']}")
by_range = {x["name"]: x for x in rep["cuda_host"]["by_range"]}
check(len(by_range) == len(rep["cuda_host"]["by_range"]), f"a name twice: {rep['cuda_host']['by_range']}")
got = {name: x["waits"] for name, x in by_range.items()}
check(got == want, f"cuda_host.by_range waits {got}, expected {want}")
# the host time in them: at least what the fake driver spent in each wait
floor = {"step": STEPS * SYNC_NS, "forward": STEPS * FORWARD * SYNC_NS, "metrics": STEPS * METRICS * COPY_NS,
         "prefetch": PREFETCH * SYNC_NS}
lost_total = sum(w["lost_ns"] for w in waits.values())
blocked_total = sum(w["blocked_ns"] for w in waits.values())
for name, x in by_range.items():
    check(floor.get(name, 0) <= x["blocked_ns"], f"{name}: {x['blocked_ns']} ns blocked, expected at least "
          f"{floor.get(name)}")
    check(0 < x["lost_ns"] <= x["blocked_ns"], f"{name}: lost {x['lost_ns']} ns of {x['blocked_ns']} ns blocked")
check(sum(x["blocked_ns"] for x in by_range.values()) <= blocked_total, "ranges blocked more than all the waits")
check(sum(x["lost_ns"] for x in by_range.values()) <= lost_total, "ranges lost more than all the waits")

# sync_heavy fires, and its evidence names the same ranges with the same counts, most time lost first
found = {b["id"]: b for b in rep["bottlenecks"]}
sh = found.get("sync_heavy")
check(sh is not None, f"sync_heavy did not fire: {sorted(found)}")
if sh:
    lines = sh["evidence"].get("by_range", [])
    parsed = [re.match(r"(.+): (\d+) waits, .+ blocked, .+ lost$", line) for line in lines]
    check(all(parsed), f"evidence by_range lines {lines}")
    ev = [(m.group(1), int(m.group(2))) for m in parsed if m]
    check(dict(ev) == want, f"evidence by_range {ev}, expected {want}")
    order = [n for n, _ in sorted(by_range.items(), key=lambda kv: -kv[1]["lost_ns"])]
    check([n for n, _ in ev] == order, f"evidence order {[n for n, _ in ev]}, expected by time lost {order}")
# the text report's "Waits for the GPU" lists the same ranges with the same counts, and the kinds' counts
t = subprocess.run([report, traces], capture_output=True, text=True, timeout=120)
lines = t.stdout.splitlines()
if check(t.returncode == 0 and "Waits for the GPU" in lines, f"text report without waits (exit {t.returncode})"):
    sect = lines[lines.index("Waits for the GPU") + 1:]
    sect = sect[:sect.index("")] if "" in sect else sect
    kinds = {m.group(1): int(m.group(2)) for m in (re.match(r"  (\w+) +(\d+) +\S+ \w+ +\S+ \w+$", l) for l in sect) if m}
    check(kinds == {k: w["count"] for k, w in waits.items() if w["count"]}, f"text waits per kind {kinds}, JSON {waits}")
    at = next((i for i, l in enumerate(sect) if l.startswith("  by NVTX range")), None)
    rows = [re.match(r" +(\d+) +\S+ \w+ +\S+ \w+  (.+)$", l) for l in sect[at + 2:]] if at is not None else []
    check(all(rows) and {m.group(2): int(m.group(1)) for m in rows} == want,
          f"text waits by range {sect}, expected {want}")
# the HTML report shows the same evidence
page = os.path.join(work, "report.html")
h = subprocess.run([report, "--html", page, traces], capture_output=True, text=True, timeout=120)
html = open(page, encoding="utf-8").read() if h.returncode == 0 else ""
check(all(f"{name}: {n} waits" in html for name, n in want.items()),
      f"HTML report without the ranges' waits (exit {h.returncode})")

if failures:
    sys.exit("FAIL:\n  " + "\n  ".join(failures))
print(f"OK: {got}; sync_heavy by_range {sh['evidence']['by_range']}")
