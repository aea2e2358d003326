#!/usr/bin/env python3
"""Common programs under the shim: their behaviour unchanged, their file bytes counted.

    programs_check.py SHIM REPORT WORKDIR

Each program below that this machine has (tar, sha256sum, grep, sort, dd, cp, cat, gzip, awk,
perl, sqlite3, git, make, bash, Python with threads, processes, subprocess, sqlite3, mmap, dup)
runs twice over a folder of 200 generated files (411,890 bytes): without the shim and with it.
Its exit status, stdout and stderr must be the same, wslshim-report must read every trace it left
(exit 0), and where the program reads every file of the folder once (marked below) the report's
bytes read under the folder must be the folder's size. A program the machine lacks is skipped
(said so). Against the shim before the dup and copy hooks it fails twice: grep -r's files named
under "<fd N>" (gnulib's fts opens them relative to a folder descriptor copied by F_DUPFD_CLOEXEC),
and cp's copy_file_range counted no byte. (dd's input, moved to descriptor 0 by dup2, is not
judged here, dd reads one file: io.dup_reads_named covers every kind of copy.)
"""
import json, os, shutil, subprocess, sys

SHIM, REPORT, WORK = sys.argv[1:4]
shutil.rmtree(WORK, ignore_errors=True)
D = os.path.join(WORK, "data")
os.makedirs(D)
size = 0
for i in range(200):
    text = ("line %d of file %d\n" % (i, i)) * (i + 1)
    with open(os.path.join(D, "f%03d.txt" % i), "w") as f:
        f.write(text)
    size += len(text)
W, PY = WORK, sys.executable
# name: (programs needed, shell command, whether it reads every file of D once)
CASES = {
    "tar": (["tar", "sha256sum"], f"tar -C {W} -cf - data | sha256sum", True),
    "sha256sum": (["sha256sum"], f"sha256sum {D}/* | sha256sum", True),
    "grep": (["grep", "sort"], f"grep -r -l 'file 19$' {D} | sort", True),
    "sort": (["sort", "uniq", "cat"], f"cat {D}/* | sort | uniq -c | sort -n | tail -2", True),
    "dd": (["dd"], f"dd if={D}/f199.txt of={W}/z bs=4k 2>/dev/null && dd if={W}/z of=/dev/null bs=4k 2>&1 | "
                   f"tail -1 | cut -d' ' -f1; rm -f {W}/z", False),
    "cp": (["cp", "ls", "wc"], f"rm -rf {W}/c && cp -r {D} {W}/c && ls {W}/c | wc -l && rm -rf {W}/c", True),
    "gzip": (["gzip", "tar"], f"tar -C {W} -czf - data | gzip -dc | tar -tf - | wc -l", True),
    "awk": (["awk"], f"awk 'END{{print NR}}' {D}/*", True),
    "perl": (["perl"], f"perl -ne '$n++ if /file 3\\b/; END {{print \"$n\\n\"}}' {D}/*", True),
    "sqlite3": (["sqlite3"], f"rm -f {W}/db && sqlite3 {W}/db 'create table t(a); insert into t values(1),(3);"
                             f" select sum(a) from t;' && rm -f {W}/db", False),
    "git": (["git"], f"rm -rf {W}/g && git init -q {W}/g && cp {D}/f00*.txt {W}/g && cd {W}/g && git add . && "
                     f"git -c user.email=a@b -c user.name=n commit -qm x && git log --oneline | wc -l", False),
    "make": (["make"], f"printf 'all:\\n\\t@echo made\\n' > {W}/Makefile && make -s -C {W}", False),
    "bash": (["bash", "cat", "wc"], f"exec 3<{D}/f010.txt; cat <&3 | wc -c; exec 4>&1; echo hi >&4; "
                                    f"( cat ) < {D}/f011.txt | wc -l", False),
    "python_files": ([], f"{PY} -c \"import os; print(sum(len(open(os.path.join('{D}',f),'rb').read()) "
                         f"for f in os.listdir('{D}')))\"", True),
    "python_threads": ([], f"{PY} -c \"import concurrent.futures as c, os\nps=[os.path.join('{D}',x) for x in "
                           f"os.listdir('{D}')]\nwith c.ThreadPoolExecutor(8) as e: print(sum(e.map(lambda p: "
                           f"len(open(p,'rb').read()), ps)))\"", True),
    "python_processes": ([], f"{PY} -c \"import multiprocessing as m, os\ndef f(p): return len(open(p,'rb').read())"
                             f"\nif __name__=='__main__':\n  with m.Pool(3) as pool: print(sum(pool.map(f, "
                             f"[os.path.join('{D}',x) for x in sorted(os.listdir('{D}'))])))\"", True),
    "python_subprocess": ([], f"{PY} -c \"import subprocess; f=open('{D}/f012.txt','rb'); print(subprocess.run("
                              f"['wc','-c'],stdin=f,capture_output=True,text=True).stdout.split()[0])\"", False),
    "python_sqlite_mmap": ([], f"{PY} -c \"import sqlite3, mmap; c=sqlite3.connect('{W}/p.db'); c.execute("
                               f"'create table t(x)'); c.executemany('insert into t values(?)', [(i,) for i in "
                               f"range(100)]); c.commit(); print(c.execute('select count(*) from t').fetchone()[0]);"
                               f" f=open('{D}/f199.txt','rb'); print(len(mmap.mmap(f.fileno(),0,"
                               f"access=mmap.ACCESS_READ)))\"; rm -f {W}/p.db", False),
    "python_dup_errors": ([], f"{PY} -c \"import os,errno\ntry: open('/nonexistent/x')\nexcept OSError as e: "
                              f"print(e.errno==errno.ENOENT)\nd=os.dup(1); os.write(d,b'via dup\\\\n')\ntry: "
                              f"os.read(999, 1)\nexcept OSError as e: print(e.errno)\"", False),
}
failures, ran = [], 0
for name, (need, cmd, whole) in CASES.items():
    missing = [p for p in need if not shutil.which(p)]
    if missing:
        print(f"skip {name}: no {' '.join(missing)} here")
        continue
    ran += 1
    tdir = os.path.join(WORK, "t-" + name)
    os.makedirs(tdir)
    env = {k: v for k, v in os.environ.items() if not k.startswith("WSLSHIM_") and k != "LD_PRELOAD"}
    a = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=300, env=env)
    b = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=300,
                       env=dict(env, LD_PRELOAD=SHIM, WSLSHIM_OUTPUT=os.path.join(tdir, "%p.trace.zst")))
    why = []
    if (a.returncode, a.stdout, a.stderr) != (b.returncode, b.stdout, b.stderr):
        why.append(f"output differs: without {a.returncode} {a.stdout[:200]!r} {a.stderr[:200]!r}; "
                   f"with {b.returncode} {b.stdout[:200]!r} {b.stderr[:200]!r}")
    r = subprocess.run([REPORT, "--json", tdir], capture_output=True, text=True, timeout=300)
    got = None
    if r.returncode != 0:
        why.append(f"report exit {r.returncode}: {r.stderr.strip()[:300]}")
    else:
        io = json.loads(r.stdout)["io"]
        got = next((t["bytes_read"] for t in io["top_dirs"] if t["dir"] == D), None)  # (top 10 folders by time)
        if whole and got != size:
            why.append(f"{got} bytes read under the folder, not {size}")
    said = "the folder not among the report's top folders" if got is None else f"{got} bytes read under the folder"
    print(f"{'FAIL' if why else 'ok'} {name}: exit {b.returncode}, {len(os.listdir(tdir))} traces, "
          f"{said}{' (all of it expected)' if whole else ''}")
    for w in why:
        print("   ", w)
    failures += [f"{name}: {w}" for w in why]
print(f"{ran} programs ran, {len(CASES) - ran} skipped, {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
