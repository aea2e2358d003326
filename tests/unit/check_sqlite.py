#!/usr/bin/env python3
"""wslshim-report --sqlite: runs docs/sqlite.md's example queries on a run and checks their
results against the JSON report of the same run; bad uses exit 2 with one line.

    check_sqlite.py --report EXE --doc docs/sqlite.md --work DIR [--make-trace EXE] RUN...
"""
import argparse
import json
import os
import re
import sqlite3
import subprocess
import sys

FAILS = []


def check(cond, msg):
    if not cond:
        FAILS.append(msg)


def close(a, b, rel=0.001):
    return abs(a - b) <= max(1, rel * max(abs(a), abs(b)))


def doc_queries(path):
    text = open(path).read()
    out = {}
    for block in re.findall(r"```sql\n(.*?)```", text, re.S):
        m = re.match(r"-- Q: (\w+)\n", block)
        check(m, f"a query block without '-- Q: name': {block[:60]!r}")
        if m:
            out[m.group(1)] = block
    return out


def check_run(a, queries, run, db):
    if os.path.exists(db):
        os.unlink(db)
    r = subprocess.run([a.report, "--sqlite", db, run], capture_output=True, text=True)
    check(r.returncode == 0 and r.stdout == "", f"{run}: --sqlite exit {r.returncode}: {r.stderr.strip()}")
    if r.returncode != 0:
        return
    rep = json.loads(subprocess.run([a.report, "--json", run], capture_output=True, text=True, check=True).stdout)
    c = sqlite3.connect(db)
    res = {}
    for name, sql in queries.items():
        try:
            res[name] = c.execute(sql).fetchall()
        except sqlite3.Error as e:
            check(False, f"{run}: query {name}: {e}")
            res[name] = []
        print(f"-- {name} ({len(res[name])} rows)")
        for row in res[name][:12]:
            print("  ", row)
    check(len(res.get("processes", [])) == len(rep["processes"]), f"{run}: processes {len(res.get('processes', []))}"
          f" != {len(rep['processes'])}")
    got = {n: (calls, total) for n, calls, total, _ in res.get("api_time", [])}
    for n, v in rep["api"].items():
        g = got.get(n)
        check(g and g[0] == v["calls"] and close(g[1], v["total_ns"]), f"{run}: api {n}: {g} vs {v['calls']} "
              f"calls {v['total_ns']} ns")
    check(got, f"{run}: api_time is empty")
    got = {n: (cnt, tot) for n, cnt, tot in res.get("nvtx_ranges", [])}
    for v in rep["nvtx"]:
        g = got.get(v["name"])
        check(g and g[0] == v["count"] and close(g[1], v["total_ns"]), f"{run}: nvtx {v['name']}: {g} vs {v}")
    timed = sum(row[1] for row in c.execute("SELECT kernel, count(*) FROM gpu_samples GROUP BY kernel"))
    check(timed == rep["gpu"]["kernels_timed"] + rep["gpu"].get("graphs_timed", 0),
          f"{run}: gpu_samples {timed} vs kernels_timed {rep['gpu']['kernels_timed']}")
    got = {n: calls for n, calls, _ in res.get("io_by_call", [])}
    for n, v in rep["io_calls"].items():
        check(got.get(n) == v["calls"], f"{run}: io_calls {n}: {got.get(n)} vs {v['calls']}")
    steady = {pid: steps for pid, _, _, steps, _ in res.get("steady_state", [])}
    for p, ph in zip(rep["processes"], rep["phases"]):
        if ph.get("steps") is not None and ph.get("phases"):
            check(steady.get(p["pid"]) == ph["steps"], f"{run}: steady steps of {p['pid']}: {steady.get(p['pid'])}"
                  f" vs {ph['steps']}")
    for t in ("processes", "threads", "api_calls", "kernels", "gpu_samples", "nvtx_ranges", "phases", "files",
              "io_calls"):
        c.execute(f"SELECT * FROM {t} LIMIT 1").fetchall()
    idx = [r[0] for r in c.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name NOT LIKE 'sqlite_%'")]
    check(len(idx) >= 8, f"{run}: indexes {idx}")
    c.close()


def one_line_exit2(a, args, needle):
    r = subprocess.run([a.report] + args, capture_output=True, text=True)
    lines = r.stderr.splitlines()
    check(r.returncode == 2 and len(lines) == 1 and needle in r.stderr and r.stdout == "",
          f"{args}: exit {r.returncode}, stderr {r.stderr!r} (expected one line with {needle!r})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--doc", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--make-trace")
    ap.add_argument("runs", nargs="*")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    queries = doc_queries(a.doc)
    for need in ("processes", "api_time", "nvtx_ranges", "gpu_kernels", "io_by_call", "reads_by_fs",
                 "steady_state", "launches_per_step"):
        check(need in queries, f"docs/sqlite.md lacks the query {need}")
    runs = list(a.runs)
    if a.make_trace:
        t = os.path.join(a.work, "synthetic.trace.zst")
        subprocess.run([a.make_trace, t], check=True, capture_output=True)
        runs.append(t)
    for i, run in enumerate(runs):
        check_run(a, queries, run, os.path.join(a.work, f"run{i}.db"))
    if runs:
        one_line_exit2(a, ["--sqlite", "-", runs[0]], "not '-'")
        one_line_exit2(a, ["--sqlite", os.path.join(a.work, "run0.db"), "--json", runs[0]], "leave out --json")
        one_line_exit2(a, ["--sqlite", os.path.join(a.work, "no/such/dir/x.db"), runs[0]], "cannot write")
        one_line_exit2(a, ["--sqlite"], "needs a value")
    for f in FAILS:
        print("FAIL:", f)
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
