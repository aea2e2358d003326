"""What the GPU checks share to run a program under the shim and read what it printed
(coverage_check.py, phases_check.py)."""
import json
import os
import signal
import subprocess
import tempfile
import time


class Failed(Exception):
    pass


def tail(text, n=1500):
    return (text or "").strip()[-n:]


def last_line(text):
    return ((text or "").strip().splitlines() or ["(no stderr)"])[-1][:300]


def last_json(text):
    for line in reversed((text or "").strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                return json.loads(line)
            except ValueError:
                continue
    return None


def run_prog(cmd, env, timeout):
    """Runs cmd in its own session, output to files (a child, a compile worker say, that keeps a pipe open cannot
    hold the run), then waits (up to 30 s) for what it left running in its process group, so its traces are
    complete. Returns (rc or None on timeout, stdout, stderr, wall seconds)."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, stdout=fo, stderr=fe, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            rc = None
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        wall = time.perf_counter() - t0
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                os.killpg(p.pid, 0)
            except (ProcessLookupError, PermissionError):
                break
            time.sleep(0.2)
        fo.seek(0)
        fe.seek(0)
        return rc, fo.read().decode(errors="replace"), fe.read().decode(errors="replace"), wall
