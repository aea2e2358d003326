#!/usr/bin/env python3
"""Python loads a library built with the nvtx3 headers through ctypes (as
PyTorch loads its NVTX) and pushes ranges whose names are fresh strings every
call; under the shim the report counts them exactly, and the program sees no
NVTX variable in os.environ.

    nvtx_python.py SHIM REPORT LIB WORKDIR             (the check)
    nvtx_python.py --child LIB N                      (the program)"""
import ctypes
import json
import os
import shutil
import subprocess
import sys

if sys.argv[1] == "--child":
    lib = ctypes.CDLL(sys.argv[2])
    n = int(sys.argv[3])
    rets = set()
    for i in range(n):
        rets.add(lib.lib_push(f"ep{i % 3}".encode()))   # a new bytes object each call
        for j in range(2):
            rets.add(lib.lib_push(("layer_" + str(j)).encode()))
            rets.add(lib.lib_pop())
        rets.add(lib.lib_pop())
    print(json.dumps({"returns": sorted(rets), "env": "NVTX_INJECTION64_PATH" in os.environ}))
    sys.exit(0)

shim, report, lib, work = sys.argv[1:5]
N = 300
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"}
cmd = [sys.executable, __file__, "--child", lib, str(N)]
plain = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
shimmed = subprocess.run(cmd, env=dict(env, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst")),
                         capture_output=True, text=True, check=True).stdout
fails = []
if plain != shimmed:
    fails.append(f"output differs: {plain!r} vs {shimmed!r}")
if json.loads(shimmed)["env"]:
    fails.append("os.environ names an injection library")
rep = json.loads(subprocess.run([report, "--json", work], capture_output=True, text=True, check=True).stdout)
got = {r["name"]: (r["count"], r["top_level"], r["max_depth"]) for r in rep["nvtx"]}
want = {"ep0": (N // 3, N // 3, 0), "ep1": (N // 3, N // 3, 0), "ep2": (N // 3, N // 3, 0),
        "layer_0": (N, 0, 1), "layer_1": (N, 0, 1)}
if got != want:
    fails.append(f"ranges {got}, want {want}")
if fails:
    sys.exit("FAIL: " + "; ".join(fails))
print(f"OK: {sum(c for c, _, _ in want.values())} ranges from Python through a dlopened NVTX client, output unchanged")
