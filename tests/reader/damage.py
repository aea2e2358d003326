"""Shared by the reader tests: zstd frames of a trace file, running wslshim-report."""
import json, os, subprocess


def frames(b):
    """(start, end) of each zstd frame (or skippable frame) of the file's bytes b."""
    out, pos = [], 0
    while pos + 4 <= len(b):
        start = pos
        magic = int.from_bytes(b[pos:pos + 4], "little")
        if magic & 0xFFFFFFF0 == 0x184D2A50:
            pos += 8 + int.from_bytes(b[pos + 4:pos + 8], "little")
            out.append((start, pos))
            continue
        if magic != 0xFD2FB528:
            raise ValueError(f"no zstd frame at byte {pos}")
        pos += 4
        fhd = b[pos]
        pos += 1
        single, checksum, dict_id, fcs = (fhd >> 5) & 1, (fhd >> 2) & 1, fhd & 3, fhd >> 6
        pos += (0 if single else 1) + (0, 1, 2, 4)[dict_id] + ((1 if single else 0), 2, 4, 8)[fcs]
        while True:
            bh = int.from_bytes(b[pos:pos + 3], "little")
            pos += 3 + (1 if (bh >> 1) & 3 == 1 else bh >> 3)
            if bh & 1:
                break
        pos += 4 if checksum else 0
        out.append((start, pos))
    return out


def report(exe, args, timeout=60, **kw):
    """(exit status or 'hang', stdout, stderr lines) of wslshim-report ARGS."""
    try:
        r = subprocess.run([exe] + args, capture_output=True, text=True, timeout=timeout, **kw)
    except subprocess.TimeoutExpired:
        return "hang", "", []
    return r.returncode, r.stdout, [l for l in r.stderr.splitlines() if l.strip()]


def events_of(exe, path):
    """(exit status, events read from all processes, stderr lines) of --json PATH."""
    rc, out, err = report(exe, ["--json", path])
    ev = None
    if rc == 0:
        ev = sum(p.get("events", 0) for p in json.loads(out)["processes"])
    return rc, ev, err


def record(shim, fakedir, client, out_dir, calls=200000):
    """A trace of the fake-driver client recorded under the shim: the largest file it left."""
    env = dict(os.environ, LD_PRELOAD=shim, LD_LIBRARY_PATH=fakedir,
               WSLSHIM_OUTPUT=os.path.join(out_dir, "fresh-%p.trace.zst"))
    subprocess.run([client, "INT", "query", str(calls)], env=env, capture_output=True, timeout=120, check=True)
    made = [os.path.join(out_dir, f) for f in os.listdir(out_dir) if f.startswith("fresh-")]
    return max(made, key=os.path.getsize)
