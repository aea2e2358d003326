#!/usr/bin/env bash
# How many times wslshim-report opens each trace file (strace), e.g.
#   tests/bench/trace_opens.sh build/analyzer/wslshim-report --json TRACES...
# prints "64 traces opened 1 times" (one line per count seen).
set -eu
log=$(mktemp)
trap 'rm -f "$log"' EXIT
strace -f -e trace=openat -o "$log" "$@" >/dev/null 2>&1 || true
grep -o '"[^"]*\.trace\.zst[^"]*"' "$log" | sort | uniq -c | awk '{print $1}' | sort -n | uniq -c |
  awk '{printf "%s traces opened %s times\n", $1, $2}'
