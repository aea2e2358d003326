#!/usr/bin/env bash
# The writer thread's descriptor table (shim/writer/writer.c, writer_table_own): its own while the
# program has one thread and no driver; the program's from its second thread or its first
# driver call on; every read of the run in the trace, across the switch; its own table
# holds none of the program's descriptors:
#   writer_fds_check.sh SHIM CLIENT REPORT FAKE_CUDA_DIR WORKDIR [SANITIZE]
# Skipped (77) in a TSan build, where the writer never takes a table of its own.
set -euo pipefail
shim=$1 client=$2 report=$3 fake=$4 work=$5 sanitize=${6:-}
if [[ $sanitize == *thread* ]]; then
  echo "skipped: a ThreadSanitizer build's writer shares the program's table"
  exit 77
fi
rm -rf "$work" && mkdir -p "$work"
fail() { echo "FAIL: $*" >&2; exit 1; }
head -c 65536 /dev/urandom > "$work/data.bin"
for mode in thread driver; do
  native=$(LD_LIBRARY_PATH=$fake "$client" $mode "$work/data.bin") || fail "$mode without the shim: exit $?"
  grep -q "single: no writer" <<<"$native" || fail "$mode without the shim: '$native'"
  out=$(LD_LIBRARY_PATH=$fake WSLSHIM_OUTPUT="$work/t-$mode-%p.trace.zst" LD_PRELOAD=$shim \
        "$client" $mode "$work/data.bin") || fail "$mode with the shim: exit $?"
  grep -qx "single: writer sees it: no" <<<"$out" ||
    fail "$mode: the writer shares the single-threaded program's table: '$out'"
  grep -qx "$mode: writer sees it: yes" <<<"$out" ||
    fail "$mode: the writer does not share the program's table after the $mode: '$out'"
  want=$(echo "$out" | sed -n 's/^reads //p')
  got=$("$report" --json "$work"/t-$mode-*.trace.zst 2>"$work/report.err" |
        python3 -c 'import json, sys; r = json.load(sys.stdin); print(r["io"]["reads"], r["processes"][0].get("dropped", 0), r["processes"][0].get("truncated", False))') ||
    fail "report: $(cat "$work/report.err")"
  [ "$got" = "$want 0 False" ] || fail "$mode: the trace says reads, dropped, truncated = '$got'; the program made $want reads"
  echo "ok: $mode: writer's own table while single-threaded, the program's after the $mode; $want reads in the trace"
done
# Its own table holds none of the program's descriptors: a pipe's write end the
# program closes is closed (perf, for one, waits for that before its child execs).
native=$("$client" pipe "$work/data.bin") || fail "pipe without the shim: exit $?"
[ "$native" = $'no writer\npipe eof: yes\nreads 1' ] || fail "pipe without the shim: '$native'"
out=$(WSLSHIM_LOG=info WSLSHIM_OUTPUT="$work/t-pipe-%p.trace.zst" LD_PRELOAD=$shim "$client" pipe "$work/data.bin" \
      2>"$work/pipe.err") || fail "pipe with the shim: exit $?"
# what the writer logged from its own table reaches stderr, by the thread that joined it
grep -q "info: trace written to $work/t-pipe-" "$work/pipe.err" ||
  fail "the writer's last line is not on stderr: '$(cat "$work/pipe.err")'"
grep -qx "writer holds: none" <<<"$out" || fail "the writer's table holds the program's descriptors: '$out'"
grep -qx "pipe eof: yes" <<<"$out" || fail "the pipe's reader saw no end of file: '$out'"
echo "ok: pipe: the writer's table holds none of the program's descriptors; the pipe's reader saw end of file"
