#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare.sh here; carry .gpu/jre,
# .gpu/phoenix-cli.jar, .gpu/uring): the bounce defaults of session 7 (2 x 4 MiB slots a
# worker, up to 10 workers) against those before (4 x 2 MiB, 8 workers), same run:
#   1  phoenix load of a warm 5 GB dense checkpoint, settings interleaved run by run (loader2.sh)
#   2  rw_bench (device <-> page cache, both directions) under each, alternating, twice
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD
DENSE_ONLY=1 REPEAT=${REPEAT:-7} LOADER2_SETTINGS="default;before: 4 x 2 MiB slots, 8 workers;12 workers" \
  OUT="$out" bash scripts/gpu/loader2.sh 2>&1 | grep -v nonexistent | tail -8
b=build/gpu
gcc -O2 -Iphoenix-native/include phoenix-native/tests/gpu/rw_bench.c -L$b -lphoenix -lpthread \
  -Wl,-rpath="$root/$b" -o $b/rw_bench || exit 1
for r in 1 2; do
  echo "== rw_bench round $r: defaults"
  timeout 150 $b/rw_bench /tmp "${RW_GIB:-4}" 2>&1 | tail -16 | tee "$out/rw-new-$r.txt"
  echo "== rw_bench round $r: before (PHX_SLOT_MB=2 PHX_SLOTS=4 PHX_WORKERS=8)"
  PHX_SLOT_MB=2 PHX_SLOTS=4 PHX_WORKERS=8 timeout 150 $b/rw_bench /tmp "${RW_GIB:-4}" 2>&1 | tail -16 | tee "$out/rw-old-$r.txt"
done
