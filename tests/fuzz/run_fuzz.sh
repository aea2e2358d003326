#!/usr/bin/env bash
# Fuzzes the trace reader and analyzer for a bounded time with libFuzzer
# (clang -fsanitize=fuzzer,address,undefined), starting from a corpus made by
# the fuzz.corpus_and_damaged_traces test of a normal build.
#   tests/fuzz/run_fuzz.sh SECONDS CORPUS_DIR [BUILD_DIR]
# Exit 0: no finding; 1: a crash, leak or sanitizer report (the input is
# saved in BUILD_DIR/fuzz-findings); 77: no clang with libFuzzer here.
set -euo pipefail
secs=${1:?seconds}; corpus=${2:?corpus dir}; bdir=${3:-build-fuzz}
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "run_fuzz: no clang; skipped"; exit 77; }
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' > /tmp/wslshim-fuzz-probe.c
clang -fsanitize=fuzzer /tmp/wslshim-fuzz-probe.c -o /tmp/wslshim-fuzz-probe 2>/dev/null \
  || { echo "run_fuzz: clang has no libFuzzer; skipped"; exit 77; }
CC=clang cmake -S . -B "$bdir" -DWSLSHIM_FUZZ=ON -DWSLSHIM_SANITIZE="address;undefined" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_FLAGS="-fno-sanitize-recover=undefined" >/dev/null
cmake --build "$bdir" -j2 --target fuzz_trace >/dev/null
mkdir -p "$bdir/fuzz-corpus" "$bdir/fuzz-findings"
cp -n "$corpus"/* "$bdir/fuzz-corpus/" 2>/dev/null || true
"$bdir/tests/fuzz/fuzz_trace" -max_total_time="$secs" -max_len=1048576 -rss_limit_mb=2048 -timeout=20 \
  -artifact_prefix="$bdir/fuzz-findings/" -print_final_stats=1 "$bdir/fuzz-corpus" 2>&1 | tail -25
