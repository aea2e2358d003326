#!/usr/bin/env python3
"""Runs spawn_client with and without the shim: the same output and exit status; under the shim
every process it makes (posix_spawn, vfork + execve, a double-forked daemon that closes every
descriptor) has a whole trace of exactly its own driver calls and file reads, and the parent's
driver, loaded and unloaded 200 times from two threads at once, is counted exactly.
    spawn_check.py SHIM REPORT FAKEDIR CLIENT WORKDIR"""
import json, os, shutil, subprocess, sys, time

shim, report, fakedir, client, work = sys.argv[1:6]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(os.path.join(work, "traces"))
data = os.path.join(work, "data.bin")
with open(data, "wb") as f:
    f.write(bytes(range(256)) * 32)  # 8192 bytes
size = os.path.getsize(data)
base = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("WSLSHIM_")}
base["LD_LIBRARY_PATH"] = fakedir
fails = []


def run(env, mark):
    p = subprocess.run([client, data, os.path.join(work, mark)], env=env, capture_output=True, text=True,
                       timeout=60)
    return p.returncode, p.stdout


native = run(base, "mark-native")
traced = run(dict(base, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(work, "traces", "%p.trace.zst")),
             "mark-traced")
want_out = "driver rounds: ok\nposix_spawn: ok\nvfork+execve: ok\ndaemon: ok\n"
if native != (0, want_out):
    fails.append(f"without the shim: exit {native[0]}, output {native[1]!r}")
if traced != native:
    fails.append(f"with the shim: exit {traced[0]}, output {traced[1]!r}; without: {native!r}")

want = {"parent": ({"cuInit": 200, "cuCtxSynchronize": 600}, 0),
        "spawned": ({"cuInit": 1, "cuCtxSynchronize": 11}, size),
        "vforked": ({"cuInit": 1, "cuCtxSynchronize": 13}, size),
        "daemon": ({"cuInit": 1, "cuCtxSynchronize": 17}, size)}
# the daemon may still be ending its trace when the parent has seen its mark
deadline = time.time() + 15
while True:
    seen, problems = {}, []
    for t in sorted(os.listdir(os.path.join(work, "traces"))):
        r = subprocess.run([report, "--json", os.path.join(work, "traces", t)], capture_output=True, text=True)
        if r.returncode != 0:
            problems.append(f"{t}: report exit {r.returncode}: {r.stderr.strip()}")
            continue
        d = json.loads(r.stdout)
        proc = d["processes"][0]
        calls = {k: v["calls"] for k, v in d["api"].items()}
        got_bytes = d.get("io", {}).get("bytes_read", 0)
        if proc.get("truncated") or proc.get("dropped"):
            problems.append(f"{t}: truncated={proc.get('truncated')} dropped={proc.get('dropped')}")
        argv = proc.get("argv", [])
        if "child" in argv:
            role = {"11": "spawned", "13": "vforked"}.get(argv[argv.index("child") + 1], "child?")
        elif proc.get("forked"):
            role = "daemon" if calls else "middle"
        else:
            role = "parent"
        if role == "middle":
            continue  # the daemon's parent: setsid and fork, nothing recorded
        if role in seen:
            problems.append(f"two traces for the {role}: {seen[role][0]} and {t}")
        seen[role] = (t, calls, got_bytes)
    for role, (calls_want, bytes_want) in want.items():
        if role not in seen:
            problems.append(f"no trace for the {role}")
            continue
        t, calls, got_bytes = seen[role]
        if calls != calls_want:
            problems.append(f"{role} ({t}): driver calls {calls}, expected {calls_want}")
        if bytes_want and got_bytes != bytes_want:
            problems.append(f"{role} ({t}): {got_bytes} bytes read recorded, it read {bytes_want}")
    if not problems or time.time() > deadline:
        break
    time.sleep(0.5)
fails += problems
if fails:
    print("FAIL:\n  " + "\n  ".join(fails))
    sys.exit(1)
print(f"OK: output and exit as without the shim; {len(seen)} traces whole and exact: parent (200 driver "
      f"loads and unloads from 2 threads, 600 syncs), posix_spawn, vfork+execve, daemon ({size} bytes read each)")
