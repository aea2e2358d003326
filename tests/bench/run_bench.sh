#!/usr/bin/env bash
# Hook overhead: ns per hooked call (best of 5 runs, with and without the
# shim) and callgrind instructions per call (writer thread included).
#   tests/bench/run_bench.sh BUILD_DIR [CALLS]
set -euo pipefail
build=$(cd "${1:?usage: run_bench.sh BUILD_DIR [CALLS]}" && pwd)
calls=${2:-10000000}
bench=$build/tests/bench/bench_hook
shim=$build/lib/libwslshim.so
export LD_LIBRARY_PATH=$build/tests/fake_cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export WSLSHIM_OUTPUT=$tmp/bench-%p.trace.zst

best() { # best ns/call of 5 runs
  local b=
  for _ in 1 2 3 4 5; do
    v=$("$@" | sed -n 's/.*"ns_per_call": \([0-9.]*\).*/\1/p')
    b=$(python3 -c "print(min(float('$v'), float('${b:-1e18}')))")
  done
  echo "$b"
}
without=$(best "$bench" "$calls")
with=$(best env LD_PRELOAD="$shim" "$bench" "$calls")
echo "ns per call: without shim $without, with shim $with, added $(python3 -c "print(round($with-$without,2))")"

command -v valgrind >/dev/null || { echo "(valgrind not installed: no instruction counts)"; exit 0; }
n=200000
ir() { valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$tmp/cg.%p.out" "$@" \
         >/dev/null 2>"$tmp/cg.err"; \
       sed -n 's/.*Collected : \([0-9]*\).*/\1/p' "$tmp/cg.err" | awk '{s += $1} END {print s}'; }
a0=$(ir env "$bench" 0); a1=$(ir env "$bench" $n)
b0=$(ir env LD_PRELOAD="$shim" "$bench" 0); b1=$(ir env LD_PRELOAD="$shim" "$bench" $n)
python3 - "$a0" "$a1" "$b0" "$b1" "$n" <<'PY'
import sys
a0, a1, b0, b1, n = map(int, sys.argv[1:])
base = (a1 - a0) / n
shim = (b1 - b0) / n
print(f"instructions per call (callgrind, all threads): without shim {base:.1f}, with shim {shim:.1f}, added {shim - base:.1f}")
PY
ls "$tmp" | grep -c trace.zst | sed 's/^/traces written: /'
