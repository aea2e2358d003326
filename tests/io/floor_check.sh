#!/usr/bin/env bash
# io.floor_instrument: the recorder level of tests/io/floor_interposer.c (ab_floor.sh's
# instrument) names every file a program opened and records every close, dropping nothing,
# and the program reads what it reads without it.
#   floor_check.sh FLOOR_SO BENCH_IO WORKDIR
set -euo pipefail
[ $# -eq 3 ] || { echo "usage: floor_check.sh FLOOR_SO BENCH_IO WORKDIR" >&2; exit 2; }
so=$1 bench=$2 dir=$3
rm -rf "$dir" && mkdir -p "$dir"
n=512
"$bench" create "$dir/data" "$n" >/dev/null
plain=$("$bench" files "$dir/data" "$n" | sed -n 's/.*"files": \([0-9]*\).*/\1/p')
out=$(FLOOR_DEBUG=1 LD_PRELOAD=$so "$bench" files "$dir/data" "$n" 2>"$dir/err")
cat "$dir/err"
got=$(printf '%s\n' "$out" | sed -n 's/.*"files": \([0-9]*\).*/\1/p')
line=$(grep '^floor: level 4,' "$dir/err") || { echo "FAIL: no report from the instrument" >&2; exit 1; }
paths=$(printf '%s\n' "$line" | sed -n 's/.* \([0-9]*\) paths,.*/\1/p')
records=$(printf '%s\n' "$line" | sed -n 's/.*records \([0-9]*\) .*/\1/p')
dropped=$(printf '%s\n' "$line" | sed -n 's/.*dropped \([0-9]*\)$/\1/p')
fail=0
[ "$got" = "$plain" ] && [ "$got" = "$n" ] || { echo "FAIL: read $got files under the instrument, $plain without" >&2; fail=1; }
[ "$paths" = "$n" ] || { echo "FAIL: $paths paths recorded for $n files opened" >&2; fail=1; }
# one record per close, and about one timed call in 32 of the 4 calls per file
[ "$records" -ge "$n" ] && [ "$records" -le $((n + n * 4 / 32 + 1)) ] ||
  { echo "FAIL: $records records for $n files" >&2; fail=1; }
[ "$dropped" = 0 ] || { echo "FAIL: $dropped dropped" >&2; fail=1; }
[ $fail = 0 ] && echo "ok: $paths paths, $records records, nothing dropped"
exit $fail
