#!/usr/bin/env bash
# Instructions per 4 KiB page-cached file (callgrind; measured, not asserted):
#   tests/io/cg_files.sh BUILD_DIR [FILES] [CONFIGS]
# For C (`bench_io files`: open, read, read to EOF, close) and Python
# (`open(p, 'rb').read()`: open64, fstat64, lseek64 twice, fstat64, read twice,
# close), the difference of instruction counts between FILES and FILES/4 files
# over the files between: on the program's thread and in all threads, for each
# configuration of CONFIGS (default: plain record recorder shim; also
# recorder-1M-raw, shim-off, any floor_interposer level of ab_floor.sh, or
# NAME=LIB for another build of the shim). Python's hash seed is fixed.
# PROGS="C Python C-mt Python-mt" adds each with an idle thread of its own
# (bench_io files-mt; Python with a thread that waits).
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: cg_files.sh BUILD_DIR [FILES] [CONFIGS]" >&2; exit 2; }
build=$(cd "$1" && pwd)
files=${2:-2000}
configs=${3:-plain record recorder shim}
shim=$build/lib/libwslshim.so bench=$build/tests/io/bench_io
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/t"
export WSLSHIM_OUTPUT=$tmp/t/%p.trace.zst PYTHONHASHSEED=0
"$bench" create "$tmp/data" "$files" >/dev/null
"$bench" files "$tmp/data" "$files" >/dev/null
few=$((files / 4))
floor_flags() {
  case $1 in
    pass) echo "-DFLOOR_LEVEL=0";; count) echo "-DFLOOR_LEVEL=1";; path) echo "-DFLOOR_LEVEL=2";;
    record) echo "-DFLOOR_LEVEL=3";; record-1M) echo "-DFLOOR_LEVEL=3 -DFLOOR_RING_SHIFT=20";;
    recorder) echo "-DFLOOR_LEVEL=4";; recorder-1M) echo "-DFLOOR_LEVEL=4 -DFLOOR_RING_SHIFT=20";;
    recorder-1M-raw) echo "-DFLOOR_LEVEL=4 -DFLOOR_RING_SHIFT=20 -DFLOOR_RAW=1";;
    *) return 1;;
  esac
}
py=$(python3 -c "import sys; print(sys.executable)")
pyprog='import os, sys
d, n = sys.argv[1], int(sys.argv[2])
if len(sys.argv) > 3:
    import threading
    threading.Thread(target=threading.Event().wait, daemon=True).start()
for x in sorted(x for x in os.listdir(d) if x.startswith("f"))[:n]:
    with open(os.path.join(d, x), "rb") as f:
        f.read()'
# ir CMD...: "all own" instruction counts of one run (under the environment in pre)
ir() {
  rm -f "$tmp"/cg.*
  env "${pre[@]}" valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.%p.out" "$@" >/dev/null 2>"$tmp/cg.err" ||
    { cat "$tmp/cg.err" >&2; return 1; }
  local all own
  all=$(cat "$tmp"/cg.*.out-* | sed -n 's/^summary: \([0-9]*\)/\1/p' | awk '{s += $1} END {print s}')
  own=$(cat "$tmp"/cg.*.out-01 | sed -n 's/^summary: \([0-9]*\)/\1/p' | awk '{s += $1} END {print s}')
  echo "$all $own"
}
printf '%-18s %-9s %12s %12s\n' config program "own/file" "all/file"
for c in $configs; do
  pre=()
  case $c in
    plain) ;;
    shim) pre=(LD_PRELOAD="$shim");;
    shim-off) pre=(LD_PRELOAD="$shim" WSLSHIM_IO=0);;
    *=*) pre=(LD_PRELOAD="$(realpath "${c#*=}")");;
    *) fl=$(floor_flags "$c") || { echo "cg_files.sh: no configuration '$c'" >&2; exit 2; }
       # shellcheck disable=SC2086
       "${CC:-cc}" -O2 -fPIC -shared -fvisibility=hidden $fl -o "$tmp/floor-$c.so" "$here/floor_interposer.c" -ldl -lpthread
       pre=(LD_PRELOAD="$tmp/floor-$c.so");;
  esac
  for prog in ${PROGS:-C Python}; do
    case $prog in
      C) run=("$bench" files "$tmp/data"); post=();;
      C-mt) run=("$bench" files-mt "$tmp/data"); post=();;
      Python) run=("$py" -c "$pyprog" "$tmp/data"); post=();;
      Python-mt) run=("$py" -c "$pyprog" "$tmp/data"); post=(thread);;
      *) echo "cg_files.sh: no program '$prog'" >&2; exit 2;;
    esac
    read -r a0 o0 <<<"$(ir "${run[@]}" "$few" "${post[@]}")"
    read -r a1 o1 <<<"$(ir "${run[@]}" "$files" "${post[@]}")"
    awk -v c="${c%%=*}" -v p=$prog -v a0="$a0" -v a1="$a1" -v o0="$o0" -v o1="$o1" -v n=$((files - few)) \
      'BEGIN { printf "%-18s %-9s %12.1f %12.1f\n", c, p, (o1 - o0) / n, (a1 - a0) / n }'
  done
done
