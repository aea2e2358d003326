#!/usr/bin/env python3
"""Checks of `wslshim-report --html`, one case per ctest entry.

    html_check.py --report EXE --make EXE --workdir DIR [--shim LIB --fakedir DIR --client EXE] CASE

Cases:
  synthetic   the page is well-formed HTML, loads nothing from anywhere, and its
              charts hold the trace's numbers (launches, GPU busy, bytes read,
              kernel histogram, API rows, filesystems)
  hostile     HTML and script planted in the trace's strings come out as text
  two_traces  two processes of one run: the timeline adds both
  two_runs    the writer with two runs (as --compare calls it): side by side,
              each column with its own run's numbers, plus the extra section
  options     usage errors and unwritable output: exit 2, one line, no file left
  fake_client a launch-bound fake-driver run under the shim, GPU timing on
  browser     chromium (headless) loads the page without errors and draws the
              charts (--dump-dom and --screenshot); exit 77 (skip) without chromium
"""
import argparse
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import zlib

A = None
FAILS = []


def fail(msg):
    FAILS.append(msg)


def run(args, env=None, **kw):
    e = dict(os.environ)
    e.pop("WSLSHIM_PROGRESS", None)
    if env:
        e.update(env)
    return subprocess.run(args, env=e, capture_output=True, timeout=180, **kw)


def workdir(name):
    d = os.path.join(A.workdir, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def make(d, name, *args):
    path = os.path.join(d, name)
    r = run([A.make, path, *args])
    if r.returncode != 0:
        raise SystemExit(f"make_html_trace failed: {r.stderr.decode()}")
    return path, json.loads(r.stdout)


def report_html(out, *args):
    r = run([A.report, "--html", out, *args])
    if r.returncode != 0:
        fail(f"--html {args}: exit {r.returncode}: {r.stderr.decode().strip()}")
        return None
    with open(out, "rb") as f:
        data = f.read()
    try:
        return data.decode("utf-8")          # strict: the page is valid UTF-8
    except UnicodeDecodeError as e:
        fail(f"{out}: not UTF-8: {e}")
        return data.decode("utf-8", "replace")


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
# SVG elements written self-closed (<line/>) are fine; anything else must be closed explicitly.


class Page(html.parser.HTMLParser):
    """Strict structure: every opened tag closed in order; records tags, attributes and text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.tags, self.text = [], [], [], []
        self.path_text = []      # (stack of tags, text)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs), list(self.stack)))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs), list(self.stack)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else 'nothing'}> "
                               f"at line {self.getpos()[0]}")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)
        self.path_text.append((list(self.stack), data))


def parse(page, what):
    p = Page()
    p.feed(page)
    p.close()
    for e in p.errors[:5]:
        fail(f"{what}: {e}")
    if p.stack:
        fail(f"{what}: tags never closed: {p.stack}")
    if not page.startswith("<!DOCTYPE html>"):
        fail(f"{what}: no doctype")
    return p


URL_ATTRS = {"src", "href", "xlink:href", "action", "formaction", "poster", "srcset", "data", "background"}


def no_external(p, page, what):
    for tag, attrs, _ in p.tags:
        for k, v in attrs.items():
            if k in URL_ATTRS and v is not None:
                fail(f"{what}: <{tag} {k}={v!r}> refers to something outside the page")
            if k.startswith("on"):
                fail(f"{what}: <{tag}> has an event handler {k}={v!r}")
        if tag in ("script", "link", "iframe", "object", "embed", "img", "image", "use", "foreignobject", "base"):
            fail(f"{what}: <{tag}> element in the page")
        if tag == "svg" and attrs.get("xmlns") not in (None, "http://www.w3.org/2000/svg"):
            fail(f"{what}: odd svg namespace {attrs.get('xmlns')}")
    styles = "".join(d for stack, d in p.path_text if stack and stack[-1] == "style")
    if "@import" in styles or re.search(r"url\s*\(", styles):
        fail(f"{what}: the stylesheet loads something (@import or url())")
    for tag, attrs, _ in p.tags:
        if "url(" in (attrs.get("style") or ""):
            fail(f"{what}: style attribute with url()")
    # The one namespace URI is the only http text allowed in markup.
    markup = re.sub(r">[^<]*<", "><", page)
    for m in re.finditer(r"https?://[^\s\"'<>]*", markup):
        if m.group(0) != "http://www.w3.org/2000/svg":
            fail(f"{what}: URL in markup: {m.group(0)}")


TIMELINE = ("launches", "gpu-busy", "io-bytes", "memory")


def chart_points(p, chart, view="whole"):
    """data-v values of the data points of one chart. A timeline chart is taken from the whole-run view
    (named CHART-whole when the page opens on the steady state); view="steady" takes the first one."""
    if view == "whole" and chart in TIMELINE and any(a.get("data-chart") == chart + "-whole" for _, a, _ in p.tags):
        chart = chart + "-whole"
    vals = []
    for tag, attrs, stack in p.tags:
        if "data-v" not in attrs:
            continue
        if attrs.get("data-chart") == chart:
            vals.append(float(attrs["data-v"]))
    # points inside a <g data-chart=...> group
    group = None
    for tag, attrs, stack in p.tags:
        if tag == "g" and attrs.get("data-chart"):
            group = (attrs["data-chart"], len(stack))
        elif group and len(stack) > group[1] and group[0] == chart and "data-v" in attrs and tag == "rect":
            vals.append(float(attrs["data-v"]))
        elif group and len(stack) <= group[1]:
            group = None
    return vals


def check_synthetic_page(page, info, what):
    p = parse(page, what)
    no_external(p, page, what)
    svgs = [t for t in p.tags if t[0] == "svg"]
    if len(svgs) < 4:
        fail(f"{what}: {len(svgs)} svg charts, expected at least 4")
    launches = chart_points(p, "launches")
    if not launches or sum(launches) != info["launches"]:
        fail(f"{what}: timeline launches add up to {sum(launches)} in {len(launches)} buckets, "
             f"the trace made {info['launches']}")
    if len(launches) < 50:
        fail(f"{what}: launches fall in only {len(launches)} buckets")
    io = chart_points(p, "io-bytes")
    if sum(io) != info["bytes_read"]:
        fail(f"{what}: timeline bytes read add up to {sum(io)}, the trace read {info['bytes_read']}")
    busy = chart_points(p, "gpu-busy")
    if not busy or abs(sum(busy) - info["gpu_busy_ns"]) > 1e-6 * info["gpu_busy_ns"] + 1:
        fail(f"{what}: GPU busy adds up to {sum(busy)} ns, expected {info['gpu_busy_ns']}")
    hist = chart_points(p, "kernel-hist")
    if sum(hist) != info["timed"] or len(hist) < 2:
        fail(f"{what}: kernel histogram holds {sum(hist)} launches in {len(hist)} bins, {info['timed']} were timed "
             f"(two kinds of kernels: at least 2 bins)")
    api = chart_points(p, "api-latency")
    if len(api) < 4:
        fail(f"{what}: {len(api)} rows in the API latency chart")
    fs = chart_points(p, "io-fs")
    if sorted(fs) != [info["bytes_read"] / 2] * 2:
        fail(f"{what}: filesystems chart {fs}, expected two filesystems of {info['bytes_read'] / 2} bytes")
    text = " ".join(p.text)
    for want in ("Bottlenecks", "cross_os_reads", "Advice", "cuLaunchKernel", "gemm"):
        if want not in text:
            fail(f"{what}: '{want}' not in the page's text")
    return p


def bucket_ns(p, chart):
    if chart in TIMELINE and any(a.get("data-chart") == chart + "-whole" for _, a, _ in p.tags):
        chart = chart + "-whole"
    for tag, attrs, _ in p.tags:
        if tag == "g" and attrs.get("data-chart") == chart:
            return int(attrs["data-bucket-ns"])
    return None


def case_synthetic():
    d = workdir("synthetic")
    # every launch timed: the busy estimate is the timed GPU time itself (one stream, never overlapping)
    path, info = make(d, "a.trace.zst", "--sample", "1")
    page = report_html(os.path.join(d, "a.html"), path)
    if page:
        p = check_synthetic_page(page, info, "synthetic")
        text = " ".join(p.text)
        if "small_kernel(float*, int)" not in text:
            fail("synthetic: the demangled kernel name is not in the page")
    # 1 in 4 timed: scaled by 4, but never more than the one stream's time in a bucket
    path, info = make(d, "b.trace.zst", "--sample", "4")
    page = report_html(os.path.join(d, "b.html"), path)
    if page:
        p = parse(page, "synthetic 1 in 4")
        busy, width = chart_points(p, "gpu-busy"), bucket_ns(p, "gpu-busy")
        if not busy or max(busy) > width or max(busy) < width * 0.99:
            fail(f"synthetic 1 in 4: busy per bucket up to {max(busy or [0])} ns, buckets of {width} ns: "
                 f"expected the big kernels' buckets capped at one stream's time")
        if not info["gpu_busy_ns"] * 0.5 < sum(busy) < info["gpu_busy_ns"]:
            fail(f"synthetic 1 in 4: busy adds up to {sum(busy)}, the uncapped estimate is {info['gpu_busy_ns']}")


HOSTILE = "<script>alert(1)</script><img src=\"http://evil.example/x.png\" onerror='alert(2)'>&amp;"


def case_hostile():
    d = workdir("hostile")
    path, info = make(d, "h.trace.zst", "--hostile", "--sample", "1")
    page = report_html(os.path.join(d, "h.html"), path)
    if not page:
        return
    p = check_synthetic_page(page, info, "hostile")
    text = "".join(p.text)
    # the planted strings are there, as text: kernel name, path (evidence), command line, host
    planted = "<script>alert(1)</script><img src="    # paths come out normalized (// as /): look for a part
    if text.count(planted) < 4:
        fail(f"hostile: the planted string appears {text.count(planted)} times as text, expected at least 4 "
             f"(kernel, command line twice, folder)")
    folders = [d for stack, d in p.path_text if planted in d and "td" in stack]
    if not any("/mnt/c/Users/" in f for f in folders):
        fail("hostile: the planted folder is not in a table cell")
    if "host<b>\"x\"</b>" not in text:
        fail("hostile: the host name is not shown as text")
    if "\ufffd" not in text:
        fail("hostile: the byte that is not UTF-8 was not replaced by U+FFFD")
    if "\x1b" in page:
        fail("hostile: a control character reached the page")
    if "</svg></style>" not in text:
        fail("hostile: the kernel name's closing tags are not shown as text")
    for bad in ("<script", "<img", "</style></", "evil.example/x.png\" "):
        if bad in page:
            fail(f"hostile: '{bad}' appears unescaped in the page")


def case_two_traces():
    d = workdir("two_traces")
    a, ia = make(d, "a.trace.zst", "--pid", "7001", "--start-ns", "9000000000", "--launches", "2000", "--sample", "1")
    b, ib = make(d, "b.trace.zst", "--pid", "7002", "--start-ns", "9005000000", "--launches", "1000", "--sample", "1")
    page = report_html(os.path.join(d, "ab.html"), d)
    if not page:
        return
    p = parse(page, "two_traces")
    no_external(p, page, "two_traces")
    launches = chart_points(p, "launches")
    if sum(launches) != ia["launches"] + ib["launches"]:
        fail(f"two_traces: launches add up to {sum(launches)}, the traces made {ia['launches'] + ib['launches']}")
    busy = sum(chart_points(p, "gpu-busy"))
    want = ia["gpu_busy_ns"] + ib["gpu_busy_ns"]
    if abs(busy - want) > 1e-6 * want:
        fail(f"two_traces: GPU busy adds up to {busy}, each process scaled alone gives {want}")
    io = sum(chart_points(p, "io-bytes"))
    if io != ia["bytes_read"] + ib["bytes_read"]:
        fail(f"two_traces: bytes read add up to {io}")
    text = " ".join(p.text)
    if "7001" not in text or "7002" not in text:
        fail("two_traces: both processes are not in the page")


def case_two_runs():
    d = workdir("two_runs")
    a, ia = make(d, "a.trace.zst", "--pid", "7101", "--launches", "2000")
    b, ib = make(d, "b.trace.zst", "--pid", "7102", "--launches", "500", "--hostile")
    r = run([A.pair, a, b])
    if r.returncode != 0:
        fail(f"two_runs: html_pair exit {r.returncode}: {r.stderr.decode()}")
        return
    page = r.stdout.decode("utf-8")
    p = parse(page, "two_runs")
    no_external(p, page, "two_runs")
    heads = [d for stack, d in p.path_text if stack and stack[-1] == "p" and d.startswith(("A: ", "B: "))]
    sections = [t[1].get("id") for t in p.tags if t[0] == "section"]
    if sections[:2] != ["summary", "compare"]:
        fail(f"two_runs: sections {sections}: the extra section should follow the summary")
    if heads.count("A: " + a) < 8 or heads.count("B: " + b) < 8:
        fail(f"two_runs: column headings {heads[:4]}...: expected one per run in every section")
    # the timeline's launch groups, in order A then B
    groups, cur = [], None
    for tag, attrs, stack in p.tags:
        if tag == "g" and attrs.get("data-chart") in ("launches-whole", "launches") and \
                not (attrs.get("data-chart") == "launches" and "launches-whole" in {a.get("data-chart") for _, a, _ in p.tags}):
            cur = []
            groups.append((len(stack), cur))
        elif groups and tag == "rect" and "data-v" in attrs and len(stack) > groups[-1][0] and cur is not None:
            cur.append(float(attrs["data-v"]))
        elif tag == "g":
            cur = None
    sums = [sum(g[1]) for g in groups]
    if sums != [ia["launches"], ib["launches"]]:
        fail(f"two_runs: launches per column {sums}, the runs made {[ia['launches'], ib['launches']]}")
    if "<script" in page:
        fail("two_runs: the hostile run's strings reached the page unescaped")


def expect_usage_error(args, what, must_not_exist=None):
    r = run([A.report, *args])
    err = r.stderr.decode()
    if r.returncode != 2 or err.count("\n") != 1 or not err.startswith("wslshim-report: "):
        fail(f"options: {what}: exit {r.returncode}, stderr {err!r} (want 2 and one line)")
    if must_not_exist:
        left = [f for f in os.listdir(os.path.dirname(must_not_exist) or ".")
                if f.startswith(os.path.basename(must_not_exist))]
        if left:
            fail(f"options: {what}: left {left} behind")


def case_options():
    d = workdir("options")
    path, _ = make(d, "a.trace.zst")
    out = os.path.join(d, "out.html")
    expect_usage_error([path, "--html"], "--html without a file")
    expect_usage_error(["--html=", path], "--html= empty")
    expect_usage_error(["--html", out, "--json", path], "--html with --json", out)
    expect_usage_error(["--html", out, "-o", os.path.join(d, "x"), path], "--html with -o", out)
    expect_usage_error(["--html", out, "--chrome", os.path.join(d, "c.json"), path], "--html with --chrome", out)
    expect_usage_error(["--html", out, "--from", "0", path], "--html with --from", out)
    expect_usage_error(["--html", os.path.join(d, "no", "such", "dir.html"), path], "unwritable output")
    bad = os.path.join(d, "bad.trace.zst")
    with open(bad, "wb") as f:
        f.write(b"not a trace at all")
    expect_usage_error(["--html", out, bad], "not a trace", out)
    # '-' is stdout, and the page is the same as the file's
    r = run([A.report, "--html", "-", path])
    if r.returncode != 0 or not r.stdout.startswith(b"<!DOCTYPE html>"):
        fail(f"options: --html - : exit {r.returncode}, {r.stdout[:40]!r}")
    page = report_html(out, path)
    if page is not None and page.encode() != r.stdout:
        fail("options: --html - and --html FILE differ")
    if os.path.exists(out) and [f for f in os.listdir(d) if ".tmp-" in f]:
        fail("options: a temporary file was left behind")
    # --html=FILE works too
    r = run([A.report, "--html=" + os.path.join(d, "eq.html"), path])
    if r.returncode != 0 or not os.path.exists(os.path.join(d, "eq.html")):
        fail(f"options: --html=FILE: exit {r.returncode} {r.stderr.decode()!r}")


def fake_run(d, queued=3000, starved=400):
    env = {"LD_PRELOAD": A.shim, "LD_LIBRARY_PATH": A.fakedir, "WSLSHIM_OUTPUT": os.path.join(d, "%p.trace.zst"),
           "WSLSHIM_GPU_TIMING": "1", "FAKE_CUDA_KERNEL_NS": "1500", "FAKE_CUDA_LAUNCH_NS": "6000"}
    r = run([A.client, str(queued), str(starved), "3"], env=env)
    if r.returncode != 0:
        fail(f"fake client: exit {r.returncode}: {r.stderr.decode()[-300:]}")
        return None
    expect = json.loads([l for l in r.stdout.decode().splitlines() if l.startswith("EXPECT ")][-1][7:])
    return expect


def case_fake_client():
    if not (A.shim and A.client):
        print("no shim or client given")
        sys.exit(77)
    d = workdir("fake_client")
    expect = fake_run(d)
    if expect is None:
        return
    page = report_html(os.path.join(d, "fake.html"), d)
    if not page:
        return
    p = parse(page, "fake_client")
    no_external(p, page, "fake_client")
    launches = sum(chart_points(p, "launches"))
    want = sum(n for sym, n in expect.items() if sym.startswith("cuLaunchKernel") or sym.startswith("cuGraphLaunch"))
    if launches != want:
        fail(f"fake_client: timeline launches {launches}, the client made {want}")
    if not chart_points(p, "gpu-busy"):
        fail("fake_client: no GPU busy points with GPU timing on")
    hist = sum(chart_points(p, "kernel-hist"))
    r = run([A.report, "--json", d])
    timed = json.loads(r.stdout)["gpu"]["kernels_timed"] if r.returncode == 0 else None
    if not hist or hist != timed or hist > want:
        fail(f"fake_client: kernel histogram holds {hist} timed launches, the JSON report {timed}, launches {want}")


def png_pixels(path):
    """(width, height, rows of RGB(A) bytes) of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                raise ValueError(f"PNG depth {depth} type {ctype}")
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        ft, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ft == 1:
                line[x] = (line[x] + a) & 255
            elif ft == 2:
                line[x] = (line[x] + b) & 255
            elif ft == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ft == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return w, h, bpp, rows


SERIES = {"launches (blue)": (0x25, 0x63, 0xc9), "GPU busy (green)": (0x1f, 0x8a, 0x5b),
          "I/O (orange)": (0xc7, 0x66, 0x1c), "kernel histogram (purple)": (0x7a, 0x4f, 0xc4)}


def case_browser():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        print("chromium is not installed: skipped")
        sys.exit(77)
    d = workdir("browser")
    page_path = None
    if A.shim and A.client:
        if fake_run(d) is not None:
            page_path = os.path.join(d, "fake.html")
            if report_html(page_path, d) is None:
                page_path = None
    if page_path is None:
        path, _ = make(d, "a.trace.zst")
        page_path = os.path.join(d, "a.html")
        if report_html(page_path, path) is None:
            return
    url = "file://" + page_path
    flags = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
             "--user-data-dir=" + os.path.join(d, "profile"), "--enable-logging=stderr", "--v=0"]
    r = run([chromium, *flags, "--dump-dom", url])
    dom = r.stdout.decode("utf-8", "replace")
    if r.returncode != 0 or "<svg" not in dom:
        fail(f"browser: --dump-dom exit {r.returncode}, {len(dom)} bytes, stderr {r.stderr.decode()[-400:]}")
        return
    err = r.stderr.decode("utf-8", "replace")
    for line in err.splitlines():
        if "CONSOLE" in line or "Uncaught" in line or "net::ERR" in line:
            fail(f"browser: {line.strip()}")
    p = Page()
    p.feed(dom)
    with open(page_path, encoding="utf-8") as f:
        orig = Page()
        orig.feed(f.read())
    charts = ("launches", "gpu-busy", "io-bytes", "kernel-hist", "api-latency", "io-fs")
    svgs = sum(1 for t in p.tags if t[0] == "svg")
    if svgs < 3 or svgs != sum(1 for t in orig.tags if t[0] == "svg"):
        fail(f"browser: the loaded DOM has {svgs} charts")
    for c in charts:
        if len(chart_points(p, c)) != len(chart_points(orig, c)):
            fail(f"browser: chart {c}: {len(chart_points(p, c))} points loaded, the page has {len(chart_points(orig, c))}")
    if not chart_points(p, "launches"):
        fail("browser: no launches drawn")
    shot = os.path.join(d, "page.png")
    r = run([chromium, *flags, "--window-size=1280,4200", "--screenshot=" + shot, url])
    if r.returncode != 0 or not os.path.exists(shot):
        fail(f"browser: --screenshot exit {r.returncode}: {r.stderr.decode()[-400:]}")
        return
    w, h, bpp, rows = png_pixels(shot)
    found = {}
    for name, rgb in SERIES.items():
        px = bytes(rgb)
        found[name] = sum(row[x:x + 3] == px for row in rows for x in range(0, w * bpp, bpp))
    drawn = {"launches (blue)": "launches", "GPU busy (green)": "gpu-busy", "I/O (orange)": "io-bytes",
             "kernel histogram (purple)": "kernel-hist"}
    missing = [n for n, c in found.items() if c < 30 and chart_points(orig, drawn[n])]
    if missing:
        fail(f"browser: the screenshot shows too few pixels of {missing} ({found})")
    print(f"screenshot {shot}: {w}x{h}, chart pixels {found}")


def png_write(path, w, h, rows, bpp):
    """rows of RGB(A) bytes as an RGB PNG."""
    raw = b"".join(b"\x00" + bytes(r[x:x + 3] for x in range(0, w * bpp, bpp)) if bpp == 4 else b"\x00" + bytes(r)
                   for r in rows) if bpp == 3 else b"".join(b"\x00" + b"".join(bytes(r[x:x + 3]) for x in range(0, w * bpp, bpp)) for r in rows)

    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xffffffff)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) +
                chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


# section id -> text the loaded DOM must hold in it (the real H200 run: 3 processes, NVTX steps)
SECTION_TEXT = {"summary": "wall", "bottlenecks": "time lost", "phases": "steady state", "timeline": "Steady state",
                "nvtx": "step", "memory": "Peak device memory", "kernels": "0 ns", "kernel-table": "(estimate)",
                "api-latency": "cuInit", "io": "read", "api-table": "cuLaunchKernel", "processes": "python"}


def case_browser_sections():
    """Each section of the sample run's page, loaded in headless chromium: its text in the DOM, and a
    screenshot of it alone (the others hidden) with drawn pixels. The screenshots stay in WORKDIR/sections."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not chromium:
        print("chromium is not installed: skipped")
        sys.exit(77)
    if not A.sample or not os.path.isdir(A.sample):
        print("no sample run: skipped")
        sys.exit(77)
    d = workdir("browser_sections")
    page_path = os.path.join(d, "sample.html")
    if report_html(page_path, A.sample) is None:
        return
    flags = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--hide-scrollbars",
             "--force-device-scale-factor=1", "--user-data-dir=" + os.path.join(d, "profile")]
    with open(page_path, encoding="utf-8") as f:
        html = f.read()
    if "<script" in html or "http://" in html.replace("http://www.w3.org/2000/svg", "") or "https://" in html:
        fail("browser_sections: the page loads or runs something")
    # the sections' boxes, measured by the browser (a copy of the page with a script that writes them)
    probe = os.path.join(d, "probe.html")
    with open(probe, "w", encoding="utf-8") as f:
        f.write(html.replace("</body>", "<script>document.body.setAttribute('data-boxes', JSON.stringify("
                             "[...document.querySelectorAll('section')].map(s => [s.id, s.textContent.length, "
                             "Math.round(s.getBoundingClientRect().height)])));</script></body>"))
    r = run([chromium, *flags, "--window-size=900,900", "--dump-dom", "file://" + probe])
    dom = r.stdout.decode("utf-8", "replace")
    m = re.search(r'data-boxes="([^"]*)"', dom)
    if r.returncode != 0 or not m:
        fail(f"browser_sections: --dump-dom exit {r.returncode}: {r.stderr.decode()[-300:]}")
        return
    boxes = json.loads(m.group(1).replace("&quot;", '"'))
    ids = [b[0] for b in boxes]
    for sid, text in SECTION_TEXT.items():
        if sid not in ids:
            fail(f"browser_sections: no section {sid} (sections: {ids})")
    p = Page()
    p.feed(dom)
    sections = re.split(r'<section id="', dom)[1:]
    for chunk in sections:
        sid = chunk.split('"', 1)[0]
        want = SECTION_TEXT.get(sid)
        if want and want not in chunk:
            fail(f"browser_sections: section {sid}: {want!r} not in the loaded DOM")
    os.makedirs(os.path.join(d, "sections"), exist_ok=True)
    for sid, _, height in boxes:
        if height < 40:
            fail(f"browser_sections: section {sid} is {height} px tall")
            continue
        one = os.path.join(d, f"only-{sid}.html")
        with open(one, "w", encoding="utf-8") as f:
            f.write(html.replace("</style>", "header,footer,section:not(#%s){display:none}\n</style>" % sid, 1))
        shot = os.path.join(d, "sections", sid + ".png")
        h = min(height + 60, 2400)
        r = run([chromium, *flags, f"--window-size=900,{h}", "--screenshot=" + shot, "file://" + one])
        if r.returncode != 0 or not os.path.exists(shot):
            fail(f"browser_sections: screenshot of {sid}: exit {r.returncode}")
            continue
        w, hh, bpp, rows = png_pixels(shot)
        bg = bytes(rows[0][0:3])
        drawn = sum(1 for row in rows for x in range(0, w * bpp, bpp * 2) if row[x:x + 3] != bg)
        if drawn < 400:
            fail(f"browser_sections: section {sid}: only {drawn} drawn pixels in its screenshot")
        print(f"section {sid}: {w}x{hh}, {drawn} drawn pixels (every other column), {shot}")
    # the timeline opens on the steady state; the whole run is in a closed <details>
    if 'data-view="steady"' not in dom or not re.search(r'<details data-view="whole"(?![^>]*open)', dom):
        fail("browser_sections: the timeline does not open on the steady state with the whole run folded")
    # honest charts: the 0 ns kernels in a bar of their own; cuInit's 5 calls as 5 points
    if 'data-zero="1"' not in dom:
        fail("browser_sections: no 0 ns bar in the kernel histogram")
    m = re.search(r"<title>cuInit: (\d+) calls.*?</g>", dom, re.S)
    if not m or m.group(0).count('data-dot="1"') != int(m.group(1)) or int(m.group(1)) >= 10:
        fail(f"browser_sections: cuInit is not drawn as one point per call")


def main():
    global A
    ap = argparse.ArgumentParser()
    ap.add_argument("--report", required=True)
    ap.add_argument("--make", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--shim")
    ap.add_argument("--fakedir")
    ap.add_argument("--client")
    ap.add_argument("--pair")
    ap.add_argument("--sample")
    ap.add_argument("case")
    A = ap.parse_args()
    os.makedirs(A.workdir, exist_ok=True)
    {"synthetic": case_synthetic, "hostile": case_hostile, "two_traces": case_two_traces, "two_runs": case_two_runs, "options": case_options,
     "fake_client": case_fake_client, "browser": case_browser, "browser_sections": case_browser_sections}[A.case]()
    for f in FAILS:
        print("FAIL:", f)
    if FAILS:
        sys.exit(1)
    print("ok")


if __name__ == "__main__":
    main()
