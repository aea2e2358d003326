#!/usr/bin/env bash
# ns per hooked launch, wall and the process's CPU, interleaved rounds: without
# the shim, OLD build's shim, NEW build's shim (bench_hook against NEW's fake
# driver); medians, and the added ns of each build.
#   tests/bench/ab_ns.sh OLD_BUILD NEW_BUILD [ROUNDS] [CALLS]
set -euo pipefail
old=$(cd "$1" && pwd); new=$(cd "$2" && pwd); rounds=${3:-9}; calls=${4:-3000000}
export LD_LIBRARY_PATH=$new/tests/fake_cuda/lib
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export WSLSHIM_OUTPUT=$tmp/%p.trace.zst
one() { # wall ns/call, then user+sys ns/call of the whole process
  /usr/bin/time -f "RU %U %S" env ${1:+LD_PRELOAD=$1} "$new/tests/bench/bench_hook" "$calls" 2>"$tmp/ru" |
    sed -n 's/.*"ns_per_call": \([0-9.]*\).*/\1/p'
  awk '/^RU/ {print ($2 + $3) * 1e9 / '"$calls"'}' "$tmp/ru"
}
for i in $(seq "$rounds"); do
  for v in plain old new; do
    case $v in plain) l=;; old) l=$old/lib/libwslshim.so;; new) l=$new/lib/libwslshim.so;; esac
    read -r w < <(one "$l" | head -1); c=$(awk '/^RU/ {print ($2 + $3) * 1e9 / '"$calls"'}' "$tmp/ru")
    echo "$v $w $c"; rm -f "$tmp"/*.zst
  done
done | python3 -c "
import sys, statistics as st
d = {}
for line in sys.stdin:
    v, w, c = line.split(); d.setdefault(v, []).append((float(w), float(c)))
med = {v: (st.median(x[0] for x in d[v]), st.median(x[1] for x in d[v])) for v in d}
for v in ('plain', 'old', 'new'):
    print(f'{v:5}: wall {med[v][0]:.1f} ns, process CPU {med[v][1]:.1f} ns per launch')
for v in ('old', 'new'):
    print(f'{v} added: wall {med[v][0] - med[\"plain\"][0]:+.1f} ns, process CPU {med[v][1] - med[\"plain\"][1]:+.1f} ns')"
