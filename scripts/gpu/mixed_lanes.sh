#!/usr/bin/env bash
# Run ON THE GPU MACHINE: phoenix-native/tests/gpu/mixed_lanes.cu on a warm ~5 GB file: the
# bounce lane alone, and beside it a lane that DMAs from registered page-cache pages
# (issue 13's link bar), with the pinned H2D reference in the same run. Output in $OUT.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
mkdir -p build/gpu
nvcc -O2 -arch=sm_90 phoenix-native/tests/gpu/mixed_lanes.cu -o build/gpu/mixed_lanes -lpthread || exit 1
f=/tmp/mixed-5g.bin
[ -f "$f" ] || head -c "${SIZE:-5368709120}" /dev/urandom > "$f"
cat "$f" > /dev/null
[ -n "${SKIP_MIXED:-}" ] || timeout 400 build/gpu/mixed_lanes "$f" | tee "$out/mixed_lanes.txt"
# what caps the bounce path: the CPU copy alone against the copy + DMA, 4 KiB pages against huge
nvcc -O2 -arch=sm_90 phoenix-native/tests/gpu/copy_ceiling.cu -o build/gpu/copy_ceiling -lpthread || exit 1
uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled /sys/kernel/mm/transparent_hugepage/defrag
timeout 300 build/gpu/copy_ceiling "$f" ${CEILING_ARGS:-} | tee "$out/copy_ceiling.txt"
