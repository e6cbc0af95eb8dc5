#!/usr/bin/env bash
# Run ON THE GPU MACHINE after scripts/gpu/ab-prepare.sh REV here (carry .gpu/jre.tar.xz
# .gpu/uring .gpu/ab): why a load's transfer (libphoenix's own first-to-last-task time, 0.91-0.94x
# of the link in perf-3's runs) falls short of load_shape's timed batch (0.96x). Two suspects:
#   the JVM's work beside the transfer: ab.sh with the revision as is and with `--parse-first`
#     (every header parsed before the first read, so the main thread only waits meanwhile);
#   fresh device memory: load_shape's n12 (a cudaMalloc'd buffer's first writes) against c12
#     (a buffer written before), each after a 300 ms pause, in 3 processes.
# Outputs in $OUT: ab-table.txt (and ab.sh's others), transfer-gap.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"
OUT=$out AB_ROUNDS=${AB_ROUNDS:-5} AB_CHECKPOINTS=${AB_CHECKPOINTS:-st-dense,st-moe} \
  AB_SETTINGS="pf:ARGS=--parse-first" bash scripts/gpu/ab.sh | grep -v '^ab.sh: built'
bash scripts/gpu/build.sh || exit 1
nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/load_shape.cu \
  -Lbuild/gpu -lphoenix -Xlinker -rpath="$root/build/gpu" -o build/gpu/load_shape || exit 1
f=${AB_WORK:-/tmp/ab-checkpoints}/st-moe/model.safetensors
cat "$f" > /dev/null
for p in 1 2 3; do
  echo "--- load_shape process $p: s300,n12,s300,c12"
  build/gpu/load_shape "$f" "${ROUNDS:-6}" s300,n12,s300,c12
done 2>&1 | tee "$out/transfer-gap.txt"
