#!/usr/bin/env python3
"""WSLSHIM_IO_PATHS=hash: no file or directory name below a mount point is in
the trace (raw bytes) or the report, while the report's figures are those of
the same run recorded with plain paths: totals, per-filesystem classes (a
WSLSHIM_MOUNTINFO fixture puts the data on a 9p drvfs mount), and the
per-directory breakdown (one hashed directory per real one, equal names in
two processes hash alike). A key changes the hashes.
    paths_hash_check.py SHIM REPORT WORKDIR"""
import glob, json, os, shutil, subprocess, sys

shim, report, work = sys.argv[1:4]
if not shutil.which("zstd"):  # the raw trace is searched for names in the clear
    print("SKIP: no zstd command")
    sys.exit(77)
shutil.rmtree(work, ignore_errors=True)
mnt = os.path.join(work, "mnt")
secret_names = ["secret_project_q7", "hidden_subdir_k2", "patient_records_z9", "scan_0001", "scan_0002", "notes_x1"]
d1 = os.path.join(mnt, "secret_project_q7", "hidden_subdir_k2")
d2 = os.path.join(mnt, "patient_records_z9")
os.makedirs(d1)
os.makedirs(d2)
files = [os.path.join(d1, "scan_0001.dcm"), os.path.join(d1, "scan_0002.dcm"), os.path.join(d2, "notes_x1.txt")]
for i, f in enumerate(files):
    with open(f, "wb") as fh:
        fh.write(b"x" * (1000 * (i + 1)))

st = os.stat(mnt)
fixture = os.path.join(work, "mountinfo")
with open(fixture, "w") as f:
    f.write("1 0 0:9999 / / rw,relatime - ext4 /dev/fake-root rw\n"
            f"100 1 {os.major(st.st_dev)}:{os.minor(st.st_dev)} / {mnt} rw,noatime - 9p drvfs rw,aname=drvfs;path=C:\\\n")

failures = []


def traced(name, extra):
    tdir = os.path.join(work, name)
    os.makedirs(tdir)
    env = dict(os.environ, LD_PRELOAD=shim, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst"),
               WSLSHIM_MOUNTINFO=fixture, **extra)
    # two processes: the same directories must hash alike in both
    cmd = f"cat {files[0]} {files[1]} > /dev/null; cat {files[2]} {files[0]} > /dev/null"
    p = subprocess.run(["sh", "-c", cmd], env=env, capture_output=True, text=True)
    if p.returncode != 0:
        failures.append(f"{name}: exit {p.returncode} {p.stderr}")
    r = subprocess.run([report, "--json", tdir], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append(f"{name}: report exit {r.returncode}: {r.stderr}")
        return tdir, {}, ""
    t = subprocess.run([report, tdir], capture_output=True, text=True)
    return tdir, json.loads(r.stdout), r.stdout + t.stdout


def dirs_under_mnt(rep):
    return sorted(((d["dir"], d["fstype"], d["reads"], d["bytes_read"], d["files"])
                   for d in rep["io"].get("top_dirs", []) if d["dir"].startswith(mnt + "/")), key=lambda x: x[2:])


plain_dir, plain, _ = traced("plain", {})
hashed_dir, hashed, hashed_text = traced("hash", {"WSLSHIM_IO_PATHS": "hash"})
keyed_dir, keyed, _ = traced("keyed", {"WSLSHIM_IO_PATHS": "hash", "WSLSHIM_IO_PATHS_KEY": "a secret"})
if not failures:
    for k in ("reads", "bytes_read", "files_opened"):
        if plain["io"][k] != hashed["io"][k]:
            failures.append(f"io.{k}: plain {plain['io'][k]}, hashed {hashed['io'][k]}")
    def counts(by):
        return {fs: {k: v for k, v in c.items() if not k.endswith("_ns")} for fs, c in by.items()}
    if counts(plain["io"]["by_fs"]) != counts(hashed["io"]["by_fs"]) or "9p" not in hashed["io"]["by_fs"]:
        failures.append(f"by_fs differs or has no 9p: {plain['io']['by_fs']} vs {hashed['io']['by_fs']}")
    pd, hd, kd = dirs_under_mnt(plain), dirs_under_mnt(hashed), dirs_under_mnt(keyed)
    if len(pd) != 2 or [x[1:] for x in pd] != [x[1:] for x in hd]:
        failures.append(f"per-directory figures differ: plain {pd}, hashed {hd}")
    if any(x[0] == y[0] for x, y in zip(pd, hd)):
        failures.append(f"a directory name is in the clear: {hd}")
    if sorted(x[0] for x in hd) == sorted(x[0] for x in kd):
        failures.append("WSLSHIM_IO_PATHS_KEY did not change the hashes")
    for tdir in (hashed_dir, keyed_dir):
        raw = b"".join(subprocess.run(["zstd", "-dc", t], capture_output=True).stdout
                       for t in glob.glob(os.path.join(tdir, "*.trace.zst*")))
        if not raw:
            failures.append(f"{tdir}: could not decompress the traces with zstd")
        for s in secret_names:
            if s.encode() in raw:
                failures.append(f"{os.path.basename(tdir)}: {s!r} is in the raw trace")
        if mnt.encode() not in raw:
            failures.append(f"{os.path.basename(tdir)}: the mount point {mnt} is not kept")
    for s in secret_names:
        if s in hashed_text:
            failures.append(f"{s!r} is in the report")

if failures:
    print("\n".join("FAIL " + f for f in failures))
    sys.exit(1)
print(f"OK: hashed paths: {len(dirs_under_mnt(hashed))} directories under {mnt} with the plain run's figures "
      f"{[x[1:] for x in dirs_under_mnt(hashed)]}; no name below the mount point in trace or report")
