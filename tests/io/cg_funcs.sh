#!/usr/bin/env bash
# Instructions per 4 KiB page-cached file by function, on the program's thread (callgrind;
# measured, not asserted):
#   tests/io/cg_funcs.sh SHIM [FILES] [PROG]
# PROG: Python (`open(p, 'rb').read()`, default) or C (`bench_io files`). The difference of each
# function's own instructions between FILES and FILES/4 files (default 6000), over the files
# between, summed by function name over its source files; the rows marked S are the shim's
# (source under shim/), and "SHIM TOTAL" their sum (glibc's functions they call, as strnlen, are
# listed unmarked). BENCH_IO: the bench_io binary (default: the one beside SHIM's build).
# KEEP=DIR keeps the two callgrind files (a.out, b.out) for a look per instruction.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: cg_funcs.sh SHIM [FILES] [PROG]" >&2; exit 2; }
shim=$(realpath "$1") files=${2:-6000} prog=${3:-Python}
bench=${BENCH_IO:-$(dirname "$(dirname "$shim")")/tests/io/bench_io}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PYTHONHASHSEED=0 WSLSHIM_OUTPUT=$tmp/%p.trace.zst
"$bench" create "$tmp/data" "$files" >/dev/null
few=$((files / 4))
py=$(python3 -c "import sys; print(sys.executable)")
pyprog='import os, sys
d, n = sys.argv[1], int(sys.argv[2])
for x in sorted(x for x in os.listdir(d) if x.startswith("f"))[:n]:
    with open(os.path.join(d, x), "rb") as f:
        f.read()'
# funcs N OUT: "instructions<TAB>[S ]function" for the program's thread of a run over N files
funcs() {
  rm -f "$tmp"/cg.*
  case $prog in
    C) cmd=("$bench" files "$tmp/data" "$1");;
    Python) cmd=("$py" -c "$pyprog" "$tmp/data" "$1");;
    *) echo "cg_funcs.sh: no program '$prog'" >&2; exit 2;;
  esac
  LD_PRELOAD=$shim valgrind --tool=callgrind --separate-threads=yes --dump-instr=yes \
    --callgrind-out-file="$tmp/cg.%p" "${cmd[@]}" >/dev/null 2>"$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
  local f
  f=$(ls "$tmp"/cg.*-01)
  [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP" && cp "$f" "$KEEP/$(basename "$2").out"; }
  callgrind_annotate --threshold=100 --inclusive=no --auto=no "$f" |
    awk '/^ *[0-9,]+ .*:/ && !/=>/ { n = $1; gsub(",", "", n); s = ($0 ~ /(^| |\/)shim\//) ? "S " : "  ";
                                      sub(/ *\[.*\]$/, ""); sub(/.*:/, ""); print n "\t" s $0 }' |
    awk -F'\t' '{ a[$2] += $1 } END { for (k in a) print a[k] "\t" k }' >"$2"
}
funcs "$few" "$tmp/a"
funcs "$files" "$tmp/b"
awk -F'\t' -v n=$((files - few)) 'NR == FNR { a[$2] = $1; next }
  { d = ($1 - a[$2]) / n; if ($2 ~ /^S/) s += d; if (d > 0.5 || d < -0.5) printf "%9.1f  %s\n", d, $2 }
  END { printf "%9.1f  SHIM TOTAL\n", s }' "$tmp/a" "$tmp/b" | sort -rn
