#!/usr/bin/env python3
"""wslshim-report against bad input and awkward outputs (issue 28, docs/reliability.md).

    reader_cases.py --report EXE --sample DIR --work DIR [--shim LIB --fakedir DIR --client EXE] CASE

Each CASE is one ctest test. Traces: the demo's sample run (recorded by the shim, format 1.2) and,
with --shim, one recorded here from the fake-driver client (the current format, numbered chunks).
"""
import argparse, os, random, shutil, stat, subprocess, sys, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from damage import events_of, frames, record, report  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("--report", required=True)
ap.add_argument("--sample", required=True)
ap.add_argument("--work", required=True)
ap.add_argument("--shim")
ap.add_argument("--fakedir")
ap.add_argument("--client")
ap.add_argument("case")
a = ap.parse_args()
work = os.path.join(a.work, a.case)
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
R = a.report
SAMPLE = os.path.join(a.sample, "1658.trace.zst")  # 11 frames, with END
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)


def write(name, data):
    p = os.path.join(work, name)
    with open(p, "wb") as f:
        f.write(data)
    return p


def one_line(err):
    return len(err) == 1 and err[0].startswith("wslshim-report: ") and "warning" not in err[0]


def read_fifo(path, got):
    with open(path, "rb") as f:
        got.append(f.read())


def outputs():
    """(label, args before the trace, what a FILE is passed with)."""
    return (("html", ["--html"]), ("chrome", ["--chrome"]), ("json -o", ["--json", "-o"]))


def case_output_fifo():
    # A FIFO given as the output: written in place, still a FIFO afterwards.
    for label, opt in outputs():
        fifo = os.path.join(work, f"out-{label.replace(' ', '')}")
        os.mkfifo(fifo)
        got = []
        t = threading.Thread(target=read_fifo, args=(fifo, got), daemon=True)
        t.start()
        rc, _, err = report(R, opt + [fifo, a.sample], timeout=60)
        if rc != 0:  # unblock the reader thread if the tool never opened the FIFO
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass
        t.join(10)
        is_fifo = stat.S_ISFIFO(os.lstat(fifo).st_mode)
        check(rc == 0 and is_fifo and got and len(got[0]) > 1000,
              f"{label} to a FIFO: exit {rc}, still a FIFO: {is_fifo}, {len(got[0]) if got else 0} bytes read; {err}")
        left = [f for f in os.listdir(work) if ".tmp-" in f]
        check(not left, f"{label}: temporary files left: {left}")
    # A regular file is still replaced whole (and nothing is left beside it).
    for label, opt in outputs():
        out = os.path.join(work, f"regular-{label.replace(' ', '')}")
        with open(out, "w") as f:
            f.write("old")
        rc, _, err = report(R, opt + [out, a.sample])
        data = open(out, "rb").read()
        check(rc == 0 and len(data) > 1000 and stat.S_ISREG(os.lstat(out).st_mode),
              f"{label} to a regular file: exit {rc}, {len(data)} bytes; {err}")
    check(not [f for f in os.listdir(work) if ".tmp-" in f], "temporary files left")


def case_output_write_error():
    # A symlink to /dev/full: written through it, ENOSPC reported, the link left as it was.
    if not os.path.exists("/dev/full"):
        print("SKIP: no /dev/full")
        sys.exit(77)
    for label, opt in outputs():
        link = os.path.join(work, f"full-{label.replace(' ', '')}")
        os.symlink("/dev/full", link)
        rc, _, err = report(R, opt + [link, a.sample])
        check(rc == 2 and one_line(err) and "No space left on device" in err[0],
              f"{label} to /dev/full: exit {rc}, stderr {err}")
        check(os.path.islink(link) and os.readlink(link) == "/dev/full", f"{label}: the symlink was replaced")
    check(not [f for f in os.listdir(work) if ".tmp-" in f], "temporary files left")


def case_output_epipe():
    # stdout a pipe whose reader is gone: one line and exit 2, not a silent death by SIGPIPE.
    for label, opt in (("text", []), ("json", ["--json"]), ("html -", ["--html", "-"]), ("chrome -", ["--chrome", "-"])):
        r, w = os.pipe()
        os.close(r)
        try:
            p = subprocess.run([R] + opt + [a.sample], stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(w)
        err = [l for l in p.stderr.splitlines() if l.strip()]
        check(p.returncode == 2 and one_line(err) and "Broken pipe" in err[0],
              f"{label} to a closed pipe: exit {p.returncode}, stderr {err}")


def case_input_fifo():
    # A FIFO with no writer, and devices, given as traces: refused at once, never waited on.
    fifo = os.path.join(work, "fifo.trace.zst")
    os.mkfifo(fifo)
    for path in (fifo, "/dev/null", "/dev/zero"):
        if not os.path.exists(path):
            continue
        rc, _, err = report(R, [path], timeout=20)
        check(rc == 2 and one_line(err) and "regular file" in err[0], f"{path}: exit {rc}, stderr {err}")
    if rc == "hang":  # the old reader is still blocked in open(): let it go
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass


def case_folder_bad_traces():
    # Good traces and bad ones in a folder: the good ones make the report, each bad one is named once.
    d = os.path.join(work, "run")
    os.makedirs(d)
    for f in os.listdir(a.sample):
        shutil.copy(os.path.join(a.sample, f), d)
    bad = {"empty.trace.zst": b"", "short.trace.zst": open(SAMPLE, "rb").read()[:20],
           "text.trace.zst": b"not a trace at all\n" * 10}
    for name, data in bad.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
    good_ev = events_of(R, a.sample)[1]
    for opt in ([], ["--json"]):
        rc, out, err = report(R, opt + [d])
        check(rc == 0, f"folder with {len(bad)} bad traces {opt}: exit {rc}, stderr {err}")
        for name in bad:
            n = sum(1 for l in err if name in l and "warning" in l)
            check(n == 1, f"{opt}: {name} named {n} times on stderr: {err}")
    rc, ev, err = events_of(R, d)
    check(rc == 0 and ev == good_ev, f"folder: {ev} events, the good traces alone {good_ev}")
    # The HTML page and the timeline leave them out too.
    for opt, out in ((["--html"], "r.html"), (["--chrome"], "r.json")):
        rc, _, err = report(R, opt + [os.path.join(work, out), d])
        check(rc == 0 and sum("empty.trace.zst" in l for l in err) == 1, f"{opt}: exit {rc}, stderr {err}")
    # Only bad traces: exit 2, one line.
    d2 = os.path.join(work, "allbad")
    os.makedirs(d2)
    for name, data in bad.items():
        with open(os.path.join(d2, name), "wb") as f:
            f.write(data)
    rc, _, err = report(R, [d2])
    check(rc == 2 and one_line(err), f"folder of bad traces: exit {rc}, stderr {err}")
    # A bad trace named on the command line is still an error.
    rc, _, err = report(R, [os.path.join(d, "empty.trace.zst"), SAMPLE])
    check(rc == 2 and one_line(err), f"a bad trace named: exit {rc}, stderr {err}")


def case_folder_bad_order():
    # Each trace is read once, with no check before the reading; what such a check found first
    # still comes first. A trace that is no trace (no process info) is named before one that was
    # cut or damaged after its process info, whatever the order of reading; a run fails on the
    # first trace without process info of any list before one damaged later.
    if not shutil.which("zstd"):
        print("skipped: no zstd program")
        sys.exit(77)
    raw = subprocess.run(["zstd", "-dc", SAMPLE], capture_output=True, check=True).stdout
    hs = int.from_bytes(raw[16:20], "little")  # the file header's header_size
    second = hs + 8 + int.from_bytes(raw[hs + 4:hs + 8], "little")  # the chunk after PROCESS
    bad = bytearray(raw)
    bad[second + 4:second + 8] = (0x7FFFFFFF).to_bytes(4, "little")  # its size: past the limit
    damaged = subprocess.run(["zstd", "-q", "--check", "-c"], input=bytes(bad), capture_output=True,
                             check=True).stdout
    dirs = {}
    for name, files in (("mixed", {"a_damaged": damaged, "b_empty": b"", "c_good": open(SAMPLE, "rb").read()}),
                        ("damaged", {"a": damaged}), ("empty", {"a": b""})):
        d = dirs[name] = os.path.join(work, name)
        os.makedirs(d)
        for f, data in files.items():
            with open(os.path.join(d, f + ".trace.zst"), "wb") as fh:
                fh.write(data)
    rc, _, err = report(R, [dirs["mixed"]])
    warned = [l for l in err if "left out of the report" in l]
    check(rc == 0 and len(warned) == 2 and "b_empty" in warned[0] and "a_damaged" in warned[1]
          and "size 2147483647 exceeds" in warned[1], f"folder: exit {rc}, warnings {warned}")
    dmg, empty = os.path.join(dirs["mixed"], "a_damaged.trace.zst"), os.path.join(dirs["mixed"], "b_empty.trace.zst")
    for args in ([dmg, empty], ["--compare", dmg, empty]):
        rc, _, err = report(R, args)
        check(rc == 2 and one_line(err) and "b_empty.trace.zst: empty file" in err[0], f"{args}: exit {rc}, {err}")
    rc, _, err = report(R, ["--compare", dirs["damaged"], dirs["empty"]])
    check(rc == 2 and one_line(err) and "no trace can be read (1 bad, e.g. " + dirs["empty"] in err[0],
          f"--compare damaged empty: exit {rc}, {err}")
    rc, _, err = report(R, ["--compare", dirs["empty"], dirs["damaged"]])
    check(rc == 2 and one_line(err) and "e.g. " + dirs["empty"] in err[0], f"--compare empty damaged: {rc}, {err}")
    rc, _, err = report(R, [dirs["damaged"]])
    check(rc == 2 and one_line(err) and "size 2147483647 exceeds" in err[0], f"damaged alone: exit {rc}, {err}")


def case_salvage_flips():
    # One flipped byte in a frame: the frames before it are read, with a warning naming where.
    b = open(SAMPLE, "rb").read()
    fr = frames(b)
    rnd = random.Random(28)
    n = 0
    for k in range(30):
        fi = 1 + k % (len(fr) - 1)  # frames 1..last (frame 0 holds the process info)
        s, e = fr[fi]
        at = rnd.randrange(s, e)
        x = bytearray(b)
        x[at] ^= 1 << rnd.randrange(8)
        p = write(f"flip{k}.trace.zst", bytes(x))
        rc, ev, err = events_of(R, p)
        cut_rc, cut_ev, _ = events_of(R, write(f"cut{k}.trace.zst", b[:s]))
        warned = [l for l in err if f"damaged at byte {s} " in l]
        ok = rc == 0 and ev == cut_ev and len(warned) == 1
        check(ok, f"flip at byte {at} (frame {fi} at {s}): exit {rc}, {ev} events, the frames before it "
                  f"hold {cut_ev}; stderr {err}")
        n += ok
    print(f"{n} of 30 flips read up to the damaged frame")


def case_trailing_bytes():
    # One trailing zero byte (and other junk) after a complete trace: all of it read, a warning.
    b = open(SAMPLE, "rb").read()
    rc0, ev0, _ = events_of(R, SAMPLE)
    for label, tail in (("zero", b"\0"), ("zeros", b"\0" * 4096), ("text", b"hello\n"), ("half frame", b[:100])):
        rc, ev, err = events_of(R, write(f"tail-{label.replace(' ', '')}.trace.zst", b + tail))
        check(rc == 0 and ev == ev0 and any("after the END chunk" in l for l in err),
              f"trailing {label}: exit {rc}, {ev} events of {ev0}; stderr {err}")


def case_concatenated():
    # cat a b: the first is read and the warning says a second trace follows.
    a1, a2 = (os.path.join(a.sample, f) for f in ("1684.trace.zst", "1686.trace.zst"))
    rc1, ev1, _ = events_of(R, a1)
    p = write("cat.trace.zst", open(a1, "rb").read() + open(a2, "rb").read())
    rc, ev, err = events_of(R, p)
    check(rc == 0 and ev == ev1 and any("concatenated" in l and "second trace" in l for l in err),
          f"cat a b: exit {rc}, {ev} events (a alone {ev1}); stderr {err}")
    check(not any("cut short" in l for l in err), f"cat a b: called cut short: {err}")


def case_after_end():
    # Chunks after END (frames of the trace repeated after its end): not counted, a warning.
    b = open(SAMPLE, "rb").read()
    fr = frames(b)
    rc0, ev0, _ = events_of(R, SAMPLE)
    p = write("after-end.trace.zst", b + b[fr[1][0]:fr[4][1]])
    rc, ev, err = events_of(R, p)
    check(rc == 0 and ev == ev0 and any("after the END chunk" in l for l in err),
          f"frames after END: exit {rc}, {ev} events of {ev0}; stderr {err}")


def case_frames_lost_or_repeated():
    # Frames deleted, repeated or swapped: END's count (every trace) and the chunk numbers (1.7) say so.
    def variants(b, fr, k):
        return {"deleted": b[:fr[k][0]] + b[fr[k][1]:], "repeated": b[:fr[k][1]] + b[fr[k][0]:],
                "swapped": b[:fr[k][0]] + b[fr[k + 1][0]:fr[k + 1][1]] + b[fr[k][0]:fr[k][1]] + b[fr[k + 1][1]:]}
    b = open(SAMPLE, "rb").read()
    fr = frames(b)
    for k in (2, 5):
        for label, data in variants(b, fr, k).items():
            if label == "swapped":
                continue  # a 1.2 trace has no chunk numbers: a swap keeps END's count
            rc, ev, err = events_of(R, write(f"v12-{label}{k}.trace.zst", data))
            check(rc == 0 and any("END says" in l and "lost or repeated" in l for l in err),
                  f"1.2 trace, frame {k} {label}: exit {rc}, {ev} events; stderr {err}")
    if not a.shim:
        return
    fresh = record(a.shim, a.fakedir, a.client, work)
    b = open(fresh, "rb").read()
    fr = frames(b)
    check(len(fr) >= 6, f"the recorded trace has {len(fr)} frames")
    rc0, ev0, err0 = events_of(R, fresh)
    check(rc0 == 0 and not any("sequence" in l or "END says" in l for l in err0), f"clean trace warned: {err0}")
    for k in (2, len(fr) - 3):
        for label, data in variants(b, fr, k).items():
            for end in ("with END", "without END"):
                d = data if end == "with END" else data[:len(data) - (fr[-1][1] - fr[-1][0])]
                rc, ev, err = events_of(R, write(f"fresh-{label}{k}-{end[:2]}.trace.zst", d))
                check(rc == 0 and any("out of sequence" in l for l in err),
                      f"fresh trace, frame {k} {label} {end}: exit {rc}, {ev} events; stderr {err}")


def case_too_short():
    # Files too short to be a trace (cut inside the first frame, or junk): one line, exit 2.
    b = open(SAMPLE, "rb").read()
    for n in list(range(1, 61)) + [100, 500, 1000]:
        rc, _, err = report(R, [write(f"short{n}.trace.zst", b[:n])])
        check(rc == 2 and one_line(err), f"first {n} bytes: exit {rc}, stderr {err}")
    rnd = random.Random(5)
    for n in (1, 7, 33, 60):
        rc, _, err = report(R, [write(f"junk{n}.trace.zst", bytes(rnd.randrange(256) for _ in range(n)))])
        check(rc == 2 and one_line(err), f"{n} random bytes: exit {rc}, stderr {err}")


cases = {n[5:]: f for n, f in globals().items() if n.startswith("case_")}
if a.case not in cases:
    sys.exit(f"unknown case {a.case}; cases: {' '.join(cases)}")
cases[a.case]()
if fails:
    print("\n".join("FAIL " + f for f in fails[:20]))
    print(f"{len(fails)} failures")
    sys.exit(1)
print("ok")
shutil.rmtree(work, ignore_errors=True)
