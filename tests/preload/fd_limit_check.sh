#!/usr/bin/env bash
# A program that opens files until EMFILE gets as many under the shim as without it, where
# the hard limit lies above the soft one (the trace's descriptor goes to the soft limit's
# number, out of the program's reach: shim/writer/trace_file.c, fd_dup_high); the trace stays whole:
#   fd_limit_check.sh SHIM CLIENT REPORT WORKDIR
set -euo pipefail
shim=$1 client=$2 report=$3 work=$4
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
hard=$(ulimit -Hn)
ran=0
for soft in 16 64 1024; do
  if [ "$hard" != unlimited ] && [ "$soft" -ge "$hard" ]; then
    echo "soft limit $soft: not under the hard limit ($hard), left out"
    continue
  fi
  native=$(ulimit -Sn "$soft" && "$client") || fail "soft $soft without the shim: exit $?"
  [[ $native == "opened "*", then EMFILE" ]] || fail "soft $soft without the shim: '$native'"
  out=$(ulimit -Sn "$soft" && WSLSHIM_OUTPUT="$work/t-$soft-%p.trace.zst" LD_PRELOAD=$shim "$client") ||
    fail "soft $soft with the shim: exit $?"
  [ "$out" = "$native" ] || fail "soft limit $soft: '$native' without the shim, '$out' with it"
  "$report" --json "$work"/t-$soft-*.trace.zst >"$work/r.json" 2>"$work/report.err" ||
    fail "soft $soft: report: $(cat "$work/report.err")"
  python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["processes"]; sys.exit(not (len(p) == 1 and not p[0].get("truncated")))' \
    "$work/r.json" || fail "soft $soft: the trace is not whole: $(head -c 400 "$work/r.json")"
  echo "ok: soft limit $soft: '$out' with and without the shim; trace whole"
  ran=1
done
[ $ran = 1 ] || { echo "skipped: the hard limit ($hard) leaves no soft limit to try"; exit 77; }
