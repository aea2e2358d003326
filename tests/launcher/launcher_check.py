#!/usr/bin/env python3
"""Checks of the `wslshim` launcher, one case per ctest entry.

    launcher_check.py --wslshim EXE --shim LIB --report EXE --fakedir DIR --client EXE
                      --interposer LIB --workdir DIR [--has-probe 0|1] [--has-doctor 0|1] CASE

Cases: exit_status, signals, sigterm_kills, preload, output_pattern, no_io, report,
bad_flags, subcommands, install (--build-dir and --cmake needed).
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

A = None
FAILS = []


def fail(msg):
    FAILS.append(msg)


def run(args, env=None, **kw):
    e = dict(os.environ)
    if env:
        e.update(env)
    return subprocess.run(args, env=e, capture_output=True, text=True, timeout=120, **kw)


def workdir(name):
    d = os.path.join(A.workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def report_json(paths):
    r = run([A.report, "--json", *paths])
    if r.returncode != 0:
        fail(f"wslshim-report on {paths} exited {r.returncode}: {r.stderr.strip()}")
        return None
    return json.loads(r.stdout)


def traces_in(d):
    return sorted(f for f in os.listdir(d) if ".trace.zst" in f)


# ---- cases -------------------------------------------------------------------------------

def case_exit_status():
    d = workdir("exit_status")
    out = os.path.join(d, "%p.trace.zst")
    for code in (0, 3, 255):
        r = run([A.wslshim, "run", "--append", "-o", out, "--", "sh", "-c", f"cat /dev/null; exit {code}"])
        if r.returncode != code:
            fail(f"child exit {code}: launcher exited {r.returncode} ({r.stderr.strip()})")
    # killed by a signal: the launcher dies of the same signal (subprocess reports -N)
    r = run([A.wslshim, "run", "--append", "-o", out, "--", "sh", "-c", "kill -TERM $$"])
    if r.returncode != -signal.SIGTERM:
        fail(f"child killed by SIGTERM: launcher status {r.returncode}, expected {-signal.SIGTERM}")
    r = run([A.wslshim, "run", "--append", "-o", out, "--", "sh", "-c", "kill -KILL $$"])
    if r.returncode != -signal.SIGKILL:
        fail(f"child killed by SIGKILL: launcher status {r.returncode}, expected {-signal.SIGKILL}")
    # like a shell: 127 not found, 126 not executable
    r = run([A.wslshim, "run", "--append", "-o", out, "--", os.path.join(d, "no-such-program")])
    if r.returncode != 127 or "no-such-program" not in r.stderr:
        fail(f"missing program: status {r.returncode}, stderr {r.stderr!r} (expected 127 and its name)")
    plain = os.path.join(d, "not-executable")
    with open(plain, "w") as f:
        f.write("#!/bin/sh\nexit 0\n")
    os.chmod(plain, 0o644)
    r = run([A.wslshim, "run", "--append", "-o", out, "--", plain])
    if r.returncode != 126:
        fail(f"non-executable program: status {r.returncode}, expected 126")
    # PATH search and argument passing unchanged
    r = run([A.wslshim, "run", "--append", "-o", out, "--", "printf", "%s|", "a b", "", "-o", "--"])
    if r.returncode != 0 or r.stdout != "a b||-o|--|":
        fail(f"arguments not passed through unchanged: {r.stdout!r}")


SIGNAL_CHILD = r"""
import os, signal, sys, time
got = []
def h(sig, frame):
    got.append(sig)
    with open(sys.argv[1], "a") as f:
        f.write(f"{sig}\n")
    if sig == signal.SIGTERM:
        sys.exit(40)
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM):
    signal.signal(s, h)
open(sys.argv[1] + ".ready", "w").close()
deadline = time.time() + 60
while time.time() < deadline:
    time.sleep(0.01)
sys.exit(99)
"""


def start_signal_child(d, script):
    log = os.path.join(d, "got.txt")
    prog = os.path.join(d, "child.py")
    with open(prog, "w") as f:
        f.write(script)
    p = subprocess.Popen([A.wslshim, "run", "--no-io", "--append", "-o", os.path.join(d, "%p.trace.zst"), "--",
                          sys.executable, prog, log], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 30
    while not os.path.exists(log + ".ready"):
        if time.time() > deadline or p.poll() is not None:
            p.kill()
            fail(f"the child never got ready (launcher status {p.poll()})")
            return None, log
        time.sleep(0.01)
    return p, log


def case_signals():
    d = workdir("signals")
    p, log = start_signal_child(d, SIGNAL_CHILD)
    if not p:
        return
    sent = [signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT]
    for s in sent:
        os.kill(p.pid, s)           # to the launcher only: it must pass each on once
        deadline = time.time() + 10
        while time.time() < deadline:
            if os.path.exists(log) and str(int(s)) in open(log).read().split():
                break
            time.sleep(0.01)
    os.kill(p.pid, signal.SIGTERM)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("the launcher did not end after SIGTERM")
        return
    got = [int(x) for x in open(log).read().split()] if os.path.exists(log) else []
    want = [int(s) for s in sent] + [int(signal.SIGTERM)]
    if got != want:
        fail(f"the child got signals {got}, expected each once in order: {want}")
    if p.returncode != 40:
        fail(f"launcher status {p.returncode}, expected the child's 40")


def case_sigterm_kills():
    d = workdir("sigterm_kills")
    script = ("import sys, time\nopen(sys.argv[1] + '.ready', 'w').close()\ntime.sleep(60)\n")
    p, _ = start_signal_child(d, script)
    if not p:
        return
    t0 = time.time()
    os.kill(p.pid, signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("SIGTERM to the launcher did not end the child")
        return
    if p.returncode != -signal.SIGTERM:
        fail(f"launcher status {p.returncode}, expected {-signal.SIGTERM} (child killed by SIGTERM)")
    if time.time() - t0 > 20:
        fail("the child was not stopped by the forwarded SIGTERM")


def case_preload():
    d = workdir("preload")
    shim = os.path.realpath(A.shim)
    inter = os.path.realpath(A.interposer)
    out = os.path.join(d, "%p.trace.zst")
    envfile = os.path.join(d, "env.txt")
    # a link to the shim under another name counts as the same file
    link = os.path.join(d, "shim-link.so")
    os.symlink(shim, link)
    cases = [
        (None, [shim]),
        ("", [shim]),
        (inter, [shim, inter]),
        (f"{inter}:{shim}", [shim, inter]),
        (f"{shim} {inter}", [shim, inter]),
        (f"{link}:{inter}:{shim}", [shim, inter]),
        (f"{os.path.dirname(shim)}/../lib/libwslshim.so", [shim]),
    ]
    for old, want in cases:
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if old is not None:
            env["LD_PRELOAD"] = old
        r = subprocess.run([A.wslshim, "run", "--append", "-o", out, "--", "sh", "-c", f'printf %s "$LD_PRELOAD" > {envfile}'],
                           env=env, capture_output=True, text=True, timeout=60)
        got = open(envfile).read().split(":") if os.path.exists(envfile) else None
        if r.returncode != 0 or got != want:
            fail(f"LD_PRELOAD={old!r}: child saw {got}, expected {want} (status {r.returncode}, {r.stderr.strip()})")
    # the launcher's own environment is untouched: a --report run is not traced
    env = dict(os.environ, WSLSHIM_OUTPUT=os.path.join(d, "leak-%p.trace.zst"))
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([A.wslshim, "run", "--report", "--append", "-o", out, "--", "cat", "/dev/null"], env=env,
                       capture_output=True, text=True, timeout=60)
    if [f for f in os.listdir(d) if f.startswith("leak-")]:
        fail("the launcher or the report it ran was traced (its own environment changed)")
    # a launcher started with the shim already preloaded leaves it and is not traced itself
    env["LD_PRELOAD"] = f"{link}:{inter}"
    r = subprocess.run([A.wslshim, "run", "--append", "-o", out, "--", "sh", "-c", f'printf %s "$LD_PRELOAD" > {envfile}'],
                       env=env, capture_output=True, text=True, timeout=60)
    leaks = [f for f in os.listdir(d) if f.startswith("leak-")]
    if r.returncode != 0 or leaks or open(envfile).read().split(":") != [shim, inter]:
        fail(f"launcher under the shim: traces of its own {leaks}, child LD_PRELOAD {open(envfile).read()!r}")
    # settings reach the child
    r = run([A.wslshim, "run", "--gpu-timing", "7", "--no-io", "--append", "-o", out, "--", "sh", "-c",
             f'printf "%s|%s|%s" "$WSLSHIM_GPU_TIMING" "$WSLSHIM_IO" "$WSLSHIM_OUTPUT" > {envfile}'])
    want = f"7|0|{out}"
    if open(envfile).read() != want:
        fail(f"settings: child saw {open(envfile).read()!r}, expected {want!r}")
    r = run([A.wslshim, "run", "--gpu-timing=off", "--append", "-o", out, "--", "sh", "-c",
             f'printf "%s|%s" "$WSLSHIM_GPU_TIMING" "${{WSLSHIM_IO-unset}}" > {envfile}'], env={"WSLSHIM_IO": ""})
    if open(envfile).read() != "off|":
        fail(f"--gpu-timing=off: child saw {open(envfile).read()!r}, expected 'off|' (WSLSHIM_IO left as it was)")


def case_output_pattern():
    d = workdir("output_pattern")
    sub = os.path.join(d, "new", "dir")     # made by the launcher
    # (the two cat children are short helpers that `run` would not keep: case_helpers)
    r = run([A.wslshim, "run", "-o", os.path.join(sub, "run-%p.trace.zst"), "--", "sh", "-c",
             "cat /dev/null; cat /dev/null & wait"], env={"WSLSHIM_KEEP_HELPERS": "1"})
    files = traces_in(sub) if os.path.isdir(sub) else []
    names = [re.fullmatch(r"run-(\d+)\.trace\.zst(\.\d+)?", f) for f in files]
    if r.returncode != 0 or len(files) < 2 or not all(names):
        fail(f"-o pattern: {files} (status {r.returncode}, {r.stderr.strip()}); expected run-PID traces of "
             "sh and its children")
    rep = report_json([os.path.join(sub, f) for f in files]) if files else None
    pids = sorted({p["pid"] for p in rep["processes"]}) if rep else []
    if rep and sorted({int(m.group(1)) for m in names if m}) != pids:
        fail(f"trace names {files} do not carry the pids {pids}")
    if f"{len(files)} traces in " not in r.stderr:
        fail(f"the launcher did not count the {len(files)} traces on stderr: {r.stderr!r}")
    for f in files:
        if f not in r.stderr:
            fail(f"the launcher did not name {f} on stderr: {r.stderr!r}")
    # relative patterns are the launcher's working directory's, even if the child changes directory
    r = run([A.wslshim, "run", "-o", "rel/%p.trace.zst", "--", "sh", "-c", "cd /; cat /dev/null"], cwd=d)
    if not traces_in(os.path.join(d, "rel")) or any(".trace.zst" in f for f in os.listdir("/")):
        fail(f"relative -o: {os.listdir(d)} ({r.stderr.strip()})")
    # a second run into a folder that holds traces is refused (a report of the folder would merge
    # the two runs), in one line and before the program runs; --append lets it in
    before = traces_in(sub)
    marker = os.path.join(d, "ran")
    r = run([A.wslshim, "run", "-o", os.path.join(sub, "run-%p.trace.zst"), "--", "touch", marker])
    if r.returncode != 2 or len(r.stderr.strip().splitlines()) != 1 or "--append" not in r.stderr or \
            os.path.exists(marker) or traces_in(sub) != before:
        fail(f"second run into the same directory: status {r.returncode}, stderr {r.stderr!r}, ran "
             f"{os.path.exists(marker)} (expected a refusal, exit 2)")
    # with --append: files that were there before are not reported as this run's
    r = run([A.wslshim, "run", "--append", "-o=" + os.path.join(sub, "run-%p.trace.zst"), "--", "cat", "/dev/null"])
    if r.returncode != 0 or "1 trace " not in r.stderr:
        fail(f"--append run into the same directory: expected '1 trace' on stderr: {r.stderr!r}")
    r = run([A.wslshim, "run", "--append", "--output=" + os.path.join(sub, "run-%p.trace.zst"), "--", "cat",
             "/dev/null"])
    if r.returncode != 0 or "1 trace " not in r.stderr:
        fail(f"--output=PATTERN: expected '1 trace' on stderr: {r.stderr!r}")
    # the default: a new directory per run, named on stderr
    r = run([A.wslshim, "run", "--", "cat", "/dev/null"], cwd=d)
    dirs = [x for x in os.listdir(d) if x.startswith("wslshim-run-")]
    if len(dirs) != 1 or len(traces_in(os.path.join(d, dirs[0]))) != 1 or dirs[0] not in r.stderr:
        fail(f"default output: dirs {dirs}, stderr {r.stderr!r}")
    # a run that writes no trace leaves no empty directory
    r = run([A.wslshim, "run", "--no-io", "--", "true"], cwd=d)
    dirs2 = [x for x in os.listdir(d) if x.startswith("wslshim-run-")]
    if dirs2 != dirs or "no trace" not in r.stderr:
        fail(f"a traceless run left {dirs2} (before {dirs}); stderr {r.stderr!r}")


def case_no_io():
    d = workdir("no_io")
    env = {"LD_LIBRARY_PATH": A.fakedir}
    data = os.path.join(d, "data.bin")
    with open(data, "wb") as f:
        f.write(b"x" * 10000)
    expect = run([A.client, "20"], env=env)
    want = 0
    for line in expect.stdout.splitlines():
        if line.startswith("EXPECT "):
            want = json.loads(line[7:]).get("cuLaunchKernel", 0)
    if expect.returncode != 0 or not want:
        fail(f"the client alone: status {expect.returncode}, no cuLaunchKernel in its EXPECT line")
        return
    for no_io in (True, False):
        out = os.path.join(d, "io" if not no_io else "noio")
        args = [A.wslshim, "run", "-o", os.path.join(out, "%p.trace.zst")] + (["--no-io"] if no_io else [])
        r = run(args + ["--", "sh", "-c", f'cat {data} > /dev/null; exec "$0" 20', A.client], env=env)
        if r.returncode != 0:
            fail(f"--no-io={no_io}: status {r.returncode}: {r.stderr[-500:]}")
            continue
        rep = report_json([out])
        if not rep:
            continue
        io = rep["io"]
        launches = rep["api"].get("cuLaunchKernel", {}).get("calls", 0)
        if launches != want:
            fail(f"--no-io={no_io}: {launches} cuLaunchKernel calls recorded, expected the client's {want}")
        if no_io and (io["reads"] or io["opens"] or io["stats"] or io["closes"]):
            fail(f"--no-io: the trace holds file I/O: {io['reads']} reads, {io['opens']} opens, {io['stats']} stats")
        if not no_io and io["bytes_read"] < 10000:
            fail(f"without --no-io: {io['bytes_read']} bytes read recorded, expected >= 10000 (control)")


def case_report():
    d = workdir("report")
    r = run([A.wslshim, "run", "--report", "-o", os.path.join(d, "%p.trace.zst"), "--", "sh", "-c",
             "echo child-output; cat /dev/null; exit 5"], env={"WSLSHIM_KEEP_HELPERS": "1"})
    if r.returncode != 5:
        fail(f"--report: status {r.returncode}, expected the child's 5")
    if not r.stdout.startswith("child-output\n") or "wslshim report: 2 processes" not in r.stdout:
        fail(f"--report: stdout does not hold the child's output then the report: {r.stdout[:300]!r}")
    # `wslshim report` is wslshim-report
    a = run([A.wslshim, "report", "--json", d])
    b = run([A.report, "--json", d])
    if a.returncode != 0 or a.stdout != b.stdout:
        fail(f"wslshim report differs from wslshim-report (status {a.returncode}: {a.stderr.strip()})")
    a = run([A.wslshim, "report", os.path.join(d, "missing.trace.zst")])
    if a.returncode != 2 or len(a.stderr.strip().splitlines()) != 1:
        fail(f"wslshim report on a missing file: status {a.returncode}, stderr {a.stderr!r}")


def case_wrapper_named():
    """A wrapper script (as a pyenv shim is) that execs the real program: the report names the
    program, not the shell that ran the script (it named `sh /tmp/wrap.sh` before)."""
    d = workdir("wrapper_named")
    wrap = os.path.join(d, "python3")
    with open(wrap, "w") as f:
        f.write('#!/bin/sh\n# a wrapper, as a pyenv shim: helpers, then exec\ntrue\nexec "$@"\n')
    os.chmod(wrap, 0o755)
    r = run([A.wslshim, "run", "--report", "-o", os.path.join(d, "%p.trace.zst"), "--", wrap, "cat", "/dev/null"])
    run_line = next((l for l in r.stdout.splitlines() if l.startswith("  run ")), "")
    if r.returncode != 0 or not run_line.split()[1:3] == ["cat", "/dev/null"]:
        fail(f"wrapper: the run line is {run_line!r} (status {r.returncode}), expected the program it exec'd, "
             f"`cat /dev/null`")


def case_helpers():
    """A wrapper script (as a pyenv shim is) runs short helper processes (sed, cat, head, a bash -c
    subshell) and then execs the real program: `run` keeps the program's trace, not one per helper,
    and counts the helpers; WSLSHIM_KEEP_HELPERS=1 keeps them all. Short children that do read data
    (DataLoader workers) keep theirs."""
    d = workdir("helpers")
    env = {"LD_LIBRARY_PATH": A.fakedir}
    expect = run([A.client, "5"], env=env)
    want = next((json.loads(l[7:]).get("cuLaunchKernel", 0) for l in expect.stdout.splitlines()
                 if l.startswith("EXPECT ")), 0)
    if expect.returncode != 0 or not want:
        fail(f"the client alone: status {expect.returncode}, no cuLaunchKernel in its EXPECT line")
        return
    conf = os.path.join(d, "version")
    with open(conf, "w") as f:
        f.write("3.11.7\nsystem\n")
    wrap = os.path.join(d, "client")
    with open(wrap, "w") as f:
        f.write("#!/bin/bash\n# a wrapper, as a pyenv shim: helper processes, then exec\n"
                f'v=$(sed -n 1p "{conf}")\n'
                f'w=$(cat "{conf}" | head -n 1)\n'
                f"x=$(bash -c 'cat \"{conf}\" | sed s/3/4/; echo sub')\n"
                'for i in 1 2; do y=$(echo "$i" | sed s/1/2/); done\n'
                f'exec "{A.client}" "$@"\n')
    os.chmod(wrap, 0o755)
    counts = {}
    for keep in ("0", "1"):
        out = os.path.join(d, "keep" + keep)
        r = run([A.wslshim, "run", "-o", os.path.join(out, "%p.trace.zst"), "--", wrap, "5"],
                env=dict(env, WSLSHIM_KEEP_HELPERS=keep))
        files = traces_in(out) if os.path.isdir(out) else []
        counts[keep] = len(files)
        if r.returncode != 0 or not files:
            fail(f"KEEP_HELPERS={keep}: status {r.returncode}, traces {files}: {r.stderr[-500:]}")
            continue
        rep = report_json([out])
        if not rep:
            continue
        launches = rep["api"].get("cuLaunchKernel", {}).get("calls", 0)
        if launches != want:
            fail(f"KEEP_HELPERS={keep}: {launches} cuLaunchKernel calls recorded, expected the client's {want}")
        txt = run([A.report, out])
        run_line = next((l for l in txt.stdout.splitlines() if l.startswith("  run ")), "")
        if os.path.basename(run_line.split()[1] if len(run_line.split()) > 1 else "") != os.path.basename(A.client):
            fail(f"KEEP_HELPERS={keep}: the report's run line is {run_line!r}, expected the client")
        notes = os.path.join(out, "wslshim-helpers.txt")
        noted = len(open(notes).read().splitlines()) if os.path.exists(notes) else 0
        if keep == "0":
            if len(files) > 2:
                fail(f"the wrapper's helpers left {len(files)} traces: {files} (expected the client's, and at most "
                     "one more)")
            if noted < 6 or f"{noted} short helper processes not kept" not in r.stderr:
                fail(f"{noted} helpers noted in {notes}; launcher stderr {r.stderr!r}")
        elif noted or "short helper" in r.stderr:
            fail(f"WSLSHIM_KEEP_HELPERS=1: {noted} helpers noted, stderr {r.stderr!r}")
    if counts.get("1", 0) < counts.get("0", 0) + 6:
        fail(f"WSLSHIM_KEEP_HELPERS=1 kept {counts.get('1')} traces, without it {counts.get('0')}: expected every "
             "helper's with it")
    print(f"helpers: {counts.get('0')} traces kept, {counts.get('1')} with WSLSHIM_KEEP_HELPERS=1")

    # DataLoader-like: workers that live briefly but read data keep their traces; one that only
    # looks at a small system file is a helper
    data = os.path.join(d, "data.bin")
    with open(data, "wb") as f:
        f.write(os.urandom(256 << 10))
    prog = os.path.join(d, "loader.py")
    with open(prog, "w") as f:
        f.write("import os, sys\n"
                "kids = []\n"
                "for i in range(3):\n"
                "    pid = os.fork()\n"
                "    if pid == 0:\n"
                "        with open(sys.argv[1], 'rb') as f:\n"
                "            f.seek(i * 65536); f.read(65536)\n"
                "        os._exit(0)\n"
                "    kids.append(pid)\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    open('/etc/hostname').read()\n"
                "    os._exit(0)\n"
                "kids.append(pid)\n"
                "for k in kids: os.waitpid(k, 0)\n"
                "print(' '.join(map(str, kids)))\n")
    out = os.path.join(d, "loader")
    r = run([A.wslshim, "run", "-o", os.path.join(out, "%p.trace.zst"), "--", sys.executable, prog, data])
    kids = [int(x) for x in r.stdout.split()] if r.returncode == 0 else []
    if len(kids) != 4:
        fail(f"loader: status {r.returncode}, stdout {r.stdout!r}, stderr {r.stderr[-500:]!r}")
        return
    rep = report_json([out])
    pids = {p["pid"] for p in rep["processes"]} if rep else set()
    if not set(kids[:3]) <= pids or kids[3] in pids or len(pids) != 4:
        fail(f"loader: traced pids {sorted(pids)}; the readers {kids[:3]} must be kept, the idle child {kids[3]} "
             "not")
    if rep and rep["io"]["bytes_read"] < 3 * 65536:
        fail(f"loader: {rep['io']['bytes_read']} bytes read recorded, expected the workers' {3 * 65536}")
    if "1 short helper process not kept" not in r.stderr:
        fail(f"loader: the launcher did not count the idle child: {r.stderr!r}")


def one_line_exit2(args, what, **kw):
    r = run(args, **kw)
    lines = r.stderr.strip().splitlines()
    if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("wslshim"):
        fail(f"{what}: status {r.returncode}, stderr {r.stderr!r} (expected exit 2 and one line)")
    return r


def case_bad_flags():
    d = workdir("bad_flags")
    for args, what in [
        ([], "no command"),
        (["bogus"], "unknown command"),
        (["--bogus"], "unknown option"),
        (["run"], "run without a program"),
        (["run", "--"], "run -- without a program"),
        (["run", "--bogus", "--", "true"], "unknown run option"),
        (["run", "-o"], "-o without a value"),
        (["run", "-o", "", "--", "true"], "empty -o"),
        (["run", "-o", d + "/", "--", "true"], "-o naming a directory"),
        (["run", "--gpu-timing", "0", "--", "true"], "--gpu-timing 0"),
        (["run", "--gpu-timing", "often", "--", "true"], "--gpu-timing often"),
        (["run", "--gpu-timing"], "--gpu-timing without a value"),
        (["run", "-o", "/proc/no/such/dir/%p.trace.zst", "--", "true"], "-o in a directory that cannot be made"),
    ]:
        one_line_exit2([A.wslshim] + args, what, cwd=d)
    if os.listdir(d):
        fail(f"a refused command left files: {os.listdir(d)}")
    for args in (["--help"], ["run", "--help"]):
        r = run([A.wslshim] + args)
        if r.returncode != 0 or "wslshim run" not in r.stdout:
            fail(f"{args}: status {r.returncode}, no usage on stdout")
    r = run([A.wslshim, "--version"])
    if r.returncode != 0 or not r.stdout.startswith("wslshim "):
        fail(f"--version: {r.returncode} {r.stdout!r}")


def case_emulate():
    d = workdir("emulate")
    envfile = os.path.join(d, "env.txt")
    for form in (["--emulate", "launch=+8us,sync=+20us"], ["--emulate=launch=+8us,sync=+20us"]):
        r = run([A.wslshim, "run", "--no-io", "--append", "-o", os.path.join(d, "%p.trace.zst"), *form, "--", "sh", "-c",
                 f'printf %s "$WSLSHIM_EMULATE" > {envfile}'], env={"WSLSHIM_EMULATE": ""})
        got = open(envfile).read() if os.path.exists(envfile) else None
        if r.returncode != 0 or got != "launch=+8us,sync=+20us":
            fail(f"{form}: the child's WSLSHIM_EMULATE is {got!r} (status {r.returncode}, {r.stderr.strip()})")
    r = run([A.wslshim, "run", "--no-io", "--append", "-o", os.path.join(d, "%p.trace.zst"), "--", "sh", "-c",
             f'printf %s "${{WSLSHIM_EMULATE-unset}}" > {envfile}'])
    if open(envfile).read() != os.environ.get("WSLSHIM_EMULATE", "unset"):
        fail("without --emulate the child's WSLSHIM_EMULATE is not the user's")
    one_line_exit2([A.wslshim, "run", "--emulate"], "--emulate without a SPEC")
    one_line_exit2([A.wslshim, "run", "--emulate=", "--", "true"], "--emulate with an empty SPEC")
    r = run([A.wslshim, "run", "--help"])
    for opt in ("--output", "--append", "--gpu-timing", "--no-io", "--report", "--emulate", "--help"):
        if opt not in r.stdout:
            fail(f"wslshim run --help does not list {opt}")
    for args in (["--version"], ["-V"]):
        r = run([A.wslshim] + args)
        if r.returncode != 0 or not re.fullmatch(r"wslshim \d+\.\d+\.\d+\n", r.stdout):
            fail(f"{args}: {r.returncode} {r.stdout!r}")
    r = run([A.wslshim, "run", "--gpu-timing=0", "--", "true"])
    if r.returncode != 2 or "--gpu-timing '0'" not in r.stderr:
        fail(f"--gpu-timing=0: {r.returncode} {r.stderr!r}")


def case_subcommands():
    d = workdir("subcommands")
    # a copy of the launcher with a stand-in wslshim-report next to it: dispatch is an exec of the sibling
    exe = os.path.join(d, "wslshim")
    shutil.copy(A.wslshim, exe)
    sib = os.path.join(d, "wslshim-report")
    with open(sib, "w") as f:
        f.write('#!/bin/sh\nprintf "%s|" "$0" "$@"\nexit 7\n')
    os.chmod(sib, 0o755)
    r = run([exe, "report", "a b", "--json"])
    if r.returncode != 7 or r.stdout != "%s|a b|--json|" % sib:
        fail(f"report dispatch: status {r.returncode}, stdout {r.stdout!r}")
    for name, has in (("probe", A.has_probe), ("doctor", A.has_doctor)):
        if has:
            r = run([A.wslshim, name, "--help"])
            if r.returncode != 0:
                fail(f"wslshim {name} --help: status {r.returncode}: {r.stderr.strip()}")
        else:
            r = one_line_exit2([A.wslshim, name], f"wslshim {name} without wslshim-{name}")
            if f"wslshim-{name}" not in r.stderr:
                fail(f"wslshim {name}: the message does not name wslshim-{name}: {r.stderr!r}")


def case_install():
    d = workdir("install")
    prefix = os.path.join(d, "prefix")
    r = run([A.cmake, "--install", A.build_dir, "--prefix", prefix])
    if r.returncode != 0:
        fail(f"cmake --install: {r.stderr[-500:]}")
        return
    for rel in ("share/man/man1/wslshim.1", "share/man/man1/wslshim-report.1", "include/wslshim/trace_format.h",
                "bin/wslshim", "bin/wslshim-report"):
        if not os.path.exists(os.path.join(prefix, rel)):
            fail(f"cmake --install: {rel} missing under the prefix")
    for tool in ("wslshim", "wslshim-report"):
        v = run([os.path.join(prefix, "bin", tool), "--version"])
        if v.returncode != 0 or not v.stdout.startswith(tool + " "):
            fail(f"installed {tool} --version: status {v.returncode}, {v.stdout!r} {v.stderr!r}")
    man = shutil.which("man")
    if man:  # the pages render (no troff errors)
        for page in ("wslshim.1", "wslshim-report.1"):
            env = {k: v for k, v in os.environ.items() if k != "MAN_KEEP_FORMATTING"}
            m = subprocess.run([man, "-l", os.path.join(prefix, "share/man/man1", page)], capture_output=True,
                               text=True, timeout=60, env=dict(env, MANWIDTH="80"))
            if m.returncode != 0 or "SYNOPSIS" not in m.stdout:
                fail(f"man -l {page}: status {m.returncode}, {m.stderr[-300:]}")
    exe = os.path.join(prefix, "bin", "wslshim")
    envfile = os.path.join(d, "env.txt")
    r = run([exe, "run", "-o", os.path.join(d, "%p.trace.zst"), "--report", "--", "sh", "-c",
             f'printf %s "$LD_PRELOAD" > {envfile}; cat /dev/null'])
    preload = open(envfile).read() if os.path.exists(envfile) else ""
    first = preload.split(":")[0]
    if r.returncode != 0 or not first.startswith(os.path.realpath(prefix) + "/") or \
            not first.endswith("/libwslshim.so"):
        fail(f"installed launcher: LD_PRELOAD {preload!r}, expected the install's shim (status {r.returncode}, "
             f"{r.stderr.strip()})")
    if "wslshim report:" not in r.stdout:
        fail("installed launcher: --report found no wslshim-report next to it")


def main():
    global A
    ap = argparse.ArgumentParser()
    for opt in ("--wslshim", "--shim", "--report", "--fakedir", "--client", "--interposer", "--workdir"):
        ap.add_argument(opt, required=True)
    ap.add_argument("--has-probe", type=int, default=0)
    ap.add_argument("--has-doctor", type=int, default=0)
    ap.add_argument("--build-dir")
    ap.add_argument("--cmake")
    ap.add_argument("case")
    A = ap.parse_args()
    os.makedirs(A.workdir, exist_ok=True)
    fn = globals().get("case_" + A.case)
    if not fn:
        print(f"unknown case {A.case}")
        return 2
    fn()
    if FAILS:
        print("FAIL:\n  " + "\n  ".join(FAILS))
        return 1
    print(f"OK: {A.case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
