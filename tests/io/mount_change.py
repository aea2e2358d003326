#!/usr/bin/env python3
"""A mount made while the program runs is picked up: the data folder is on
ext4 in the mount table when the traced program reads the first half of its
files; then the table changes (as when /mnt/d appears after start) and puts it
on a Windows drive (9p drvfs); the second half's reads must land under 9p and
raise cross_os_reads, the first half's stay under ext4.

    mount_change.py SHIM REPORT WORKDIR
"""
import json, os, shutil, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from io_check import write_fixture  # noqa: E402

shim, report, work = sys.argv[1:4]
shutil.rmtree(work, ignore_errors=True)
data, traces = os.path.join(work, "data"), os.path.join(work, "traces")
os.makedirs(data)
os.makedirs(traces)
for i in range(40):
    with open(os.path.join(data, f"f{i:02d}"), "wb") as f:
        f.write(bytes([i]) * (1000 + i))
fixture = os.path.join(work, "mountinfo")
write_fixture(fixture, data, "ext4")

program = r'''
import os, sys, time
data, go = sys.argv[1], sys.argv[2]
def read(names):
    return sum(len(open(os.path.join(data, n), "rb").read()) for n in names)
names = sorted(os.listdir(data))
a = read(names[:20])
open(go + ".half", "w").close()
while not os.path.exists(go):
    time.sleep(0.01)
time.sleep(2.5)  # the shim looks at the mount table again about every second
b = read(names[20:])
print(a, b)
'''
env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(traces, "%p.trace.zst"),
           WSLSHIM_MOUNTINFO=fixture)
go = os.path.join(work, "go")
p = subprocess.Popen([sys.executable, "-c", program, data, go], env=env, stdout=subprocess.PIPE, text=True)
deadline = time.time() + 30
while not os.path.exists(go + ".half") and time.time() < deadline:
    time.sleep(0.01)
write_fixture(fixture + ".new", data, "9p")
os.replace(fixture + ".new", fixture)
open(go, "w").close()
out, _ = p.communicate(timeout=60)
if p.returncode != 0:
    sys.exit(f"FAIL: program exited {p.returncode}")
first, second = map(int, out.split())
r = subprocess.run([report, "--json", traces], capture_output=True, text=True)
if r.returncode != 0:
    sys.exit(f"FAIL: report exit {r.returncode}: {r.stderr}")
rep = json.loads(r.stdout)
io = rep["io"]
fails = []
# Every file on the data folder's device counts for that mount (the fixture maps
# the real device there), so the checks look at the data folder itself.
at9p = [m for m in io["mounts"] if m["mount_point"] == data and m["fstype"] == "9p"]
if len(at9p) != 1 or at9p[0]["data"]["bytes_read"] != second or not at9p[0]["crosses_windows"]:
    fails.append(f"9p mount of the data folder: {at9p}, second half read {second}")
folder = [d for d in io["top_dirs"] if d["dir"] == data]
if len(folder) != 1 or folder[0]["bytes_read"] != first + second:
    fails.append(f"data folder {folder}, program read {first} + {second}")
if "cross_os_reads" not in [b["id"] for b in rep["bottlenecks"]]:
    fails.append(f"no cross_os_reads: {rep['bottlenecks']}")
if fails:
    sys.exit("FAIL:\n  " + "\n  ".join(fails))
print(f"OK: {first} bytes read under ext4 before the mount change, {second} under 9p after; cross_os_reads raised")
