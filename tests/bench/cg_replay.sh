#!/usr/bin/env bash
# The writer's instructions per event on a natively recorded trace (writer_replay
# under callgrind: deterministic, the same every run): the encoding of the events
# (shim/writer/drain.c's inline encoder and the chunks' assembly: writer_replay's replay(),
# less zstd) and zstd, and the compressed bytes per event.
#   tests/bench/cg_replay.sh BUILD_DIR TRACE [bits|gaps|gaps-per-drain|packed][-seq] [LEVEL]
# Record TRACE without valgrind, e.g. the mix of trace_bytes.sh:
#   LD_PRELOAD=BUILD/lib/libwslshim.so WSLSHIM_OUTPUT=mix.trace.zst BUILD/tests/bench/bench_hook 1000000 mix
set -euo pipefail
build=$(cd "${1:?usage: cg_replay.sh BUILD_DIR TRACE [bits|gaps|gaps-per-drain|packed][-seq] [LEVEL]}" && pwd)
trace=${2:?usage: cg_replay.sh BUILD_DIR TRACE [bits|gaps|gaps-per-drain|packed][-seq] [LEVEL]}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$build/tests/bench/writer_replay" "$trace" ${3:-bits} ${4:-} \
  >"$tmp/out" 2>"$tmp/err"
callgrind_annotate --auto=no --inclusive=yes "$tmp/cg.out" >"$tmp/ann" 2>/dev/null
python3 - "$tmp/ann" "$tmp/out" <<'PY'
import re, sys
out = open(sys.argv[2]).read().strip()
events = int(re.search(r"(\d+) events", out).group(1))
incl = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?\S*:(replay|compress_frame|ZSTD_compress2|ZSTD_compressSequences)\b", line)
    if m:
        incl.setdefault(m.group(2), int(m.group(1).replace(",", "")))
enc = incl.get("replay", 0)
# the frames' compression: writer_replay's compress_frame (ZSTD_compress2 as the shim; in the -seq
# modes frame_seq.h's matcher and ZSTD_compressSequences); older writer_replays: ZSTD_compress2 alone
z = incl.get("compress_frame", incl.get("ZSTD_compress2", 0))
zs = incl.get("ZSTD_compress2", 0) + incl.get("ZSTD_compressSequences", 0)
print(f"{out}; per event: encoding {(enc - z) / events:.1f} instructions, zstd {z / events:.1f}"
      + (f" (frame_seq.h's matcher {(z - zs) / events:.1f}, ZSTD_compressSequences {zs / events:.1f})"
         if incl.get("ZSTD_compressSequences") else "") + f", both {enc / events:.1f}")
PY
