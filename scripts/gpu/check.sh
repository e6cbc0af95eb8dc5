#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare.sh here): builds libphoenix there,
# runs the C tests against the real GPU (cuda connector, bounce mode, cuMemAlloc'd buffers),
# the CUDA stream-ordering test, the Java tests on the GPU, then `phoenix bench` into
# device memory. Results go to $OUT (or ./gpu-results).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD
status=0
step() { echo; echo "=== $*"; }

step "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nproc; free -g | head -2

step "build libphoenix (cmake, liburing from .gpu/uring)"
bash scripts/gpu/build.sh || exit 1
lib="$root/build/gpu/libphoenix.so"

step "C tests on the host connector and fake device (ctest)"
(cd build/gpu && ctest -j 8 2>&1 | tail -3) || status=1

step "C tests on the GPU (cuda connector, bounce mode)"
for t in test_registry test_io test_batch test_stream test_eintr test_async test_cuda_ctx; do
  PHX_CONNECTOR=cuda PHX_ENGINE=sync build/gpu/$t || status=1
  PHX_CONNECTOR=cuda build/gpu/$t || status=1
done

step "CUDA test: batches, async, writes, stream ordering with kernels"
nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/test_gpu.cu \
  -Lbuild/gpu -lphoenix -Xlinker -rpath="$root/build/gpu" -o build/gpu/test_gpu && build/gpu/test_gpu /tmp || status=1

step "device <-> page cache, both directions on the same bytes (rw_bench, ${RW_GIB:=4} GiB)"
gcc -O2 -Iphoenix-native/include phoenix-native/tests/gpu/rw_bench.c -Lbuild/gpu -lphoenix -lpthread \
  -Wl,-rpath="$root/build/gpu" -o build/gpu/rw_bench && build/gpu/rw_bench /tmp "$RW_GIB" | tee "$out/rw-bench.txt" || status=1

step "Java tests on the GPU (JUnit console, cuda connector)"
jt=.gpu/java-tests
PHX_CONNECTOR=cuda PHX_LIBRARY_PATH="$lib" .gpu/jre/bin/java --enable-native-access=ALL-UNNAMED \
  -jar $jt/junit-platform-console-standalone-*.jar execute --class-path "$jt/classes:$(ls $jt/lib/*.jar | tr '\n' ':')" \
  --select-package io.phxfs.core --details=summary --disable-banner 2>&1 | tail -25 || status=1
PHX_CONNECTOR=cuda PHX_LIBRARY_PATH="$lib" .gpu/jre/bin/java --enable-native-access=ALL-UNNAMED -Xmx1g \
  -Dphx.fixtures="$root/.gpu/fixtures" -jar $jt/junit-platform-console-standalone-*.jar execute \
  --class-path "$jt/st-classes:$(ls $jt/lib/*.jar | tr '\n' ':')" \
  --select-package io.phxfs.safetensors --details=summary --disable-banner 2>&1 | tail -25 || status=1

step "phoenix bench into device memory (page cache, ${BENCH_SIZE:=4g} file)"
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$lib"
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
./phoenix info | tee "$out/info.txt"
./phoenix bench --device 0 --size "$BENCH_SIZE" --dir /tmp --threads "${BENCH_THREADS:-8}" --json ${BENCH_ARGS:-} \
  > "$out/bench-device.json" || status=1
cat "$out/bench-device.json"
echo "check.sh status $status"
exit $status
