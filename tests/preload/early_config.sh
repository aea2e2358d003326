#!/bin/sh
# The shim's settings hold from the very first call, even when a library the
# program links (ls: libselinux) does file I/O in its constructor, before the
# shim's own constructor ran.
#   early_config.sh SHIM REPORT WORKDIR
set -eu
shim=$1 report=$2 work=$3
rm -rf "$work" && mkdir -p "$work/out" "$work/cwd"
cd "$work/cwd"
WSLSHIM_OUTPUT="$work/out/t-%p.trace.zst" LD_PRELOAD="$shim" ls / >/dev/null
n_out=$(ls "$work/out" | wc -l) n_cwd=$(ls "$work/cwd" | wc -l)
[ "$n_out" -ge 1 ] && [ "$n_cwd" -eq 0 ] || { echo "FAIL: traces in out: $n_out, in cwd: $n_cwd"; exit 1; }
rm -f "$work/out"/*
WSLSHIM_IO=0 WSLSHIM_OUTPUT="$work/out/t-%p.trace.zst" LD_PRELOAD="$shim" ls / >/dev/null
io=$("$report" --json "$work/out" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(v.get("calls", 0) for v in d.get("io_calls", {}).values()))')
[ "$io" -eq 0 ] || { echo "FAIL: WSLSHIM_IO=0, yet $io file calls recorded"; exit 1; }
echo "ok: settings in force from the first call"
