#!/usr/bin/env bash
# Instructions per hooked launch, per thread (callgrind --separate-threads=yes):
# bench_hook N launches less 0, with and without the shim; the program's thread
# (thread 1) apart from the rest (the writer).
#   [MODE=mix] tests/bench/cg_threads.sh BUILD_DIR [N] [GPU_TIMING]
# GPU_TIMING: WSLSHIM_GPU_TIMING for the shim's runs (default: the default; off).
set -euo pipefail
build=$(cd "${1:?usage: cg_threads.sh BUILD_DIR [N] [GPU_TIMING]}" && pwd)
n=${2:-200000}
bench=$build/tests/bench/bench_hook
shim=$build/lib/libwslshim.so
export LD_LIBRARY_PATH=$build/tests/fake_cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export WSLSHIM_OUTPUT=$tmp/bench-%p.trace.zst
[ -n "${3:-}" ] && export WSLSHIM_GPU_TIMING=$3
mode=${MODE:-} # MODE=mix: bench_hook's launch mix
# valgrind runs one thread at a time: the bench pauses every 2048 launches so the
# writer keeps up (no event waits for room or drops; the pauses cost the same with and without)
export BENCH_PAUSE_EVERY=${BENCH_PAUSE_EVERY:-2048}
# prints "program_thread other_threads"
ir() {
  local d=$tmp/cg.$RANDOM; mkdir -p "$d"
  local pre=$1; shift
  env ${pre:+LD_PRELOAD=$pre} valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$d/cg.out" \
    "$@" >/dev/null 2>"$d/err"
  local p=0 o=0
  for f in "$d"/cg.out-*; do
    v=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p; s/^summary: *\([0-9]*\).*/\1/p' "$f" | head -1)
    case $f in *-01) p=$((p + v));; *) o=$((o + v));; esac
  done
  echo "$p $o"
}
read a0p a0o < <(ir "" "$bench" 0 $mode)
read a1p a1o < <(ir "" "$bench" "$n" $mode)
read b0p b0o < <(ir "$shim" "$bench" 0 $mode)
read b1p b1o < <(ir "$shim" "$bench" "$n" $mode)
python3 - "$a0p" "$a1p" "$b0p" "$b0o" "$b1p" "$b1o" "$n" <<'PY'
import sys
a0p, a1p, b0p, b0o, b1p, b1o, n = map(int, sys.argv[1:])
base = (a1p - a0p) / n
prog = (b1p - b0p) / n
other = (b1o - b0o) / n
print(f"per launch: program thread without shim {base:.1f}, with {prog:.1f}, added {prog - base:.1f}; "
      f"other threads (writer) {other:.1f}; whole process added {prog - base + other:.1f}")
PY
"$build/analyzer/wslshim-report" --json "$tmp" 2>/dev/null | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('events dropped in these runs:', sum(p.get('dropped', 0) for p in d['processes']))" || true
