#!/usr/bin/env python3
# Run on the H100 host 2026-11-27 by tests/gpu/estimate_oos.sh over five programs (docs/gpu-timing.md,
# "Queued and idle measures": idle starts 0.68-1.04 us late, queued pairs 2.50-2.63 us early, medians).
# Where a timed launch's kernel really starts and ends, against the shim's GPU_KERNEL times: under the
# shim with every launch timed (WSLSHIM_GPU_TIMING=1) AND torch.profiler on, launch by launch.
#   python3 idle_start.py run NAME OUTJSON        (under the shim: CUPTI's kernels, each launch's start/end)
#   python3 idle_start.py cmp OUTJSON RUN.db|RUN.json  (wslshim-report --sqlite, or --gpu-pair-correction=none --chrome,
#                                                       of the shim's trace)
# The k-th timed sample of a kernel (by its launch call's start) is paired with CUPTI's k-th launch of the
# same name (by start); kernels whose counts differ are left out. CUPTI's clock is put on the shim's by the
# median of (shim end - CUPTI end) over the launches found queued (their end is e1: the pair's own end).
# Per kernel it prints, for the launches found idle at submit: the kernel's start after its launch call
# began (CUPTI), the launch call's length, what the shim's start misses (shim start - CUPTI start) and its
# end's error; for the queued ones the pair's start before the kernel and the end's error.
import json, os, sys, importlib.util, statistics as st
here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("cc", os.path.join(here, "coverage_check.py"))
cc = importlib.util.module_from_spec(spec); spec.loader.exec_module(cc)

if sys.argv[1] == "run":
    spec = importlib.util.spec_from_file_location("pair_cupti", os.path.join(here, "pair_cupti.py"))
    pc = importlib.util.module_from_spec(spec); spec.loader.exec_module(pc)
    per = {}
    for n, a, b in pc.profiled_kernels(sys.argv[2]):
        per.setdefault(n, []).append((a, b))  # us
    json.dump({k: sorted(v) for k, v in per.items()}, open(sys.argv[3], "w"))
    sys.exit(0)

def chrome_rows(path):
    """Timed launches from `wslshim-report --gpu-pair-correction=none --chrome FILE` (the builds on the GPU
    hosts have no SQLite): (name, launch call start, shim start, shim end, idle at submit, mapped), ns on the
    export's clock, in launch order. A kernel's slice (cat kernel) is followed by its launch flow's start."""
    doc = json.load(open(path))
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    out, last = [], None
    for e in evs:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            a = e.get("args", {})
            last = [e["name"], None, e["ts"] * 1e3, (e["ts"] + e["dur"]) * 1e3, bool(a.get("idle_at_submit")),
                    bool(a.get("mapped"))]
            out.append(last)
        elif e.get("ph") == "s" and e.get("cat") == "ac2g" and last is not None and last[1] is None:
            last[1] = e["ts"] * 1e3
    rows = [tuple(r) for r in out if r[1] is not None and not r[0].startswith(("graph ", "function 0x"))]
    return sorted(rows, key=lambda r: r[1])


per = json.load(open(sys.argv[2]))
if sys.argv[3].endswith(".db"):
    import sqlite3
    db = sqlite3.connect(sys.argv[3])
    rows = db.execute("SELECT coalesce(k.name, s.kernel), s.launch_ns, s.start_ns, s.end_ns, s.idle_at_submit, s.mapped "
                      "FROM gpu_samples s LEFT JOIN kernels k ON k.mangled = s.kernel WHERE s.graph = 0 "
                      "ORDER BY s.launch_ns").fetchall()
else:
    rows = chrome_rows(sys.argv[3])
norm = {cc.norm_name(n): v for n, v in per.items()}
by = {}
for r in rows:
    if r[0]:
        by.setdefault(cc.norm_name(r[0]), []).append(r)
pairs = []  # (name, shim row, cupti (start_ns, end_ns) on CUPTI's clock)
for n, ss in by.items():
    c = norm.get(n)
    if not c:
        cand = [v for nn, v in norm.items() if nn.startswith(n[:60]) or n.startswith(nn[:60])]
        c = cand[0] if len(cand) == 1 else None
    if not c or len(c) != len(ss):
        print(f"left out: {n[:70]} (shim {len(ss)}, CUPTI {len(c) if c else 0})")
        continue
    for s, (a, b) in zip(ss, c):
        pairs.append((n, s, a * 1000.0, b * 1000.0))
q = [p[1][3] - p[3] for p in pairs if not p[1][4] and p[1][5]]
if not q:
    sys.exit("no queued mapped launch to align the clocks with")
off = st.median(q)
print(f"{len(pairs)} launches paired; clock offset from {len(q)} queued launches' ends; "
      f"spread of those ends (p10..p90) {st.quantiles(q, n=10)[0] - off:+.0f} .. {st.quantiles(q, n=10)[-1] - off:+.0f} ns")


def med(xs):
    return st.median(xs) / 1e3 if xs else float("nan")


print("kernel | idle n | CUPTI us | kernel start after call start us | call us | shim start late us | shim end err us"
      " | queued n | pair start early us | end err us")
agg = {}
for n, s, a, b in pairs:
    g = agg.setdefault(n, {"idle": [], "queued": []})
    cs, ce = a + off, b + off
    launch0, start, end, idle = s[1], s[2], s[3], s[4]
    if idle:
        g["idle"].append((ce - cs, cs - launch0, start - launch0, start - cs, end - ce))
    else:
        g["queued"].append((ce - cs, cs - start, end - ce))
tot = {"idle_late": 0.0, "idle_n": 0}
for n, g in sorted(agg.items(), key=lambda kv: -sum(x[0] for x in kv[1]["idle"] + kv[1]["queued"])):
    i, qd = g["idle"], g["queued"]
    dur = med([x[0] for x in i + qd])
    print(f"{n[:60]} | {len(i)} | {dur:.2f} | {med([x[1] for x in i]):.2f} | {med([x[2] for x in i]):.2f} | "
          f"{med([x[3] for x in i]):.2f} | {med([x[4] for x in i]):.2f} | {len(qd)} | {med([x[1] for x in qd]):.2f} | "
          f"{med([x[2] for x in qd]):.2f}")
    tot["idle_late"] += sum(x[3] for x in i)
    tot["idle_n"] += len(i)
allidle = [x for g in agg.values() for x in g["idle"]]
if allidle:
    print(f"idle launches {len(allidle)}: kernel start after call start p10/p50/p90 "
          f"{[round(v / 1e3, 2) for v in st.quantiles([x[1] for x in allidle], n=10)[::4]]} us; "
          f"call length p10/p50/p90 {[round(v / 1e3, 2) for v in st.quantiles([x[2] for x in allidle], n=10)[::4]]} us; "
          f"shim start late in total {tot['idle_late'] / 1e6:.2f} ms")
allq = [x for g in agg.values() for x in g["queued"]]
if allidle and allq:
    late = st.median([x[3] for x in allidle]) / 1e3
    early = st.median([x[1] for x in allq]) / 1e3
    # The report's split correction takes D/2 off each queued timed launch and adds D/2 to each idle one, D
    # being late + early as the report sees them: it is right where the two are equal.
    print(f"summary: idle start late p50 {late:.2f} us ({len(allidle)}), queued pair early p50 {early:.2f} us "
          f"({len(allq)}); late share of D {late / (late + early) if late + early else float('nan'):.2f} "
          f"(the split assumes 0.50); idle end err p50 {st.median([x[4] for x in allidle]) / 1e3:+.2f} us, "
          f"queued end err p50 {st.median([x[2] for x in allq]) / 1e3:+.2f} us")
