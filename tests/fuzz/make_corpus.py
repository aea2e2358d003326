#!/usr/bin/env python3
"""Builds the fuzz corpus from real traces, and checks wslshim-report on the
damaged ones.

    make_corpus.py --shim LIB --report EXE --client SIGNAL_CLIENT --fakedir DIR --out CORPUS
                   [--check-report N]

Real traces come from programs run under the shim here (the fake-driver
client ended by SIGTERM, cat, a shell that forks and execs, a Python program
reading 20 small files, whose file calls are folded). Each trace's
uncompressed stream S becomes corpus inputs (first byte 0: S is compressed by
the target; 1: the file's bytes as they are):
  the trace itself; S cut at every chunk boundary and inside every chunk;
  the file cut every 256 bytes; 96 single-bit flips; a newer major and minor
  version; the other byte order; absurd sizes (chunk sizes, event counts,
  encoded sizes, column directories, path lengths, header and record sizes).
With --make-trace, synthetic traces in the 1.2 layout (EVENTS chunks), the
1.4 one (EVENTS_PACKED) and the 1.9 one (EVENTS_GAPS) join them: the shim writes
1.10 (EVENTS_BITS), readers still read all four.
With --check-report N, N of the damaged streams are written as trace files
and wslshim-report must end each with status 0 (a readable prefix, warned)
or 2 with exactly one line on stderr: never a crash, never a hang.
"""
import argparse, json, os, random, shutil, struct, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument("--shim", required=True)
ap.add_argument("--report", required=True)
ap.add_argument("--client", required=True)
ap.add_argument("--fakedir", required=True)
ap.add_argument("--out", required=True)
ap.add_argument("--check-report", type=int, default=0)
ap.add_argument("--make-trace", help="make_trace: adds a trace in the 1.2 layout (EVENTS chunks) of older shims")
a = ap.parse_args()
if not shutil.which("zstd"):  # damaged traces are cut and rebuilt from the decompressed stream
    print("SKIP: no zstd command")
    sys.exit(77)

work = a.out + ".work"
shutil.rmtree(work, ignore_errors=True)
shutil.rmtree(a.out, ignore_errors=True)
os.makedirs(work)
os.makedirs(a.out)
env = dict(os.environ, LD_PRELOAD=a.shim, LD_LIBRARY_PATH=a.fakedir,
           WSLSHIM_OUTPUT=os.path.join(work, "%p.trace.zst"))
for cmd in ([a.client, "TERM", "dfl", "300"], [a.client, "INT", "query", "50"], ["cat", "/etc/hostname"],
            ["sh", "-c", "ls / > /dev/null; true"]):
    subprocess.run(cmd, env=env, capture_output=True, timeout=60)
traces = sorted(os.path.join(work, f) for f in os.listdir(work) if ".trace.zst" in f)
# a Python program reading small files: its untimed calls come as fold events (1.5)
data = os.path.join(work, "data")
os.makedirs(data)
for i in range(20):
    with open(os.path.join(data, f"f{i:02d}"), "wb") as f:
        f.write(bytes(range(256)) * 16)
fold_env = dict(env, WSLSHIM_OUTPUT=os.path.join(work, "fold-%p.trace.zst"))
subprocess.run([sys.executable, "-c", "import os, sys\nfor n in sorted(os.listdir(sys.argv[1])):\n"
                "    with open(os.path.join(sys.argv[1], n), 'rb') as f: f.read()", data],
               env=fold_env, capture_output=True, timeout=60)
fold = sorted(os.path.join(work, f) for f in os.listdir(work) if f.startswith("fold-"))
if a.make_trace:  # the shim writes 1.10 (EVENTS_BITS); keep the 1.2, 1.4 and 1.9 decoders fuzzed too
    v12 = os.path.join(work, "v12.trace.zst")
    subprocess.run([a.make_trace, v12, "--v12", "--tsc"], check=True, capture_output=True, timeout=60)
    v14 = os.path.join(work, "v14.trace.zst")
    subprocess.run([a.make_trace, v14, "--v14", "--tsc"], check=True, capture_output=True, timeout=60)
    v19 = os.path.join(work, "v19.trace.zst")
    subprocess.run([a.make_trace, v19, "--v19", "--tsc"], check=True, capture_output=True, timeout=60)
    traces = traces[:5] + [v12, v14, v19]
traces += fold[:1]
if not traces:
    sys.exit("FAIL: no traces were made")


def zstd(args, data):
    p = subprocess.run(["zstd"] + args, input=data, capture_output=True)
    if p.returncode != 0:
        sys.exit(f"FAIL: zstd {args}: {p.stderr.decode().strip()}")
    return p.stdout


def chunks(s):
    """(offset, type, size) of each chunk of stream s."""
    out, pos = [], 32
    while pos + 8 <= len(s):
        t, n = struct.unpack_from("<II", s, pos)
        out.append((pos, t, n))
        pos += 8 + n
    return out


rnd = random.Random(1)
inputs = []  # (name, bytes)
damaged = []  # uncompressed damaged streams for the report check
for ti, path in enumerate(traces[:6]):
    f = open(path, "rb").read()
    s = zstd(["-dc"], f)
    tag = f"t{ti}"
    inputs.append((f"{tag}-whole", b"\0" + s))
    inputs.append((f"{tag}-file", b"\1" + f))
    cs = chunks(s)
    for k, (off, t, n) in enumerate(cs[:150]):
        inputs.append((f"{tag}-cut{k}", b"\0" + s[:off]))
        if n > 4:
            inputs.append((f"{tag}-cutin{k}", b"\0" + s[:off + 8 + n // 2]))
            damaged.append(s[:off + 8 + n // 2])
    for k in range(256, len(f), 256):
        inputs.append((f"{tag}-filecut{k}", b"\1" + f[:k]))
    for k in range(96):
        b = bytearray(s)
        bit = rnd.randrange(len(b) * 8)
        b[bit // 8] ^= 1 << (bit % 8)
        inputs.append((f"{tag}-flip{k}", b"\0" + bytes(b)))
        damaged.append(bytes(b))
    for name, off, fmt, val in (("major", 12, "<H", 2), ("minor", 14, "<H", 999), ("byteorder", 8, "<I", 0x04030201),
                                ("headersize", 16, "<I", 0xFFFFFFFF), ("recordsize", 20, "<I", 7)):
        b = bytearray(s)
        struct.pack_into(fmt, b, off, val)
        inputs.append((f"{tag}-{name}", b"\0" + bytes(b)))
        damaged.append(bytes(b))
    for k, (off, t, n) in enumerate(cs[:40]):
        for label, size in (("huge", 0xFFFFFFF0), ("plus1", n + 1), ("zero", 0), ("minus1", max(n - 1, 0))):
            b = bytearray(s)
            struct.pack_into("<I", b, off + 4, size)
            inputs.append((f"{tag}-size{k}-{label}", b"\0" + bytes(b)))
            damaged.append(bytes(b))
        if t == 16 and n >= 64:  # EVENTS_BITS: bit_bytes, literals, the code parameters, a bit column of ones
            for label, field, val in (("bits", 32, 0xFFFFFFFF), ("bits1", 32, 1), ("lits", 36, 0xFFFFFFFF),
                                      ("kshift", 56, 0xFFFFFFFF), ("q", 60, 0x2121), ("k32q0", 56, 0x00200020)):
                b = bytearray(s)
                struct.pack_into("<I", b, off + 8 + field, val)
                inputs.append((f"{tag}-bits{k}-{label}", b"\0" + bytes(b)))
                damaged.append(bytes(b))
            count, (bit_bytes,) = struct.unpack_from("<I", s, off + 8 + 4)[0], struct.unpack_from("<I", s, off + 8 + 32)
            at = off + 8 + 64 + count
            if at + bit_bytes <= off + 8 + n:
                for label, fill in (("ones", 0xFF), ("zeros", 0)):
                    b = bytearray(s)
                    b[at:at + bit_bytes] = bytes([fill]) * bit_bytes
                    inputs.append((f"{tag}-bits{k}-{label}", b"\0" + bytes(b)))
                    damaged.append(bytes(b))
        if t in (4, 13, 15, 16) and n >= 44:  # EVENTS, EVENTS_PACKED, EVENTS_GAPS, EVENTS_BITS: count, encoded_size, the directory
            for label, field, val in (("count", 4, 0xFFFFFFFF), ("count0", 4, 0), ("enc", 24, 0xFFFFFFF0),
                                      ("dir0", 32, 0xFFFFFFFF), ("dir2", 40, 0xFFFFFFFF), ("dir2z", 40, 0)):
                b = bytearray(s)
                struct.pack_into("<I", b, off + 8 + field, val)
                inputs.append((f"{tag}-ev{k}-{label}", b"\0" + bytes(b)))
                damaged.append(bytes(b))
        if t == 9 and n >= 8:  # PATHS: the first entry's length
            b = bytearray(s)
            struct.pack_into("<I", b, off + 8 + 4, 0xFFFFFF00)
            inputs.append((f"{tag}-path{k}-len", b"\0" + bytes(b)))
            damaged.append(bytes(b))

# PATHS_DROPPED (type 17, format 1.12): the shim writes one only when a path was dropped, which
# these runs never do; put some in after the API table: a count, a longer payload (a later minor
# version's), the largest count, payloads too short (the trace is damaged: exit 2, one line) and cut.
dropped_checks = []  # (name, stream, expected paths_dropped or None for a damaged trace)
for ti, path in enumerate(traces[:3]):
    s = zstd(["-dc"], open(path, "rb").read())
    cs = chunks(s)
    if len(cs) < 3:
        continue
    at = cs[2][0]  # after PROCESS and API_TABLE
    for label, payload, expect in (("count", struct.pack("<Q", 7), 7),
                                   ("long", struct.pack("<QQ", 9, 0xFFFFFFFFFFFFFFFF), 9),
                                   ("max", struct.pack("<Q", 2**64 - 1), 2**64 - 1),
                                   ("twice", struct.pack("<Q", 5), 5),
                                   ("short0", b"", None), ("short4", b"\1\0\0\0", None),
                                   ("short7", b"\1" * 7, None)):
        chunk = struct.pack("<II", 17, len(payload)) + payload
        if label == "twice":  # the largest of two stands
            chunk = struct.pack("<IIQ", 17, 8, 2) + chunk
        b = s[:at] + chunk + s[at:]
        inputs.append((f"t{ti}-dropped-{label}", b"\0" + b))
        dropped_checks.append((f"t{ti}-dropped-{label}", b, expect))
        if expect is None:
            damaged.append(b)
    b = s[:at] + struct.pack("<IIQ", 17, 8, 3)
    inputs.append((f"t{ti}-dropped-cutafter", b"\0" + b))
    dropped_checks.append((f"t{ti}-dropped-cutafter", b, 3))
    inputs.append((f"t{ti}-dropped-cutin", b"\0" + b[:-3]))

for name, data in inputs:
    with open(os.path.join(a.out, name), "wb") as fh:
        fh.write(data)
print(f"corpus: {len(inputs)} inputs from {len(traces)} real traces in {a.out}")

fails = []
if a.check_report:
    rnd.shuffle(damaged)
    statuses = {}
    for k, s in enumerate(damaged[:a.check_report]):
        p = os.path.join(work, f"damaged{k}.trace.zst")
        with open(p, "wb") as fh:
            fh.write(zstd(["-q", "-1", "-c"], s))
        try:
            r = subprocess.run([a.report, "--json", p], capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            fails.append(f"{p}: wslshim-report hung")
            continue
        statuses[r.returncode] = statuses.get(r.returncode, 0) + 1
        err_lines = [l for l in r.stderr.splitlines() if l.strip()]
        if r.returncode == 2 and len(err_lines) != 1:
            fails.append(f"{p}: exit 2 with {len(err_lines)} lines on stderr: {r.stderr!r}")
        elif r.returncode not in (0, 2):
            fails.append(f"{p}: exit {r.returncode}: {r.stderr[-300:]!r}")
    print(f"wslshim-report on {min(len(damaged), a.check_report)} damaged traces: exit statuses {statuses}")
    for name, s, expect in dropped_checks:
        p = os.path.join(work, name + ".trace.zst")
        with open(p, "wb") as fh:
            fh.write(zstd(["-q", "-1", "-c"], s))
        r = subprocess.run([a.report, "--json", p], capture_output=True, text=True, timeout=60)
        err_lines = [l for l in r.stderr.splitlines() if l.strip()]
        if expect is None:
            if r.returncode != 2 or len(err_lines) != 1 or "PATHS_DROPPED payload too small" not in err_lines[0]:
                fails.append(f"{name}: exit {r.returncode}, stderr {r.stderr[-300:]!r} (expected 2 and one line)")
        elif r.returncode != 0:
            fails.append(f"{name}: exit {r.returncode}: {r.stderr[-300:]!r}")
        else:
            got = json.loads(r.stdout)["processes"][0]["paths_dropped"]
            if got != expect:
                fails.append(f"{name}: paths_dropped {got}, expected {expect}")
    print(f"wslshim-report on {len(dropped_checks)} traces given PATHS_DROPPED chunks: checked")
if fails:
    print("\n".join("FAIL " + f for f in fails[:20]))
    sys.exit(1)
