#!/usr/bin/env bash
# Compressed trace bytes per event of bench_hook's launch mix (64 kernels, the
# program's own work between launches varying): the trace file's size over
# the launches made, median of RUNS runs.
#   tests/bench/trace_bytes.sh BUILD_DIR [LAUNCHES] [RUNS]
set -euo pipefail
build=$(cd "${1:?usage: trace_bytes.sh BUILD_DIR [LAUNCHES] [RUNS]}" && pwd)
n=${2:-1000000}
runs=${3:-3}
export LD_LIBRARY_PATH=$build/tests/fake_cuda/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do
  WSLSHIM_OUTPUT=$tmp/$i.trace.zst LD_PRELOAD=$build/lib/libwslshim.so "$build/tests/bench/bench_hook" "$n" ${MODE:-mix} >/dev/null
  stat -c %s "$tmp/$i.trace.zst"
done | sort -n | python3 -c "
import sys
v = [int(x) for x in sys.stdin]
m = v[len(v) // 2]
print(f'bytes per event (median of {len(v)}): {m / $n:.3f} ({m} bytes, {$n} launches; runs {[round(x / $n, 3) for x in v]})')"
