#!/bin/bash
# Two builds of the shim against the plain program, interleaved: 4 KiB page-cached files read
# by Python (open/read/close, best of 3 passes) and by C (bench_io files, files-mt).
# Usage: tests/io/ab_io_bench.sh OLD_BUILD NEW_BUILD [ROUNDS]  (on 8 CPUs or more, pinned to CPUs 4-7)
O=$(realpath $1/lib/libwslshim.so); N=$(realpath $2/lib/libwslshim.so); R=${3:-9}
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT; mkdir -p $d/t; $2/tests/io/bench_io create $d/data 20000 >/dev/null; $2/tests/io/bench_io files $d/data 20000 >/dev/null
export WSLSHIM_OUTPUT=$d/t/%p.trace.zst
pin=(); [ "$(nproc)" -ge 8 ] && pin=(taskset -c 4-7)
cat > $d/r.py <<'P'
import os, sys, time
d = sys.argv[1]; names = sorted(n for n in os.listdir(d) if n.startswith("f"))
best = None
for _ in range(3):
    t0 = time.perf_counter_ns()
    for n in names:
        with open(os.path.join(d, n), "rb") as f:
            f.read()
    t = time.perf_counter_ns() - t0
    best = t if best is None or t < best else best
print("{\"ns\": %d}" % best)
P
ns() { "$@" | sed -n 's/.*"ns": \([0-9.]*\).*/\1/p'; }
for prog in py c cmt; do
  declare -A V=()
  for i in $(seq $R); do
    for cfg in plain old new; do
      e=(env); case $cfg in old) e+=(LD_PRELOAD=$O);; new) e+=(LD_PRELOAD=$N);; esac
      case $prog in py) cmd=(python3 $d/r.py $d/data);; c) cmd=($2/tests/io/bench_io files $d/data 20000);; cmt) cmd=($2/tests/io/bench_io files-mt $d/data 20000);; esac
      V[$cfg]+=" $(ns "${pin[@]}" "${e[@]}" "${cmd[@]}")"; rm -f $d/t/*
    done
  done
  for cfg in plain old new; do echo "$prog $cfg ${V[$cfg]}"; done | python3 -c '
import sys,statistics as s
rows=[l.split() for l in sys.stdin]; base=s.median(map(float,rows[0][2:]))/20000
for r in rows:
    v=sorted(float(x)/20000 for x in r[2:]); m=s.median(v)
    print(f"{r[0]:3} {r[1]:6} median {m:7.0f} ns/file {100*(m/base-1):+6.1f}%  (min {v[0]:.0f}, max {v[-1]:.0f}, n={len(v)})")'
  unset V
done
