#!/usr/bin/env bash
# Every output of two wslshim-report builds on the same traces, compared byte for byte (a
# refactor's check): text, --json, --html, --chrome (whole and a window), --project (text and
# JSON), --compare (text, JSON, HTML), --sqlite (its SQL dump), with stderr and exit codes.
#   tests/bench/report_diff.sh OLD_REPORT NEW_REPORT WORKDIR TRACES...
# TRACES: trace files or folders, each one run. Prints "same" or the files that differ, per run;
# exit status 1 when any differs.
set -u
old=${1:?usage: report_diff.sh OLD_REPORT NEW_REPORT WORKDIR TRACES...}
new=${2:?}
work=${3:?}
shift 3
pair=$(cd "$(dirname "$0")/../demo/pair" && pwd)
fail=0
for p in "$@"; do
  name=$(basename "$p" .trace.zst)
  for v in old new; do
    R=$old; [ $v = new ] && R=$new
    o=$work/$v/$name
    rm -rf "$o"; mkdir -p "$o"
    run() { local tag=$1; shift; "$R" "$@" >"$o/$tag" 2>"$o/$tag.err"; echo "$tag $?" >>"$o/rc"; }
    run text --color=never "$p"
    run json --json "$p"
    run html --html "$o/page.html" "$p"
    run chrome --chrome "$o/timeline.json" "$p"
    run chrome_window --chrome "$o/window.json" --from 0.5 --to 1.5 "$p"
    run project --project native "$p"
    run project_json --json --project wsl2 "$p"
    run compare --compare "$pair/native" "$p"
    run compare_json --json --compare "$p" "$pair/wsl2-emulated"
    run compare_html --html "$o/compare.html" --compare "$p" "$pair/native"
    run sqlite --sqlite "$o/run.db" "$p"
    if command -v sqlite3 >/dev/null && [ -f "$o/run.db" ]; then sqlite3 "$o/run.db" .dump >"$o/run.sql"; fi
    rm -f "$o/run.db"
    sed -i "s#$work/$v/#WORK/#g" "$o"/*.err
  done
  if diff -r "$work/old/$name" "$work/new/$name" >/dev/null; then
    echo "$name: same ($(tr '\n' ' ' <"$work/new/$name/rc"))"
  else
    echo "$name: DIFFERENT"; diff -rq "$work/old/$name" "$work/new/$name"; fail=1
  fi
done
exit $fail
