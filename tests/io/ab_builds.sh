#!/usr/bin/env bash
# Two builds of the shim against the plain program, by in-process A/B (measured, not asserted):
#   tests/io/ab_builds.sh OLD_BUILD NEW_BUILD [RUNS] [FILES]
# For each mode (bench_io files-ab, files-ab-mt, loop-ab, loop-ab-mt; py_ab.py with and without
# an idle thread) RUNS rounds, each running the program without the shim, with OLD's and with
# NEW's, in turn; each run prints the ratio of hooked to raw-syscall batches within its process
# (the median over pairs of rounds: bench_io.c's pair_median; run_io_bench.sh says why), and a build's cost is the median of its runs' ratios over
# the median without the shim, minus 1. On 8 CPUs or more the runs are pinned to CPUs 4-7.
set -euo pipefail
usage() { echo "usage: ab_builds.sh OLD_BUILD NEW_BUILD [RUNS] [FILES]" >&2; exit 2; }
[ $# -ge 2 ] || usage
old=$1/lib/libwslshim.so new=$2/lib/libwslshim.so bench=$2/tests/io/bench_io
runs=${3:-11} files=${4:-20000}
for f in "$old" "$new" "$bench"; do
  [ -f "$f" ] || { echo "ab_builds.sh: $f not found: are $1 and $2 build trees?" >&2; exit 2; }
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "ab_builds.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
[[ $files =~ ^[0-9]+$ ]] && [ "$files" -ge 128 ] ||
  { echo "ab_builds.sh: FILES must be a number of at least 128, not '$files'" >&2; exit 2; }
old=$(realpath "$old") new=$(realpath "$new") bench=$(realpath "$bench")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/t"
export WSLSHIM_OUTPUT=$tmp/t/%p.trace.zst
"$bench" create "$tmp/data" "$files" >/dev/null
"$bench" files "$tmp/data" "$files" >/dev/null # page cache warm
pin=()
[ "$(nproc)" -ge 8 ] && command -v taskset >/dev/null && pin=(taskset -c 4-7)
ratio() { "$@" | sed -n 's/.*"ratio": \([0-9.]*\).*/\1/p'; }
. "$here/ab_modes.sh"
for mode in $AB_MODES; do
  ab_command "$mode" "$bench" "$tmp/data" "$files"
  plain=() a=() b=()
  for _ in $(seq "$runs"); do
    plain+=("$(ratio "${pin[@]}" "${cmd[@]}")")
    a+=("$(ratio env LD_PRELOAD="$old" "${pin[@]}" "${cmd[@]}")")
    b+=("$(ratio env LD_PRELOAD="$new" "${pin[@]}" "${cmd[@]}")")
    rm -f "$tmp"/t/*
  done
  python3 - "$mode" "${plain[*]}" "${a[*]}" "${b[*]}" <<'PY'
import statistics, sys
mode = sys.argv[1]
p, a, b = ([float(x) for x in s.split()] for s in sys.argv[2:5])
mp = statistics.median(p)
def cost(v):
    return f"{100 * (statistics.median(v) / mp - 1):+.1f}% (ratios {min(v):.3f}-{max(v):.3f})"
print(f"{mode}: {len(p)} runs each, without shim {mp:.3f}; old {cost(a)}; new {cost(b)}")
PY
done
