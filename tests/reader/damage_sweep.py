#!/usr/bin/env python3
"""A sweep of damaged traces through wslshim-report (docs/reliability.md, "Bad input to the tools").

    damage_sweep.py --report EXE --sample DIR --work DIR [--shim LIB --fakedir DIR --client EXE]

From real traces (the demo's sample run, recorded by the shim; with --shim also one recorded here):
cuts at many offsets, byte flips, trailing bytes, concatenations, deleted, repeated and swapped
frames, data after END, empty and foreign files. Every run must end with exit 0 or 2 (never a crash,
never a hang); 2 with exactly one line on stderr; 0 with a warning whenever the events read differ
from the undamaged trace's (which its END confirms). It prints the outcomes as a Markdown table.
"""
import argparse, collections, gzip, os, random, shutil, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from damage import events_of, frames, record  # noqa: E402
# A swap of two frames of a 1.2 trace keeps every event and END's count: only the chunk numbers of
# 1.7 traces show it, so the sweep asks for a warning there only.

ap = argparse.ArgumentParser()
ap.add_argument("--report", required=True)
ap.add_argument("--sample", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--shim")
ap.add_argument("--fakedir")
ap.add_argument("--client")
a = ap.parse_args()
work = os.path.join(a.work, "sweep")
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
rnd = random.Random(2028)

sources = [os.path.join(a.sample, f) for f in ("1658.trace.zst", "1684.trace.zst")]
if a.shim:
    sources.append(record(a.shim, a.fakedir, a.client, work))
cases = []  # (kind, source index or None, bytes)
for si, src in enumerate(sources):
    b = open(src, "rb").read()
    fr = frames(b)
    for k in range(16):  # cuts at offsets spread over the file, and at frame ends
        cases.append(("cut at a random byte", si, b[:rnd.randrange(1, len(b))]))
    for s, e in fr[1:5]:
        cases.append(("cut at a frame's end", si, b[:e]))
    for k in range(16):
        x = bytearray(b)
        x[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        cases.append(("one bit flipped", si, bytes(x)))
    for k in range(3):
        x = bytearray(b)
        at = rnd.randrange(len(b) - 64)
        x[at:at + 64] = bytes(64)
        cases.append(("64 bytes zeroed", si, bytes(x)))
    cases.append(("a zero byte appended", si, b + b"\0"))
    cases.append(("junk appended", si, b + os.urandom(300)))
    other = open(sources[(si + 1) % len(sources)], "rb").read()
    cases.append(("two traces concatenated", si, b + other))
    cases.append(("two traces concatenated", si, b[:fr[len(fr) // 2][0]] + other))  # the first one cut
    for k in (1, len(fr) // 2, len(fr) - 2):
        s, e = fr[k]
        cases.append(("a frame deleted", si, b[:s] + b[e:]))
        cases.append(("a frame repeated", si, b[:e] + b[s:]))
        if k + 1 < len(fr):
            s2, e2 = fr[k + 1]
            cases.append(("two frames swapped", si, b[:s] + b[s2:e2] + b[s:e] + b[e2:]))
    cases.append(("frames after END", si, b + b[fr[1][0]:fr[min(3, len(fr) - 1)][1]]))
for data in (b"", b"\0" * 100, b"hello, not a trace\n", gzip.compress(b"WSLSHIM\0" * 50), os.urandom(4096),
             open(sources[0], "rb").read()[:40]):
    cases.append(("empty or foreign file", None, data))

truth, usual = {}, {}  # events of each undamaged trace; the warnings it gives anyway (dropped events...)
for si, src in enumerate(sources):
    rc, ev, err = events_of(a.report, src)
    if rc != 0:
        sys.exit(f"FAIL: the undamaged {src} does not read: {err}")
    truth[si] = ev
    usual[si] = {l.replace(src, "TRACE") for l in err}

fails = []
rows = collections.OrderedDict()  # kind -> counters
for i, (kind, si, data) in enumerate(cases):
    p = os.path.join(work, f"d{i:03d}.trace.zst")
    with open(p, "wb") as f:
        f.write(data)
    rc, ev, err = events_of(a.report, p)
    row = rows.setdefault(kind, {"n": 0, "exit0": 0, "exit2": 0, "whole": 0, "part": [], "warned": 0})
    row["n"] += 1
    if rc not in (0, 2):
        fails.append(f"{kind} ({p}): exit {rc}: {err[-3:]}")
        continue
    if rc == 2:
        row["exit2"] += 1
        if len(err) != 1:
            fails.append(f"{kind} ({p}): exit 2 with {len(err)} lines on stderr: {err[:3]}")
        continue
    row["exit0"] += 1
    # a warning about the damage: one the undamaged trace does not give
    warned = any("warning" in l and l.replace(p, "TRACE") not in usual.get(si, set()) for l in err)
    row["warned"] += warned
    if si is not None and ev == truth[si]:
        row["whole"] += 1
    elif si is not None:
        row["part"].append(100.0 * ev / truth[si] if truth[si] else 0)
    if (si is None or ev != truth[si]) and not warned:
        fails.append(f"{kind} ({p}): {ev} events read, {truth.get(si)} in the trace, and no warning")
    numbered = si is not None and si >= 2  # recorded here: numbered EVENTS chunks (1.7)
    if (kind in ("a frame deleted", "a frame repeated", "frames after END", "two traces concatenated",
                 "a zero byte appended", "junk appended") or (kind == "two frames swapped" and numbered)) \
            and not warned:
        fails.append(f"{kind} ({p}): read without a warning")

print(f"{len(cases)} damaged traces from {len(sources)} real ones")
if True:  # the outcomes, for docs/reliability.md
    print("| damage | traces | exit 0 | exit 2 | all events read | part read (% of the events) | exit 0 with a warning |")
    print("|---|---|---|---|---|---|---|")
    for kind, r in rows.items():
        part = f"{len(r['part'])}: {min(r['part']):.0f}-{max(r['part']):.0f}%" if r["part"] else "0"
        print(f"| {kind} | {r['n']} | {r['exit0']} | {r['exit2']} | {r['whole']} | {part} | {r['warned']} |")
if len(cases) < 100:
    fails.append(f"only {len(cases)} damaged traces")
if fails:
    print("\n".join("FAIL " + f for f in fails[:30]))
    print(f"{len(fails)} failures")
    sys.exit(1)
print("ok")
shutil.rmtree(work, ignore_errors=True)
