#!/usr/bin/env python3
"""The first NVTX call of a process made by a linked library's constructor is
captured, and the program's output is unchanged.

    nvtx_early_check.py SHIM REPORT PROGRAM WORKDIR"""
import json
import os
import shutil
import subprocess
import sys

shim, report, prog, work = sys.argv[1:5]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
env = {k: v for k, v in os.environ.items() if k != "NVTX_INJECTION64_PATH"}
plain = subprocess.run([prog], env=env, capture_output=True, text=True, check=True).stdout
traced = subprocess.run([prog], env=dict(env, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst")),
                        capture_output=True, text=True, check=True).stdout
rep = json.loads(subprocess.run([report, "--json", work], capture_output=True, text=True, check=True).stdout)
got = {r["name"]: r["count"] for r in rep["nvtx"]}
if plain != traced or got != {"constructor_range": 1, "main_range": 1}:
    sys.exit(f"FAIL: output {plain!r} / {traced!r}, ranges {got}")
print("OK: a constructor's NVTX range and main's, output unchanged")
