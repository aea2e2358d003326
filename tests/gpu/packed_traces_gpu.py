#!/usr/bin/env python3
"""GPU check of the packed trace formats (1.9's EVENTS_GAPS chunks: 1.4's EVENTS_PACKED
with the times as gaps; 1.10's EVENTS_BITS: the same times coded as bits; zstd level -1)
on real PyTorch traces.

    python3 tests/gpu/packed_traces_gpu.py --build BUILD --out OUTDIR

Records workloads of tests/gpu/workloads.py under the shim (the MLP training
loop with loss.item() every 10 steps, with GPU timing of every launch and
without; the MLP replayed as a CUDA graph; an elementwise loop), then for each
trace:
  - the program's output (its checksum line) is the same as without the shim;
  - no EVENTS chunk is in the 1.2 layout and the file header says 1.9 or later;
  - tests/unit/relayout.py rewrites it in the 1.2 layout (EVENTS, zstd level 1)
    with an independent Python codec, and wslshim-report prints byte-identical
    JSON and text reports for the two;
  - figures: events, bytes per event (compressed, and packed before zstd),
    the share of events that were literals, against the 1.2 rewrite's size.
The last line on stdout is a JSON verdict, also in OUTDIR/packed_traces.json.
Exit status: 0 pass, 1 fail, 77 no GPU or no PyTorch, 2 no build.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
RELAYOUT = os.path.join(HERE, "..", "unit", "relayout.py")
WORKLOADS = os.path.join(HERE, "workloads.py")
RUNS = [  # name, workloads.py arguments, shim environment
    ("mlp_item", ["mlp", "--iters", "2000", "--item-every", "10"], {}),
    ("mlp_item_timed", ["mlp", "--iters", "2000", "--item-every", "10"], {"WSLSHIM_GPU_TIMING": "1"}),
    ("graph_replay", ["graph_replay", "--iters", "2000"], {}),
    ("elementwise", ["elementwise", "--iters", "20000"], {}),
]


def checksum_line(stdout):
    for line in reversed(stdout.splitlines()):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        return d.get("checksum"), d.get("skip")
    return None, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    build, out = os.path.abspath(args.build), os.path.abspath(args.out)
    shim = os.path.join(build, "lib", "libwslshim.so")
    report = os.path.join(build, "analyzer", "wslshim-report")
    for path in (shim, report):
        if not os.path.exists(path):
            print(f"{path}: not found (build first)", file=sys.stderr)
            return 2
    if not shutil.which("zstd"):
        print("SKIPPED: the zstd command is needed (tests/gpu/zstd_cli.py on PATH as zstd serves)")
        return 77
    p = subprocess.run([sys.executable, "-c", "import torch,sys; sys.exit(0 if torch.cuda.is_available() else 3)"],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print("SKIPPED: no CUDA GPU with PyTorch")
        return 77
    os.makedirs(out, exist_ok=True)
    verdict = {"ok": True, "runs": {}}
    for name, wargs, extra in RUNS:
        run = {"problems": []}
        verdict["runs"][name] = run
        d14, d12 = os.path.join(out, name, "v14"), os.path.join(out, name, "v12")
        shutil.rmtree(os.path.join(out, name), ignore_errors=True)
        os.makedirs(d14)
        os.makedirs(d12)
        plain = subprocess.run([sys.executable, WORKLOADS] + wargs, capture_output=True, text=True)
        env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(d14, "t-%p.trace.zst"), **extra)
        traced = subprocess.run([sys.executable, WORKLOADS] + wargs, env=env, capture_output=True, text=True)
        c0, skip = checksum_line(plain.stdout)
        c1, _ = checksum_line(traced.stdout)
        if skip:
            run["skipped"] = skip
            continue
        if plain.returncode != 0 or traced.returncode != 0 or c0 is None or c0 != c1:
            run["problems"].append(f"exit {plain.returncode}/{traced.returncode}, checksum {c0} / {c1}: "
                                   f"{traced.stderr[-400:]}")
        traces = sorted(f for f in os.listdir(d14) if f.endswith(".trace.zst"))
        if not traces:
            run["problems"].append("no trace")
        stats = {"events": 0, "packed_chunks": 0, "packed_bytes": 0, "literals": 0, "paths_dropped": 0, "bytes_v14": 0, "bytes_v12": 0, "carried_chunks": 0}
        for t in traces:
            raw = subprocess.run(["zstd", "-dcq", os.path.join(d14, t)], capture_output=True).stdout
            major, minor = struct.unpack_from("<HH", raw, 12)
            if major != 1 or minor < 9:  # 1.4 packed the events, 1.9 writes their times as gaps
                run["problems"].append(f"{t}: file header version {struct.unpack_from('<HH', raw, 12)}")
            pos = struct.unpack_from("<I", raw, 16)[0]
            while pos + 8 <= len(raw):
                ctype, size = struct.unpack_from("<II", raw, pos)
                if ctype == 4:
                    run["problems"].append(f"{t}: a 1.2 EVENTS chunk at byte {pos}")
                pos += 8 + size
            r = subprocess.run([sys.executable, RELAYOUT, os.path.join(d14, t), os.path.join(d12, t)],
                               capture_output=True, text=True)
            if r.returncode != 0:
                run["problems"].append(f"{t}: relayout: {r.stderr[-300:]}")
                continue
            for k, v in json.loads(r.stdout).items():
                stats[k] = stats.get(k, 0) + v
            stats["bytes_v14"] += os.path.getsize(os.path.join(d14, t))
            stats["bytes_v12"] += os.path.getsize(os.path.join(d12, t))
        reports = []
        for d in (d14, d12):
            res = []
            for mode in (["--json"], []):
                r = subprocess.run([report] + mode + traces, cwd=d, capture_output=True, env=dict(os.environ, NO_COLOR="1"))
                res.append((r.returncode, r.stdout, r.stderr))
            reports.append(res)
        for (a, b), mode in zip(zip(*reports), ("json", "text")):
            if a[0] != 0 or not a[1]:
                run["problems"].append(f"{mode} report exit {a[0]}: {a[2][-300:]!r}")
            elif a != b:
                run["problems"].append(f"{mode} reports differ between the packed trace and its 1.2 rewrite")
        ev = max(stats["events"], 1)
        run.update(stats)
        run["bytes_per_event_v14"] = round(stats["bytes_v14"] / ev, 2)
        run["bytes_per_event_v12_rewrite"] = round(stats["bytes_v12"] / ev, 2)
        run["packed_bytes_per_event"] = round(stats["packed_bytes"] / ev, 2)
        run["literal_share"] = round(stats["literals"] / ev, 3)
        run["ok"] = not run["problems"]
        verdict["ok"] &= run["ok"]
        print(f"{name}: {stats['events']} events, {run['bytes_per_event_v14']} bytes/event in the packed trace "
              f"({run['bytes_per_event_v12_rewrite']} rewritten as 1.2), {run['packed_bytes_per_event']} packed "
              f"before zstd, literals {run['literal_share']:.1%}, {stats['carried_chunks']} of "
              f"{stats['packed_chunks']} chunks with a carried table; "
              f"{'ok' if run['ok'] else 'FAIL: ' + '; '.join(run['problems'])}")
    with open(os.path.join(out, "packed_traces.json"), "w") as f:
        json.dump(verdict, f, indent=1)
    print(json.dumps(verdict))
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
