#!/usr/bin/env python3
"""The writer keeps a thread's EVENTS chunk open across drains (shim/writer/drain.c): a
busy thread's events go out in chunks of up to 4,096 events, not one chunk per drain (the
writer is woken every 512 events). Checks, with its own walk of the chunks
(docs/trace-format.md), on traces the shim writes:

- one launching thread (client_runtime 1 N, GPU timing every 3rd launch: the writer's own ring
  has a chunk open beside it): its chunks hold 2,048 events or more on average;
- eight threads (client_runtime 8 N), whose chunks close each other;
- in both: no chunk over 4,096 events, EVENTS chunks numbered 1, 2, 3... in file order, each
  program thread's chunks in time order (the writer's own ring, GPU_KERNEL events in the order
  the GPU finished them, is not), the events adding up to END's count, and wslshim-report
  warning of nothing. (preload.packed_traces_match_v12 decodes the same kind of traces with an
  independent codec and compares the reports.)

A flat-out client can fill the rings when the machine is loaded and the writer gets no core: the
shim then drops events (counted, and the report warns of them), and a chunk closes at each drop.
Such a run says nothing about chunks kept open across drains (its chunks' order is still judged); the one-thread run is tried up to
four times for a run without drops, and with drops in every try its average is not judged (the
other checks still are).

    open_chunks_check.py SHIM REPORT FAKE_LIB_DIR WORKDIR CLIENT_RUNTIME
"""
import os
import shutil
import struct
import subprocess
import sys

SHIM, REPORT, LIBDIR, WORK, RUNTIME = map(os.path.abspath, sys.argv[1:6])
if not shutil.which("zstd"):
    print("SKIP: no zstd command")
    sys.exit(77)
EVENTS_BITS, END = 16, 6
fails = []
shutil.rmtree(WORK, ignore_errors=True)


def chunks(path):
    raw = subprocess.run(["zstd", "-qdc", path], capture_output=True, check=True).stdout
    at = 32
    while at + 8 <= len(raw):
        ctype, size = struct.unpack_from("<II", raw, at)
        yield ctype, raw[at + 8:at + 8 + size]
        at += 8 + size


def varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v


def unzigzag(v):
    return (v >> 1) ^ -(v & 1)


def check(name, args, extra):
    d = os.path.join(WORK, name)
    os.makedirs(d)
    trace = os.path.join(d, "t.trace.zst")
    env = dict(os.environ, LD_LIBRARY_PATH=LIBDIR, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=trace, **extra)
    p = subprocess.run([RUNTIME] + args, env=env, capture_output=True, timeout=120)
    if p.returncode != 0:
        fails.append(f"{name}: exit {p.returncode}: {p.stderr[-300:]!r}")
        return None
    seq, per_tid, events, written, last_start, lost, disorder = 0, {}, 0, None, {}, 0, []
    for ctype, body in chunks(trace):
        if ctype == EVENTS_BITS:
            tid, count, base, dropped, enc, s = struct.unpack_from("<IIQQII", body, 0)
            seq += 1
            if s != seq:
                fails.append(f"{name}: EVENTS chunk number {s} where {seq} was due")
            if count > 4096:
                fails.append(f"{name}: a chunk of {count} events")
            per_tid.setdefault(tid, []).append(count)
            lost += dropped
            events += count
            if count:
                # the first event's start: base + its gap (a chunk after dropped events has base 0
                # and the start in full as the gap)
                first = base + unzigzag(varint(body, 32 + 12 + count))
                if first < last_start.get(tid, 0):
                    disorder.append((tid, f"{name}: thread {tid}'s chunk {s} starts before its previous one"))
                last_start[tid] = first
        elif ctype == END:
            written = struct.unpack_from("<QQQ", body, 0)[1]
    # The writer's own ring (GPU_KERNEL events, written as the GPU finishes the timed pairs of
    # every stream: a kernel's start is its GPU start, so two streams' kernels come in the order
    # they finished) is not in time order across streams; only the program's threads are judged.
    # Its tid is the one that made no call: not on the timeline's threads.
    cj = os.path.join(d, "t.json")
    c = subprocess.run([REPORT, "--chrome", cj, trace], capture_output=True, text=True)
    calls = set()
    if c.returncode == 0:
        import json
        doc = json.load(open(cj))
        calls = {e.get("tid") for e in (doc["traceEvents"] if isinstance(doc, dict) else doc)
                 if e.get("ph") == "X" and e.get("cat") == "cuda"}
    else:
        fails.append(f"{name}: --chrome exit {c.returncode}: {c.stderr[-300:]!r}")
    # (A run that dropped events is judged too: the chunks that seemed out of order after drops
    # were the ones whose header's base is 0, the start of their first event in full in its gap.)
    fails.extend(x for tid, x in disorder if tid in calls)
    if written != events:
        fails.append(f"{name}: {events} events in the chunks, END says {written}")
    r = subprocess.run([REPORT, trace], capture_output=True, text=True)
    warnings = [w for w in r.stderr.splitlines() if "warning" in w and not (lost and "events dropped" in w)]
    if r.returncode != 0 or warnings:
        fails.append(f"{name}: report exit {r.returncode}: {r.stderr[-300:]!r}")
    return per_tid, lost


one, lost, prog = None, 0, [0]
for attempt in range(4):
    shutil.rmtree(os.path.join(WORK, "one"), ignore_errors=True)
    one, lost = check("one", ["1", "20000"], {"WSLSHIM_GPU_TIMING": "3"}) or (None, 0)
    if one is None or not lost:
        break
    print(f"one, try {attempt + 1}: {lost} events dropped (the writer got no core in time)")
if one is not None and lost:
    print("one: events dropped in every try: the average chunk is not judged")
elif one is not None:
    prog = max(one.values(), key=sum)  # the launching thread's
    if sum(prog) < 100000:
        fails.append(f"one: only {sum(prog)} events of the launching thread")
    elif sum(prog) / len(prog) < 2048:
        fails.append(f"one: {len(prog)} chunks for {sum(prog)} events of the launching thread "
                     f"({sum(prog) / len(prog):.0f} a chunk): chunks not kept open across drains")
many = (check("eight", ["8", "3000"], {}) or (None, 0))[0]
if many is not None and len(many) < 8:
    fails.append(f"eight: {len(many)} threads wrote events")
if fails:
    print("\n".join("FAIL " + f for f in fails))
    sys.exit(1)
print(f"ok: one thread, {sum(prog)} events in {len(prog)} chunks ({lost} dropped); eight threads, "
      f"{sum(map(sum, many.values()))} events in {sum(map(len, many.values()))} chunks")
