#!/usr/bin/env bash
# File-I/O hook overhead (not a test: measured, not asserted).
#   tests/io/run_io_bench.sh BUILD_DIR [FILES] [RUNS]
# 1. End to end, FILES page-cached 4 KiB files read with open/read/read(EOF)/close:
#    a. C, within one process (bench_io files-ab): batches read through libc (hooked)
#       and by raw system calls (unseen) in turn; the shim's cost is the libc/raw ratio
#       with the shim over the ratio without it, medians of RUNS processes each. A
#       shared host's speed drifts by 10-40% between runs, which this cancels.
#       The same for Python (py_ab.py: open(p, 'rb').read() against raw system calls
#       through ctypes), for 4 KiB read() calls on one open file (bench_io loop-ab),
#       and for all with an idle second thread, as most real programs have: then the
#       process is multi-threaded without the shim too. A third column runs the shim
#       with WSLSHIM_IO=0: what being preloaded costs with nothing recorded (its writer
#       thread makes a single-threaded program multi-threaded).
#    b. C and Python, whole runs: RUNS interleaved runs without and with the shim;
#       the median of each and the % slowdown (these move with the host's speed).
#    c. A decoding workload, where Python and PIL (if installed) decode FILES small
#       JPEGs (pil_ab.py): pairs of runs without and with the shim at the same time
#       on disjoint CPUs, the median of their ratios.
# 2. callgrind instructions per read() of 4 KiB from one fd (writer thread
#    included), without and with the shim, as tests/bench/run_bench.sh does; and
#    per image of the decoding workload.
set -euo pipefail
build=$(cd "${1:?usage: run_io_bench.sh BUILD_DIR [FILES] [RUNS]}" && pwd)
files=${2:-20000}
runs=${3:-11}
bench=$build/tests/io/bench_io
shim=$build/lib/libwslshim.so
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export WSLSHIM_OUTPUT=$tmp/traces/bench-%p.trace.zst
mkdir -p "$tmp/traces"
"$bench" create "$tmp/data" "$files"
"$bench" files "$tmp/data" "$files" >/dev/null   # page cache warm

ratio() { "$@" | sed -n 's/.*"ratio": \([0-9.]*\).*/\1/p'; }
ns() { "$@" | sed -n 's/.*"ns": \([0-9.]*\).*/\1/p'; }
# collect GET CMD...: RUNS interleaved runs of CMD without and with the shim (and,
# in the arrays off, with the shim and WSLSHIM_IO=0 when OFF=1); GET (ratio or ns)
# takes the figure from each; into the arrays without, with and off.
collect() {
  local get=$1
  shift
  without=() with=() off=()
  for _ in $(seq "$runs"); do
    without+=("$("$get" "$@")")
    with+=("$("$get" env LD_PRELOAD="$shim" "$@")")
    [ "${OFF:-0}" = 1 ] && off+=("$("$get" env LD_PRELOAD="$shim" WSLSHIM_IO=0 "$@")")
    rm -f "$tmp"/traces/*
  done
}
# summarize MODE: the medians of the without/with arrays, one line.
summarize() {
  python3 - "$files" "${without[*]}" "${with[*]}" "$1" "${off[*]:-}" <<'PY'
import statistics, sys
n, mode = int(sys.argv[1]), sys.argv[4]
a = [float(x) for x in sys.argv[2].split()]
b = [float(x) for x in sys.argv[3].split()]
c = [float(x) for x in sys.argv[5].split()]
ma, mb = statistics.median(a), statistics.median(b)
ratio = {"files-ab": "C, a file's open to close", "files-ab-mt": "C with a second thread, a file's open to close",
         "loop-ab": "C, read() of 4 KiB", "loop-ab-mt": "C with a second thread, read() of 4 KiB",
         "py-ab": "Python, a file's open to close", "py-ab-mt": "Python with a second thread, a file's open to close"}
if mode in ratio:
    floor = f"; recording off (WSLSHIM_IO=0) {100 * (statistics.median(c) / ma - 1):+.1f}%" if c else ""
    print(f"in-process A/B ({ratio[mode]}, hooked calls against raw system calls), "
          f"median ratio of {len(a)} processes: without shim {ma:.3f} (range {min(a):.3f}-{max(a):.3f}), "
          f"with shim {mb:.3f} (range {min(b):.3f}-{max(b):.3f}): shim cost {100 * (mb / ma - 1):+.1f}%{floor}")
else:
    what = {"files": "C, open/read/read(EOF)/close", "files-mt": "C with a second thread, open/read/read(EOF)/close",
            "python": "Python, with open(p, 'rb') as f: f.read()"}[mode]
    print(f"end-to-end {n} x 4 KiB files ({what}), median of {len(a)} interleaved runs: "
          f"without shim {ma / n:.0f} ns/file, with shim {mb / n:.0f} ns/file, "
          f"slowdown {100 * (mb / ma - 1):.1f}% (+{(mb - ma) / n:.0f} ns/file)")
PY
}
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3} # the decoding workload needs PIL and numpy in this one
. "$here/ab_modes.sh"
for mode in $AB_MODES; do
  ab_command "$mode" "$bench" "$tmp/data" "$files"
  OFF=1 collect ratio "${cmd[@]}"
  summarize "$mode"
done

# A C program (files: single-threaded; files-mt: with an idle second thread, as Python
# with PyTorch or any thread pool has) and a Python loop (open, read, close per file).
pyread='import os, sys, time
d = sys.argv[1]; names = sorted(n for n in os.listdir(d) if n.startswith("f"))
t0 = time.perf_counter_ns()
for n in names:
    with open(os.path.join(d, n), "rb") as f:
        f.read()
print("{\"ns\": %d}" % (time.perf_counter_ns() - t0))'
for mode in files files-mt python; do
  if [ "$mode" = python ]; then
    collect ns python3 -c "$pyread" "$tmp/data"
  else
    collect ns "$bench" "$mode" "$tmp/data" "$files"
  fi
  summarize "$mode"
done

pil=0
if "$py" "$here/pil_ab.py" make "$tmp/img" "$files" 2>/dev/null; then
  pil=1
  "$py" "$here/pil_ab.py" run "$tmp/img" "$files" >/dev/null # page cache warm
  "$py" "$here/pil_ab.py" ab "$tmp/img" "$files" "$runs" "$shim"
else
  echo "(PIL or numpy not installed for $py: no decoding workload)"
fi

command -v valgrind >/dev/null || { echo "(valgrind not installed: no instruction counts)"; exit 0; }
n=200000
# "all threads" sums every thread of every process; "calling thread" is
# thread 1 only: the hook's own path, without the writer thread's encoding.
ir() { rm -f "$tmp"/cg.*; valgrind --tool=callgrind --trace-children=yes --separate-threads=yes \
         --callgrind-out-file="$tmp/cg.%p.out" "$@" >/dev/null 2>"$tmp/cg.err"
       all=$(cat "$tmp"/cg.*.out-* | sed -n 's/^summary: \([0-9]*\)/\1/p' | awk '{s += $1} END {print s}')
       own=$(cat "$tmp"/cg.*.out-01 | sed -n 's/^summary: \([0-9]*\)/\1/p' | awk '{s += $1} END {print s}')
       echo "$all $own"; }
for mode in loop loop-mt; do
  read -r a0 a0t <<<"$(ir env "$bench" "$mode" "$tmp/data" 0)"
  read -r a1 a1t <<<"$(ir env "$bench" "$mode" "$tmp/data" $n)"
  read -r b0 b0t <<<"$(ir env LD_PRELOAD="$shim" "$bench" "$mode" "$tmp/data" 0)"
  read -r b1 b1t <<<"$(ir env LD_PRELOAD="$shim" "$bench" "$mode" "$tmp/data" $n)"
  python3 - "$a0" "$a1" "$b0" "$b1" "$a0t" "$a1t" "$b0t" "$b1t" "$n" "$mode" <<'PY'
import sys
a0, a1, b0, b1, a0t, a1t, b0t, b1t, n = map(int, sys.argv[1:10])
mode = sys.argv[10]
what = ("single-threaded program" if mode == "loop" else
        "program with a second thread (glibc's cancellation bookkeeping in the baseline too)")
base, shim = (a1 - a0) / n, (b1 - b0) / n
base_t, shim_t = (a1t - a0t) / n, (b1t - b0t) / n
print(f"instructions per read() of 4 KiB, {what} (callgrind, all threads): without shim {base:.1f}, "
      f"with shim {shim:.1f}, added {shim - base:.1f}")
print(f"  of which on the calling thread: without shim {base_t:.1f}, with shim {shim_t:.1f}, "
      f"added {shim_t - base_t:.1f} (the rest is the writer thread)")
PY
done
[ "$pil" = 1 ] || exit 0
# The decoding workload: instructions per image (Python's hash seed fixed, so that its
# own count does not move between runs), from 500 and 1000 images.
export PYTHONHASHSEED=0
read -r a0 a0t <<<"$(ir "$py" "$here/pil_ab.py" run "$tmp/img" 500)"
read -r a1 a1t <<<"$(ir "$py" "$here/pil_ab.py" run "$tmp/img" 1000)"
read -r b0 b0t <<<"$(ir env LD_PRELOAD="$shim" "$py" "$here/pil_ab.py" run "$tmp/img" 500)"
read -r b1 b1t <<<"$(ir env LD_PRELOAD="$shim" "$py" "$here/pil_ab.py" run "$tmp/img" 1000)"
python3 - "$a0" "$a1" "$b0" "$b1" "$a0t" "$a1t" "$b0t" "$b1t" <<'PY'
import sys
a0, a1, b0, b1, a0t, a1t, b0t, b1t = map(int, sys.argv[1:9])
base, shim, base_t, shim_t = (a1 - a0) / 500, (b1 - b0) / 500, (a1t - a0t) / 500, (b1t - b0t) / 500
print(f"instructions per image of the decoding workload (callgrind): without shim {base:.0f}, with shim "
      f"{shim:.0f} ({100 * (shim / base - 1):+.2f}%, all threads); on the program's thread {shim_t:.0f} "
      f"({100 * (shim_t / base_t - 1):+.2f}%), the writer thread {shim - shim_t:.0f}")
PY
