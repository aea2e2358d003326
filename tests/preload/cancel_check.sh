#!/usr/bin/env bash
# The single-threaded fast path (shim/recorder/program_threads.c) changes nothing a program sees:
#   cancel_check.sh SHIM CLIENT COUNT_INTERPOSER WORKDIR [SANITIZE]
# 1. read() stays a cancellation point once the program has a thread: one made by
#    pthread_create, and one by C11 thrd_create, blocked in read(), is cancelled;
# 2. a single-threaded program's open/read/pread/close return and set errno as without
#    the shim;
# 3. the shim says it makes them as system calls while the program is single-threaded;
#    but another library preloaded after the shim that
#    defines read(), lseek() and fstat() (a counting interposer) sees every one of the
#    program's 201 reads, 200 seeks and 200 fstats, single-threaded or not, as without
#    the shim, and the shim says it left them to it.
#    (A TSan build keeps glibc's path, TSan's runtime having a thread: there the counting
#    and the thrd_create case, which TSan does not intercept, are left out.)
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
  # (its choice is made at start; the program's pthread_create ends it, which 1. shows:
  # a raw system call would not be a cancellation point)
  said=$(WSLSHIM_LOG=debug LD_PRELOAD=$shim "$client" "$mode" 200 2>&1 >/dev/null | grep -c "the system call alone" || true)
  [ "$said" = 1 ] || fail "$mode: the shim did not say it makes the system calls itself (said $said times)"
  WSLSHIM_LOG=debug LD_PRELOAD=$shim:$counter "$client" "$mode" 200 >/dev/null 2>"$work/count.err" ||
    fail "$mode with the counting interposer: exit $?: $(cat "$work/count.err")"
  n=$(sed -n 's/^count_interposer: \([0-9]*\) read.*/\1/p' "$work/count.err")
  [ -n "$n" ] || fail "$mode: no count from the interposer: $(cat "$work/count.err")"
  [ "$n" -ge 201 ] || fail "$mode: $n reads reached the interposer after the shim, expected all 201 of the program's"
  if [ "$mode" = calls ]; then
    grep -q "go on to $counter after the shim" "$work/count.err" ||
      fail "$mode: the shim did not say the calls go on to the interposer: $(cat "$work/count.err")"
  fi
  echo "ok: $mode: an interposer after the shim sees $n read() calls (all the program's)"
  # lseek and fstat, which the shim may make as system calls itself in any program
  # (glibc's are no more), likewise reach it: all 200 of each (fstat since glibc 2.33,
  # where a program calls it by that name)
  read -r ns nf <<<"$(sed -n 's/^count_interposer: \([0-9]*\) lseek() and \([0-9]*\) fstat.*/\1 \2/p' "$work/count.err")"
  [ "${ns:-0}" -ge 200 ] || fail "$mode: ${ns:-no} lseek() calls reached the interposer after the shim, expected 200"
  glibc_minor=$(getconf GNU_LIBC_VERSION 2>/dev/null | sed -n 's/^glibc 2[.]\([0-9]*\).*/\1/p')
  if [ "${glibc_minor:-0}" -ge 33 ]; then
    [ "${nf:-0}" -ge 200 ] || fail "$mode: ${nf:-no} fstat() calls reached the interposer after the shim, expected 200"
  fi
  echo "ok: $mode: and $ns lseek() and $nf fstat() calls"
done
[ -n "$(ls "$work"/t-*.trace.zst 2>/dev/null)" ] || fail "no trace written"
