#!/usr/bin/env bash
# Run ON THE GPU MACHINE (carry .gpu/uring): does a checkpoint's page-cache state, as its writer
# left it or as a read from disk leaves it, change the bounce transfer? (perf-3: the one-file
# st-moe checkpoint transfers at 0.91-0.93x of the link where four shards run at 0.93-0.95x;
# a file keeps the folios of its writes until evicted, docs/benchmarks.md.) Writes st-moe as
# ab.py does (safetensors.torch.save_file, 4,681 tensors of 1 MiB), then twice: load_shape's c12
# right after the write, then again after the file is evicted (POSIX_FADV_DONTNEED) and read
# back with 64 MiB reads. Output in $OUT/pagecache-state.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"
bash scripts/gpu/build.sh || exit 1
nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/load_shape.cu \
  -Lbuild/gpu -lphoenix -Xlinker -rpath="$root/build/gpu" -o build/gpu/load_shape || exit 1
f=/tmp/pagecache-state/model.safetensors
mkdir -p "$(dirname "$f")"
{
  for pass in 1 2; do
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
    echo "pass $pass, as written: $(build/gpu/load_shape "$f" "${ROUNDS:-6}" c12 | grep '^median:')"
    python3 - "$f" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
os.fsync(fd)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
while os.read(fd, 64 << 20):
    pass
os.close(fd)
PY
    echo "pass $pass, read back: $(build/gpu/load_shape "$f" "${ROUNDS:-6}" c12 | grep '^median:')"
  done
} 2>&1 | tee "$out/pagecache-state.txt"
