#!/usr/bin/env bash
# Per kernel, the shim's GPU time (every launch timed) against CUPTI's in the same run (pair_cupti.py); OUT, B (a build) from the environment.
set -e
B=${B:-/tmp/b}
[ -f $B/lib/libwslshim.so ] || { cmake -S . -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build $B -j16 >/dev/null 2>&1; }
for w in mlp gpt2; do
  rm -rf /tmp/tr_$w; mkdir -p /tmp/tr_$w
  WSLSHIM_GPU_TIMING=1 WSLSHIM_OUTPUT=/tmp/tr_$w/%p.trace.zst LD_PRELOAD=$B/lib/libwslshim.so python3 tests/gpu/pair_cupti.py run $w /tmp/cupti_$w.json 2>/dev/null
  $B/analyzer/wslshim-report --json /tmp/tr_$w > $OUT/rep_$w.json 2>/dev/null || true
  cp /tmp/cupti_$w.json $OUT/
  python3 tests/gpu/pair_cupti.py cmp /tmp/cupti_$w.json $OUT/rep_$w.json | tee $OUT/cmp_$w.txt
done
