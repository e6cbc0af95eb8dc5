#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare.sh here): everything core2.sh runs (the C
# tests on the cuda connector with the uring engine, the context test, test_gpu, the read/write
# benchmark, phoenix-core's Java tests, the device bench), plus ctest of the host/fake/fake-driver
# variants, the C tests with the sync engine and the safetensors-loader Java tests. Every step
# has a time limit and keeps its output in $OUT (or ./gpu-results), so a hang names its step.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD; status=0; b=build/gpu
step() { echo; echo "=== $*"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; free -g | head -2

step "core2.sh"
OUT="$out" bash scripts/gpu/core2.sh > "$out/core2.txt" 2>&1 || status=1
tail -5 "$out/core2.txt"

step "ctest: host connector, fake device, cuda connector over the fake driver"
(cd $b && timeout 300 ctest -j 8 --timeout 120) > "$out/ctest.txt" 2>&1
grep -E "tests passed|FAILED|Failed" "$out/ctest.txt"
grep -q "100% tests passed" "$out/ctest.txt" || status=1

step "C tests on the GPU, sync engine"
for t in test_registry test_io test_batch test_stream test_async test_cuda_ctx test_eintr; do
  PHX_CONNECTOR=cuda PHX_ENGINE=sync timeout 60 $b/$t 2>&1 | tail -1 || status=1
done | tee "$out/c-tests-sync.txt"
[ "$(grep -c ': ok$' "$out/c-tests-sync.txt")" -ge 7 ] || status=1

step "safetensors-loader Java tests on the GPU"
jt=.gpu/java-tests
PHX_CONNECTOR=cuda PHX_LIBRARY_PATH="$root/$b/libphoenix.so" timeout 240 .gpu/jre/bin/java --enable-native-access=ALL-UNNAMED -Xmx1g \
  -Dphx.fixtures="$root/.gpu/fixtures" -jar $jt/junit-platform-console-standalone-*.jar execute \
  --class-path "$jt/st-classes:$(ls $jt/lib/*.jar | tr '\n' ':')" \
  --select-package io.phxfs.safetensors --details=summary --disable-banner 2>&1 | tail -25 | tee "$out/java-safetensors.txt"
grep -q " 0 tests failed" "$out/java-safetensors.txt" || status=1
echo "check.sh status $status"
exit $status
