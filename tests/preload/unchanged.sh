#!/usr/bin/env bash
# Real programs behave the same with and without the shim: stdout, stderr and
# exit status are compared byte for byte.
#   unchanged.sh SHIM TMPDIR
set -u
shim=$1; tmp=$2
rm -rf "$tmp"; mkdir -p "$tmp"
export WSLSHIM_OUTPUT="$tmp/%p.trace.zst"
fail=0
check() {
  "$@" >"$tmp/out0" 2>"$tmp/err0"; rc0=$?
  LD_PRELOAD="$shim" "$@" >"$tmp/out1" 2>"$tmp/err1"; rc1=$?
  if [ $rc0 -ne $rc1 ] || ! cmp -s "$tmp/out0" "$tmp/out1" || ! cmp -s "$tmp/err0" "$tmp/err1"; then
    echo "DIFFERS: $* (exit $rc0 vs $rc1)"; diff "$tmp/out0" "$tmp/out1" | head; diff "$tmp/err0" "$tmp/err1" | head
    fail=1
  else
    echo "same: $* (exit $rc0)"
  fi
}
check true
check false
check ls -la /usr/include/stdio.h /nonexistent
check sh -c 'echo out; echo err >&2; exit 3'
check python3 -c 'import os, sys; print(sum(range(1000)), os.getpid() > 0); sys.stderr.write("e\n")'
check python3 -c 'import subprocess; print(subprocess.run(["sh", "-c", "exit 5"]).returncode)'
check python3 -c 'import os; pid = os.fork(); os._exit(7) if pid == 0 else print(os.waitpid(pid, 0)[1] >> 8)'
# An exec'd program keeps the shim even when the environment is cleared.
kept=$(LD_PRELOAD="$shim" env -i /bin/sh -c 'echo "$LD_PRELOAD"')
case "$kept" in *"$shim"*) echo "kept across env -i: $kept";; *) echo "LOST across env -i: '$kept'"; fail=1;; esac
exit $fail
