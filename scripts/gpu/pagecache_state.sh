#!/usr/bin/env bash
# Run ON THE GPU MACHINE (carry .gpu/uring): does the way a checkpoint came into the page cache
# change what a warm load of it costs? (perf-3: the one-file st-moe checkpoint transfers at
# 0.91-0.93x of the link where four shards run at 0.93-0.95x; on the build machine a host
# mapping of a file read back by 8 MiB pieces from several threads took 7-230 ms per 2 GB against
# 1-3 ms when each piece was first populated in a MADV_HUGEPAGE mapping, docs/benchmarks.md.)
# Writes st-moe as ab.py does (safetensors.torch.save_file, 4,681 tensors of 1 MiB), then for each
# cache state: cache_fill times a host mapping and plain preads of it, and load_shape's c12 the
# bounce transfer into device memory. States: as written; then evicted and brought back by
# cache_fill's fillers (read64m: 64 MiB reads; tasks8m: 16 threads of 8 MiB pieces, as
# libphoenix's workers read a cold file; tasks8m-huge: the same, each piece first populated in a
# MADV_HUGEPAGE mapping). Output in $OUT/pagecache-state.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"
bash scripts/gpu/build.sh || exit 1
nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/load_shape.cu \
  -Lbuild/gpu -lphoenix -Xlinker -rpath="$root/build/gpu" -o build/gpu/load_shape || exit 1
gcc -O2 -Wall -Wextra -o build/gpu/cache_fill phoenix-native/tests/probe/cache_fill.c -lpthread || exit 1
f=/tmp/pagecache-state/model.safetensors
mkdir -p "$(dirname "$f")"
transfer() { echo "  bounce c12: $(build/gpu/load_shape "$f" "${ROUNDS:-6}" c12 | grep '^median:')"; }
{
  uname -r; df -T /tmp | tail -1
  python3 - "$f" <<'PY'
import sys, torch
from safetensors.torch import save_file
t = {"model.embed_tokens.weight": torch.zeros(32000, 4096, dtype=torch.bfloat16)}
for l in range(24):
    for e in range(65):
        for w in ("gate_proj", "up_proj", "down_proj"):
            t[f"model.layers.{l}.mlp.experts.{e}.{w}.weight"] = torch.zeros(128, 4096, dtype=torch.bfloat16)
save_file(t, sys.argv[1], metadata={"format": "pt"})
PY
  build/gpu/cache_fill "$f" 1 as-is | sed 's/^as-is /as-written/'
  transfer
  for pass in 1 2; do
    for filler in read64m tasks8m tasks8m-huge; do
      build/gpu/cache_fill "$f" 16 "$filler" | tail -1
      transfer
    done
  done
} 2>&1 | tee "$out/pagecache-state.txt"
