#!/usr/bin/env bash
# The single-threaded fast path (shim/program_threads.c) changes nothing a program sees:
#   cancel_check.sh SHIM CLIENT COUNT_INTERPOSER WORKDIR [SANITIZE]
# 1. read() stays a cancellation point once the program has a thread: one made by
#    pthread_create, and one by C11 thrd_create, blocked in read(), is cancelled;
# 2. a single-threaded program's open/read/pread/close return and set errno as without
#    the shim;
# 3. and they do not go through glibc (a counting interposer preloaded after the shim
#    sees none of the program's 201 reads), while in a program with a thread of its own
#    all of them do. (A TSan build keeps glibc's path, TSan's runtime having a thread: there
#    the counting and the thrd_create case, which TSan does not intercept, are left out.)
set -euo pipefail
shim=$1 client=$2 counter=$3 work=$4 sanitize=${5:-}
rm -rf "$work" && mkdir -p "$work"
export WSLSHIM_OUTPUT=$work/t-%p.trace.zst
fail() { echo "FAIL: $*" >&2; exit 1; }
modes="pthread thrd"
# TSan's runtime does not intercept C11 thrd_create: a thread made so crashes in an instrumented client.
[[ $sanitize == *thread* ]] && modes=pthread
for mode in $modes; do
  native=$("$client" "$mode") || fail "$mode without the shim: exit $?"
  shimmed=$(LD_PRELOAD=$shim "$client" "$mode") || fail "$mode with the shim: exit $?"
  [ "$native" = cancelled ] || fail "$mode without the shim printed '$native'"
  [ "$shimmed" = "$native" ] || fail "$mode with the shim printed '$shimmed', without '$native'"
  echo "ok: $mode: a thread blocked in read() is cancelled, with and without the shim"
done
for mode in calls calls-mt; do
  native=$("$client" "$mode" 200)
  shimmed=$(LD_PRELOAD=$shim "$client" "$mode" 200)
  [ "$native" = "$shimmed" ] || { diff <(echo "$native") <(echo "$shimmed") >&2 || true; fail "$mode: output differs"; }
  echo "ok: $mode: results and errno as without the shim ($(echo "$native" | wc -l) lines)"
  if [[ $sanitize == *thread* ]]; then
    echo "(TSan build: glibc's path always; the counting interposer, not instrumented, is left out)"
    continue
  fi
  LD_PRELOAD=$shim:$counter "$client" "$mode" 200 >/dev/null 2>"$work/count.err" ||
    fail "$mode with the counting interposer: exit $?: $(cat "$work/count.err")"
  n=$(sed -n 's/^count_interposer: \([0-9]*\) read.*/\1/p' "$work/count.err")
  [ -n "$n" ] || fail "$mode: no count from the interposer: $(cat "$work/count.err")"
  if [ "$mode" = calls-mt ]; then
    [ "$n" -ge 201 ] || fail "$mode: $n reads reached glibc's read(), expected all 201 of the program's"
  else
    [ "$n" -lt 201 ] || fail "$mode: $n reads reached glibc's read(): the single-threaded path was not taken"
  fi
  echo "ok: $mode: $n read() calls went through glibc's read()"
done
[ -n "$(ls "$work"/t-*.trace.zst 2>/dev/null)" ] || fail "no trace written"
