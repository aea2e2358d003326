#!/usr/bin/env bash
# A program whose main thread ends with pthread_exit ends when its last thread does, under
# the shim as without it (glibc then calls exit(0): atexit handlers run), and its trace is
# complete (shim/writer/writer.c, program_threads_ended):
#   main_exit_check.sh SHIM CLIENT REPORT WORKDIR [SANITIZE]
# Skipped (77) in a TSan build: TSan's runtime keeps a thread of its own, which glibc counts.
set -euo pipefail
shim=$1 client=$2 report=$3 work=$4 sanitize=${5:-}
if [[ $sanitize == *thread* ]]; then
  echo "skipped: a ThreadSanitizer build's runtime has a thread that outlives the program's"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
for args in "" worker; do
  native=$(MAIN_EXIT_FILE="$work/native-${args:-alone}.txt" timeout -s KILL 20 "$client" main-exit $args) ||
    fail "main-exit $args without the shim: exit $?"
  start=$(date +%s%N)
  rc=0
  shimmed=$(MAIN_EXIT_FILE="$work/shim-${args:-alone}.txt" WSLSHIM_OUTPUT="$work/t-${args:-alone}-%p.trace.zst" \
            LD_PRELOAD=$shim timeout -s KILL 20 "$client" main-exit $args) || rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [ "$rc" = 0 ] || fail "main-exit $args with the shim: exit $rc after $ms ms (137: still running after 20 s)"
  [ "$shimmed" = "$native" ] || fail "main-exit $args: with the shim printed '$shimmed', without '$native'"
  echo "$native" | grep -q "atexit ran" || fail "main-exit $args: no atexit output: '$native'"
  # A file the program opened after recording began, flushed by exit(0) (the shim's writer
  # thread calls it when the program's last thread has gone: it must hold their descriptors).
  [ "$(cat "$work/native-${args:-alone}.txt")" = "flushed at exit" ] || fail "main-exit $args: native file not flushed"
  [ "$(cat "$work/shim-${args:-alone}.txt" 2>/dev/null)" = "flushed at exit" ] ||
    fail "main-exit $args: with the shim, the file written before pthread_exit holds '$(cat "$work/shim-${args:-alone}.txt" 2>/dev/null)'"
  out=$("$report" --json "$work"/t-"${args:-alone}"-*.trace.zst 2>"$work/report.err") || fail "report: $(cat "$work/report.err")"
  [ ! -s "$work/report.err" ] || fail "report warned: $(cat "$work/report.err")"
  want=$([ -n "$args" ] && echo 2 || echo 1)
  got=$(echo "$out" | python3 -c 'import json, sys; print(json.load(sys.stdin)["io"]["files_opened"])')
  [ "$got" -ge "$want" ] || fail "main-exit $args: trace has $got files opened, expected at least $want"
  echo "ok: main-exit $args: ended in $ms ms with exit 0, output as without the shim, complete trace ($got files opened)"
done
