#!/usr/bin/env python3
"""The same workload written in trace format 1.2 (EVENTS chunks, zstd level 1,
what older shims wrote), in 1.4 (EVENTS_PACKED chunks, level -1; shims up to
1.8), in 1.9 (EVENTS_GAPS chunks) and in 1.10 (EVENTS_BITS chunks, what the shim
writes now): the reports, text and JSON, must be byte-identical.

    check_layouts.py --report WSLSHIM_REPORT --make-trace MAKE_TRACE
"""
import argparse, os, shutil, struct, subprocess, sys, tempfile

ap = argparse.ArgumentParser()
ap.add_argument("--report", required=True)
ap.add_argument("--make-trace", required=True)
a = ap.parse_args()
a.report, a.make_trace = os.path.abspath(a.report), os.path.abspath(a.make_trace)

tmp = tempfile.mkdtemp(prefix="wslshim-layouts-")
fails = []
cases = [[], ["--tsc"], ["--dropped", "5"], ["--native", "--forked", "--pid", "77"], ["--no-end"],
         ["--truncate-tail", "40"]]
try:
    for k, flags in enumerate(cases):
        outs = {}
        for layout in ("v12", "v14", "v19", "v110"):
            d = os.path.join(tmp, f"{k}-{layout}")
            os.makedirs(d)
            extra = {"v12": ["--v12"], "v14": ["--v14"], "v19": ["--v19"], "v110": []}[layout]
            subprocess.run([a.make_trace, os.path.join(d, "run.trace.zst")] + flags + extra, check=True,
                           capture_output=True)
            res = []
            for mode in (["--json"], []):
                r = subprocess.run([a.report] + mode + ["run.trace.zst"], cwd=d, capture_output=True,
                                   env=dict(os.environ, NO_COLOR="1"))
                res.append((r.returncode, r.stdout, r.stderr))
            outs[layout] = (res, open(os.path.join(d, "run.trace.zst"), "rb").read())
        (r12, f12) = outs["v12"]
        for other in ("v14", "v19", "v110"):
            (r14, f14) = outs[other]
            if f12 == f14:
                fails.append(f"{flags}: v12 and {other} layouts wrote the same bytes")
            for (c12, o12, e12), (c14, o14, e14), mode in zip(r12, r14, ("json", "text")):
                if c12 != 0 or not o12:
                    fails.append(f"{flags} {mode}: 1.2 trace: exit {c12}: {e12[-300:]!r}")
                if (c12, o12, e12) != (c14, o14, e14):
                    fails.append(f"{flags} {mode}: reports of v12 and {other} differ (exit {c12} / {c14}, "
                                 f"{len(o12)} / {len(o14)} bytes)")
    # The layouts are what they claim: the file header's minor version, when zstd is at hand.
    if shutil.which("zstd"):
        # 1.4 packed; 1.5 adds folded file calls, 1.6 opens, 1.7 numbers EVENTS chunks, 1.8 the EMULATION
        # chunk, 1.9 writes EVENTS_GAPS, 1.10 EVENTS_BITS; the default layout (EVENTS_BITS) is written
        # as the current version (1.11: a fold's calls counted apart, 1.12: PATHS_DROPPED, none in this workload,
        # 1.13: carried tables)
        for layout, minor in (("v12", 2), ("v14", 8), ("v19", 9), ("v110", 13)):
            raw = subprocess.run(["zstd", "-dc", os.path.join(tmp, f"0-{layout}", "run.trace.zst")],
                                 capture_output=True).stdout
            got = struct.unpack_from("<H", raw, 14)[0]
            if got != minor:
                fails.append(f"{layout}: file header minor version {got}, expected {minor}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)
if fails:
    print("\n".join("FAIL " + f for f in fails))
    sys.exit(1)
print(f"ok: {len(cases)} workloads, 1.2, 1.4 and 1.9 layouts, text and JSON reports identical")
