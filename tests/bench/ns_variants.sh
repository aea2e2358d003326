#!/usr/bin/env bash
# ns per hooked launch of several builds of the shim, interleaved rounds, medians:
#   [MODES="default off 1000"] tests/bench/ns_variants.sh ROUNDS CALLS NAME=BUILD_DIR...
# Each round runs bench_hook (the first build's, with its fake driver) without
# the shim and under each build, in each GPU timing mode (default: the shim's
# default; otherwise WSLSHIM_GPU_TIMING's value; "default off" unless MODES says); prints the
# medians of wall, program thread CPU and process CPU per launch, and each
# build's added ns against the run without the shim.
set -euo pipefail
rounds=$1; calls=$2; shift 2
first=${1#*=}
export LD_LIBRARY_PATH=$(cd "$first" && pwd)/tests/fake_cuda/lib
bench=$(cd "$first" && pwd)/tests/bench/bench_hook
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export WSLSHIM_OUTPUT=$tmp/%p.trace.zst
for i in $(seq "$rounds"); do
  for mode in ${MODES:-default off}; do
    for v in none "$@"; do
      name=${v%%=*}; dir=${v#*=}; l=
      [ "$v" = none ] || l=$(cd "$dir" && pwd)/lib/libwslshim.so
      t=; [ "$mode" = default ] || t=$mode
      out=$(/usr/bin/time -f "RU %U %S" -o "$tmp/ru" env ${l:+LD_PRELOAD=$l} ${t:+WSLSHIM_GPU_TIMING=$t} "$bench" "$calls")
      w=$(sed -n 's/.*"ns_per_call": \([0-9.]*\).*/\1/p' <<<"$out")
      tc=$(sed -n 's/.*"thread_cpu_ns_per_call": \([0-9.]*\).*/\1/p' <<<"$out")
      c=$(awk '/^RU/ {print ($2 + $3) * 1e9 / '"$calls"'}' "$tmp/ru")
      echo "$mode $name $w $tc $c"; rm -f "$tmp"/*.zst
    done
  done
done | python3 -c "
import sys, statistics as st
d = {}
for line in sys.stdin:
    m, v, *x = line.split(); d.setdefault((m, v), []).append([float(y) for y in x])
for m in dict.fromkeys(k[0] for k in d):
    base = [st.median(r[i] for r in d[(m, 'none')]) for i in range(3)]
    print(f'GPU timing {m}: without the shim wall {base[0]:.1f} ns, thread CPU {base[1]:.1f}, process CPU {base[2]:.1f} (n={len(d[(m, \"none\")])})')
    for (mm, v), rows in d.items():
        if mm != m or v == 'none': continue
        med = [st.median(r[i] for r in rows) for i in range(3)]
        print(f'  {v:10} added: wall {med[0]-base[0]:+.1f} ns, thread CPU {med[1]-base[1]:+.1f}, process CPU {med[2]-base[2]:+.1f}')
"
