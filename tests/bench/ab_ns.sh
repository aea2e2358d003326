#!/usr/bin/env bash
# ns per hooked launch, interleaved rounds: without the shim, OLD build's shim,
# NEW build's shim (bench_hook against NEW's fake driver); medians of wall time,
# of the program thread's CPU time (bench_hook's own thread: the shim's writer
# thread is not in it) and of the whole process's CPU time (user + sys), and
# the added ns of each build.
#   tests/bench/ab_ns.sh OLD_BUILD NEW_BUILD [ROUNDS] [CALLS]
set -euo pipefail
old=$(cd "$1" && pwd); new=$(cd "$2" && pwd); rounds=${3:-9}; calls=${4:-3000000}
export LD_LIBRARY_PATH=$new/tests/fake_cuda/lib
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
export WSLSHIM_OUTPUT=$tmp/%p.trace.zst
for i in $(seq "$rounds"); do
  for v in plain old new; do
    case $v in plain) l=;; old) l=$old/lib/libwslshim.so;; new) l=$new/lib/libwslshim.so;; esac
    out=$(/usr/bin/time -f "RU %U %S" -o "$tmp/ru" env ${l:+LD_PRELOAD=$l} "$new/tests/bench/bench_hook" "$calls")
    w=$(sed -n 's/.*"ns_per_call": \([0-9.]*\).*/\1/p' <<<"$out")
    tc=$(sed -n 's/.*"thread_cpu_ns_per_call": \([0-9.]*\).*/\1/p' <<<"$out")
    c=$(awk '/^RU/ {print ($2 + $3) * 1e9 / '"$calls"'}' "$tmp/ru")
    echo "$v $w $tc $c"; rm -f "$tmp"/*.zst
  done
done | python3 -c "
import sys, statistics as st
d = {}
for line in sys.stdin:
    v, *x = line.split(); d.setdefault(v, []).append([float(y) for y in x])
med = {v: [st.median(r[i] for r in d[v]) for i in range(3)] for v in d}
for v in ('plain', 'old', 'new'):
    w, t, c = med[v]
    print(f'{v:5}: wall {w:.1f} ns, program thread CPU {t:.1f} ns, process CPU {c:.1f} ns per launch')
for v in ('old', 'new'):
    dw, dt, dc = (med[v][i] - med['plain'][i] for i in range(3))
    print(f'{v} added: wall {dw:+.1f} ns, program thread CPU {dt:+.1f} ns, process CPU {dc:+.1f} ns')"
