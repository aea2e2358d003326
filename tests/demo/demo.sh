#!/usr/bin/env bash
# The README's first command: install what the build needs, build, record a
# run under the shim and print its report.
#   bash tests/demo/demo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}

need=()
for pkg in cmake gcc g++ make pkg-config libzstd-dev zlib1g-dev libsqlite3-dev python3; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "demo: installing ${need[*]}"
  $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

cmake -S . -B "$build" >/dev/null
cmake --build "$build" -j >/dev/null
shim=$PWD/$build/lib/libwslshim.so
report=$PWD/$build/analyzer/wslshim-report
work=$(mktemp -d "${TMPDIR:-/tmp}/wslshim-demo.XXXXXX")
out=$work/cuda
mkdir -p "$out" "$work/io"

py=$(python3 -c 'import sys; print(sys.executable)')  # the interpreter itself, not a wrapper script
echo "demo: 1. a data loader reading 3000 small files with 2 worker processes, under the shim"
"$py" tests/demo/dataset.py make "$work/dataset" --files 3000
WSLSHIM_OUTPUT="$work/io/%p.trace.zst" LD_PRELOAD=$shim "$py" tests/demo/dataset.py read "$work/dataset" --workers 2
"$report" "$work/io"
echo
export WSLSHIM_OUTPUT="$out/%p.trace.zst"

if "$build/bin/launch_probe" --launches 1 --repeats 1 >/dev/null 2>&1; then
  echo "demo: 2. GPU found; recording the driver-API probe (launches, syncs, allocations)"
  LD_PRELOAD=$shim "$build/bin/launch_probe" --resolve proc --launches 5000
  if "$py" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    echo "demo: recording a PyTorch training loop (small MLP, loss.item() every 10 steps)"
    LD_PRELOAD=$shim "$py" tests/gpu/workloads.py mlp --iters 300
  fi
else
  echo "demo: 2. no GPU here; recording a driver-API client against wslshim's test driver (simulated libcuda)"
  LD_PRELOAD=$shim LD_LIBRARY_PATH=$PWD/$build/tests/fake_cuda/lib \
    "$build/tests/fake_cuda/client_runtime" 4 2000 >/dev/null
fi
"$report" "$out"
echo
echo "demo: 3. a sample run recorded on an NVIDIA H200: a PyTorch training loop with 2 DataLoader"
echo "      workers, NVTX step ranges and loss.item() every step (tests/demo/sample_train.py)"
"$report" tests/demo/sample
"$report" --html "$work/sample.html" tests/demo/sample
echo
echo "demo: 4. side by side: the same PyTorch loop (tests/demo/sample_train.py, 100 steps, no workers)"
echo "      recorded on an NVIDIA H100 natively (A) and under wslshim's WSL2 *emulation* (B:"
echo "      WSLSHIM_EMULATE=wsl2,fs:DATA=9p adds published WSL2 launch and /mnt/c file costs on the"
echo "      same Linux machine; B is not a measured WSL2 run; tests/gpu/demo_pair.sh recorded it)"
"$report" --compare tests/demo/pair/native tests/demo/pair/wsl2-emulated
echo "demo: traces in $work/io and $out; the sample run as a web page: $work/sample.html"
