#!/usr/bin/env bash
# GPU time estimate against CUPTI, out of sample, and the pair correction's two parts launch by launch.
#   OUT=dir B=build tests/gpu/estimate_oos.sh [WORKLOADS] [IDLE_WORKLOADS]
# WORKLOADS (default bert,llama,cnn; - for none): coverage_check.py workloads, each run under the shim
# (default sampling) and, apart, under torch.profiler: the report's gpu.gpu_time_est_ns (each correction
# mode) against CUPTI's kernel time. IDLE_WORKLOADS (default mlp,bert; - for none): idle_start.py with
# every launch timed and torch.profiler on in the same run: how late an idle launch's shim start lies
# after CUPTI's, and how early a queued launch's pair starts. Everything goes to OUT/oos.tgz (the traces,
# reports, CUPTI's kernels), the tables to stdout.
set -u
B=${B:-/tmp/b}; OUT=${OUT:?}
W=${1:-bert,llama,cnn}; IW=${2:-mlp,bert}
A=/tmp/oos; rm -rf $A; mkdir -p $A/idle
[ -f $B/lib/libwslshim.so ] || { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j16 >/dev/null 2>&1; } || exit 1
[ "$IW" = - ] || for w in ${IW//,/ }; do
  d=$A/idle/$w; mkdir -p $d/trace
  WSLSHIM_GPU_TIMING=1 WSLSHIM_OUTPUT=$d/trace/%p.trace.zst LD_PRELOAD=$B/lib/libwslshim.so \
    timeout 200 python3 tests/gpu/idle_start.py run $w $d/cupti.json 2>$d/run.err
  $B/analyzer/wslshim-report --gpu-pair-correction=none --chrome /tmp/chrome_$w.json $d/trace 2>>$d/run.err
  for m in fixed split none queued; do $B/analyzer/wslshim-report --gpu-pair-correction=$m --json $d/trace > $d/report.$m.json 2>>$d/run.err; done
  python3 tests/gpu/idle_start.py cmp $d/cupti.json /tmp/chrome_$w.json > $d/idle.txt 2>&1
  echo "== $w"; tail -2 $d/idle.txt
done
if [ "$W" != - ]; then
  python3 tests/gpu/coverage_check.py --build $B --out $A/cov --only $W --timeout 240 2>$A/cov.err | tail -40
  for t in $A/cov/traces/*; do
    for m in fixed split none queued; do
      $B/analyzer/wslshim-report --gpu-pair-correction=$m --json $t > $A/cov/reports/$(basename $t).$m.json 2>/dev/null
    done
  done
fi
tar czf $OUT/oos.tgz -C $A .
