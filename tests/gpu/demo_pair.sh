#!/usr/bin/env bash
# Records the demo's side-by-side pair (tests/demo/pair/): one PyTorch training loop
# (tests/demo/sample_train.py, no DataLoader workers, 100 steps), run natively and under
# the built-in wsl2 emulation with its dataset folder as a 9p Windows drive
# (WSLSHIM_EMULATE=wsl2,fs:DATA=9p). On a GPU machine:
#   tests/gpu/demo_pair.sh BUILD_DIR OUT_DIR
# writes OUT_DIR/native/*.trace.zst and OUT_DIR/wsl2-emulated/*.trace.zst, and the
# program's own timing of each run in OUT_DIR/timing.txt.
set -euo pipefail
build=$(cd "${1:?usage: demo_pair.sh BUILD_DIR OUT_DIR}" && pwd)
out=${2:?usage: demo_pair.sh BUILD_DIR OUT_DIR}
data=${DEMO_PAIR_DATA:-/tmp/wslshim-pair-data}
cd "$(dirname "$0")/../.."
python3 tests/demo/sample_train.py "$data" --steps 2 --workers 0 >/dev/null  # the dataset, and warm caches
mkdir -p "$out/native" "$out/wsl2-emulated"
: >"$out/timing.txt"
for v in native wsl2-emulated; do
  rm -f "$out/$v"/*.trace.zst
  if [ "$v" = native ]; then unset WSLSHIM_EMULATE; else export WSLSHIM_EMULATE="wsl2,fs:$data=9p"; fi
  start=$(date +%s%N)
  WSLSHIM_GPU_TIMING=10 WSLSHIM_OUTPUT="$out/$v/%p.trace.zst" LD_PRELOAD="$build/lib/libwslshim.so" \
    python3 tests/demo/sample_train.py "$data" --steps 100 --workers 0
  echo "$v: $(( ($(date +%s%N) - start) / 1000000 )) ms" | tee -a "$out/timing.txt"
done
unset WSLSHIM_EMULATE
