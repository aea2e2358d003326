#!/usr/bin/env python3
"""The demo's side-by-side pair (tests/demo/pair/, recorded on an H100 by tests/gpu/demo_pair.sh):
--compare names the emulated side plainly (text and JSON), B is slower in file I/O and launches,
and --project of the native run onto B's SPEC lands within 10% of B's recorded wall.

  pair_check.py REPORT PAIR_DIR
"""
import json
import subprocess
import sys

report, pair = sys.argv[1:3]
a, b = f"{pair}/native", f"{pair}/wsl2-emulated"
fail = []
t = subprocess.run([report, "--compare", a, b], capture_output=True, text=True)
lines = t.stdout.splitlines()
emu = [l for l in lines[:8] if l.strip().startswith("EMULATED")]
if t.returncode != 0 or len(emu) != 1 or " B ran under WSLSHIM_EMULATE=wsl2,fs:" not in emu[0] \
        or "not a measured run of WSL2" not in emu[0]:
    fail.append(f"text compare does not name B as emulated: {t.returncode} {emu} {t.stderr.strip()}")
j = subprocess.run([report, "--json", "--compare", a, b], capture_output=True, text=True)
d = json.loads(j.stdout) if j.returncode == 0 else {}
c = d.get("compare", {})
eb = c.get("emulation_b")
if not eb or not eb["spec"].startswith("wsl2,fs:") or eb["added_ns"]["launch"] != 4000 or "fs" not in eb \
        or "emulation_a" in c:
    fail.append(f"JSON compare: emulation_b {eb}, emulation_a {c.get('emulation_a')}")
if not c.get("wall_diff_ns", 0) > 0:
    fail.append(f"B not slower: {c.get('wall_diff_ns')}")
bw = json.loads(subprocess.run([report, "--json", b], capture_output=True, text=True).stdout)
p = subprocess.run([report, "--json", "--project", eb["spec"] if eb else "wsl2", a], capture_output=True, text=True)
pr = json.loads(p.stdout)["projection"] if p.returncode == 0 else None
if pr:
    err = (pr["wall_ns"] - bw["wall_ns"]) / bw["wall_ns"]
    print(f"projected {pr['wall_ns'] / 1e9:.3f} s vs emulated {bw['wall_ns'] / 1e9:.3f} s ({err * 100:+.1f}%)")
    if abs(err) > 0.10:
        fail.append(f"projection of A onto B's SPEC off by {err * 100:+.1f}%")
else:
    fail.append(f"projection failed: {p.stderr.strip()}")
for f in fail:
    print("FAIL:", f)
sys.exit(1 if fail else 0)
