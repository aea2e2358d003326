#!/usr/bin/env python3
"""File writes and folder calls counted exactly (docs/io.md, "Writes").

  io_writes_test.py SHIM REPORT IO_WRITER WORKDIR

io_writer writes N blocks of K bytes with write, pwrite, fwrite and writev,
fsyncs, makes a folder, renames, lists and unlinks, and writes N lines to
stdout. The report must count the data writes and bytes exactly (io.writes,
io.bytes_written, and the same under io.by_fs for the folder's filesystem),
the syncs and folder calls, and the stdout lines under other descriptors
(io.unknown_fd), not as data. The program's output and exit status must be
the same as without the shim.
"""
import json
import os
import shutil
import subprocess
import sys

SHIM, REPORT, WRITER, WORK = sys.argv[1:5]
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)
    return cond


N, K = 500, 4096
out = {}
for mode in ("plain", "shim"):
    d = os.path.join(WORK, mode)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "data"))
    env = dict(os.environ, WSLSHIM_OUTPUT=os.path.join(d, "t-%p.trace.zst"))
    if mode == "shim":
        env["LD_PRELOAD"] = SHIM
    p = subprocess.run([WRITER, os.path.join(d, "data"), str(N), str(K)], env=env, capture_output=True, text=True)
    out[mode] = p
check(out["plain"].returncode == 0 and out["shim"].returncode == 0,
      f"exit {out['plain'].returncode} / {out['shim'].returncode}: {out['shim'].stderr[-300:]}")
check(out["plain"].stdout == out["shim"].stdout, "stdout differs under the shim")
expect = json.loads(out["shim"].stderr.split("EXPECT ", 1)[1].splitlines()[0])

p = subprocess.run([REPORT, "--json", os.path.join(WORK, "shim")], capture_output=True, text=True)
check(p.returncode == 0, f"report: {p.stderr}")
doc = json.loads(p.stdout)
io = doc["io"]
data = io.get("data", io)
print("io:", {k: io.get(k) for k in ("writes", "bytes_written", "syncs", "dir_ops", "write_ns")})
check(io.get("writes") == expect["writes"], f"io.writes {io.get('writes')} != {expect['writes']}")
check(io.get("bytes_written") == expect["bytes_written"],
      f"io.bytes_written {io.get('bytes_written')} != {expect['bytes_written']}")
check(io.get("syncs") == expect["syncs"], f"io.syncs {io.get('syncs')} != {expect['syncs']}")
check(io.get("dir_ops") == expect["dir_ops"], f"io.dir_ops {io.get('dir_ops')} != {expect['dir_ops']}")
check(io.get("write_ns", 0) > 0, "no time in writes")
# the folder's filesystem: writes there, exactly
fs_writes = {k: (v["writes"], v["bytes_written"]) for k, v in io["by_fs"].items() if v.get("writes")}
print("by_fs writes:", fs_writes)
st = os.stat(os.path.join(WORK, "shim", "data"))
data_fs = [k for k, v in io["by_fs"].items() if v.get("writes", 0) >= expect["writes"]]
check(len(data_fs) >= 1, f"no filesystem holds the {expect['writes']} data writes: {fs_writes}")
# stdout: under other descriptors, not data
other = io.get("unknown_fd", {})
check(other.get("writes", 0) >= expect["stdout_writes"] and other.get("bytes_written", 0) >= expect["stdout_bytes"],
      f"stdout writes not under unknown_fd: {other}")
text = subprocess.run([REPORT, os.path.join(WORK, "shim")], capture_output=True, text=True).stdout
check(f"{expect['writes']} writes" in text, "the text report's file section does not show the writes")

# The projection's exposure: +100 us a file metadata call (open, stat, folder call) on the data
# filesystem moves this single-threaded run by 100 us a call.
p = subprocess.run([REPORT, "--json", "--project", "wsl2", os.path.join(WORK, "shim")], capture_output=True, text=True)
if check(p.returncode == 0, f"--project: {p.stderr}"):
    x = json.loads(p.stdout)["projection"]["exposure"]["file_metadata"]
    print("exposure file_metadata:", x)
    check(x["calls"] >= expect["dir_ops"] + 4, f"file_metadata exposure covers {x['calls']} calls, not the "
          f"{expect['dir_ops']} folder calls and 4 opens at least")
    check(abs(x["wall_ns"] - 100000 * x["calls"]) <= 1000, f"+100 us a call moved the wall by {x['wall_ns']} ns "
          f"over {x['calls']} calls")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok")
