#!/usr/bin/env bash
# The floor of a file's cost to any preloaded recorder (measured, not asserted):
#   tests/io/ab_floor.sh BUILD_DIR [RUNS] [FILES]
# Builds tests/io/floor_interposer.c at its five levels (pass, count, path, record,
# recorder; record and recorder also with rings of 1 MiB, record with an idle thread, the recorder
# with 1 MiB rings also making system calls itself as the shim does in single-threaded programs) and runs each in-process A/B program of
# AB_MODES (ab_modes.sh; default files-ab and py-ab) RUNS times without anything
# preloaded, under each level, under BUILD_DIR's shim and under the shim with
# WSLSHIM_IO=0, in turn. A configuration's cost is the median of its runs' ratios
# over the median without anything preloaded, minus 1. On 8 CPUs or more the runs
# are pinned to CPUs 4-7 (AB_PIN: another CPU list for taskset, or "none"). LEVELS="record recorder ..." runs only those levels (default: all).
# SHIMS="NAME=LIB ..." adds other builds of the shim (another
# ring size, say) as configurations of their own. At the end each level runs once more with
# FLOOR_DEBUG=1 and says what it recorded and dropped: a level that dropped measured less
# than it claims.
set -euo pipefail
usage() { echo "usage: ab_floor.sh BUILD_DIR [RUNS] [FILES]" >&2; exit 2; }
[ $# -ge 1 ] || usage
shim=$1/lib/libwslshim.so bench=$1/tests/io/bench_io
runs=${2:-11} files=${3:-20000}
for f in "$shim" "$bench"; do
  [ -f "$f" ] || { echo "ab_floor.sh: $f not found: is $1 a build tree?" >&2; exit 2; }
done
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "ab_floor.sh: RUNS must be a positive number, not '$runs'" >&2; exit 2; }
[[ $files =~ ^[0-9]+$ ]] && [ "$files" -ge 128 ] ||
  { echo "ab_floor.sh: FILES must be a number of at least 128, not '$files'" >&2; exit 2; }
shim=$(realpath "$shim") bench=$(realpath "$bench")
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/t"
export WSLSHIM_OUTPUT=$tmp/t/%p.trace.zst
cc=${CC:-cc}
names=(pass count path record record-1M record-thread recorder recorder-1M recorder-1M-raw)
flags=("-DFLOOR_LEVEL=0" "-DFLOOR_LEVEL=1" "-DFLOOR_LEVEL=2" "-DFLOOR_LEVEL=3" "-DFLOOR_LEVEL=3 -DFLOOR_RING_SHIFT=20"
  "-DFLOOR_LEVEL=3 -DFLOOR_THREAD=1" "-DFLOOR_LEVEL=4" "-DFLOOR_LEVEL=4 -DFLOOR_RING_SHIFT=20"
  "-DFLOOR_LEVEL=4 -DFLOOR_RING_SHIFT=20 -DFLOOR_RAW=1")
if [ -n "${LEVELS:-}" ]; then
  keep_names=() keep_flags=()
  for i in "${!names[@]}"; do
    case " $LEVELS " in *" ${names[$i]} "*) keep_names+=("${names[$i]}"); keep_flags+=("${flags[$i]}");; esac
  done
  [ ${#keep_names[@]} -gt 0 ] || { echo "ab_floor.sh: LEVELS: none of '$LEVELS' is a level (${names[*]})" >&2; exit 2; }
  names=("${keep_names[@]}") flags=("${keep_flags[@]}")
fi
for i in "${!names[@]}"; do
  # shellcheck disable=SC2086
  "$cc" -O2 -fPIC -shared -fvisibility=hidden -falign-functions=64 ${flags[$i]} \
    -o "$tmp/floor-${names[$i]}.so" "$here/floor_interposer.c" -ldl -lpthread
done
"$bench" create "$tmp/data" "$files" >/dev/null
"$bench" files "$tmp/data" "$files" >/dev/null # page cache warm
pin=()
if [ -n "${AB_PIN:-}" ]; then # a CPU list for taskset, or "none"
  [ "$AB_PIN" = none ] || pin=(taskset -c "$AB_PIN")
elif [ "$(nproc)" -ge 8 ] && command -v taskset >/dev/null; then
  pin=(taskset -c 4-7)
fi
ratio() { "$@" | sed -n 's/.*"ratio": \([0-9.]*\).*/\1/p'; }
AB_MODES=${AB_MODES:-files-ab py-ab}
. "$here/ab_modes.sh"
declare -A extra=()
for kv in ${SHIMS:-}; do
  [ -f "${kv#*=}" ] || { echo "ab_floor.sh: SHIMS: ${kv#*=} not found" >&2; exit 2; }
  extra[${kv%%=*}]=$(realpath "${kv#*=}")
done
configs=(plain "${names[@]}" shim shim-off "${!extra[@]}")
for mode in $AB_MODES; do
  ab_command "$mode" "$bench" "$tmp/data" "$files"
  declare -A got=()
  for _ in $(seq "$runs"); do
    for c in "${configs[@]}"; do
      case $c in
        plain) r=$(ratio "${pin[@]}" "${cmd[@]}");;
        shim) r=$(ratio env LD_PRELOAD="$shim" "${pin[@]}" "${cmd[@]}");;
        shim-off) r=$(ratio env LD_PRELOAD="$shim" WSLSHIM_IO=0 "${pin[@]}" "${cmd[@]}");;
        *) if [ -n "${extra[$c]:-}" ]; then
             r=$(ratio env LD_PRELOAD="${extra[$c]}" "${pin[@]}" "${cmd[@]}")
           else
             r=$(ratio env LD_PRELOAD="$tmp/floor-$c.so" "${pin[@]}" "${cmd[@]}")
           fi;;
      esac
      got[$c]="${got[$c]:-} $r"
    done
    rm -f "$tmp"/t/*
  done
  args=()
  for c in "${configs[@]}"; do args+=("$c=${got[$c]}"); done
  python3 - "$mode" "${args[@]}" <<'PY'
import statistics, sys
mode, rest = sys.argv[1], sys.argv[2:]
runs = {k: [float(x) for x in v.split()] for k, v in (a.split("=", 1) for a in rest)}
base = statistics.median(runs["plain"])
line = ", ".join(f"{k} {100 * (statistics.median(v) / base - 1):+.1f}% ({min(v):.3f}-{max(v):.3f})"
                 for k, v in runs.items() if k != "plain")
print(f"{mode}: {len(runs['plain'])} runs each, plain {base:.3f}; {line}")
PY
  unset got
done
for mode in $AB_MODES; do
  ab_command "$mode" "$bench" "$tmp/data" "$files"
  for c in "${names[@]}"; do
    echo "$mode $c: $(env FLOOR_DEBUG=1 LD_PRELOAD="$tmp/floor-$c.so" "${cmd[@]}" 2>&1 >/dev/null | grep '^floor:' | tail -1)"
  done
done
