#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare.sh here): the core-2 checks with a
# time limit on every step, each step's output kept in $OUT: the C tests on the cuda
# connector (context test included), the CUDA stream-ordering test, the read/write
# benchmark, the Java tests on the GPU and the device bench.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD; status=0
bash scripts/gpu/build.sh || exit 1
[ "${ONLY_JAVA:-0}" = 1 ] && skip_c=1 || skip_c=0
b=build/gpu
[ $skip_c = 1 ] || {
  for t in test_registry test_io test_batch test_stream test_async test_cuda_ctx test_eintr; do
    PHX_CONNECTOR=cuda timeout 60 $b/$t 2>&1 | tail -2 || status=1
  done
  nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/test_gpu.cu -L$b -lphoenix \
    -Xlinker -rpath="$root/$b" -o $b/test_gpu && { timeout 60 stdbuf -oL $b/test_gpu /tmp 2>&1; echo "test_gpu exit $?"; } | tail -4
} 2>&1 | tee "$out/c-tests.txt"
# the block ran in a pipeline's subshell: judge it by what it printed (a status inside a pipe
# is lost: test_gpu timed out unnoticed until its exit code was printed and checked)
[ $skip_c = 1 ] || [ "$(grep -c ': ok$' "$out/c-tests.txt")" -ge 7 ] || status=1
[ $skip_c = 1 ] || grep -q '^test_gpu exit 0$' "$out/c-tests.txt" || { echo "test_gpu failed or timed out"; status=1; }
[ $skip_c = 1 ] || gcc -O2 -Iphoenix-native/include phoenix-native/tests/gpu/rw_bench.c -L$b -lphoenix -lpthread \
  -Wl,-rpath="$root/$b" -o $b/rw_bench && timeout 200 $b/rw_bench /tmp "${RW_GIB:-4}" 2>&1 | tee "$out/rw-bench.txt" || status=1
jt=.gpu/java-tests
# what surefire passes in the Maven build (PhoenixTest checks the library against it)
version=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -1)
PHX_CONNECTOR=cuda PHX_LIBRARY_PATH="$root/$b/libphoenix.so" timeout 180 .gpu/jre/bin/java --enable-native-access=ALL-UNNAMED -Dphx.project.version="$version" \
  -jar $jt/junit-platform-console-standalone-*.jar execute --class-path "$jt/classes:$(ls $jt/lib/*.jar | tr '\n' ':')" \
  --select-package io.phxfs.core --exclude-classname '.*PhoenixCloseTest' --exclude-classname '.*ModuleTest' --details=summary --disable-banner 2>&1 \
  | tail -30 | tee "$out/java-core.txt" || status=1
# closes the process-wide instance: in its own JVM, as the Maven build runs it
PHX_CONNECTOR=cuda PHX_LIBRARY_PATH="$root/$b/libphoenix.so" timeout 60 .gpu/jre/bin/java --enable-native-access=ALL-UNNAMED \
  -jar $jt/junit-platform-console-standalone-*.jar execute --class-path "$jt/classes:$(ls $jt/lib/*.jar | tr '\n' ':')" \
  --select-class io.phxfs.core.PhoenixCloseTest --details=summary --disable-banner 2>&1 | tail -12 | tee -a "$out/java-core.txt" || status=1
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/$b/libphoenix.so"
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
[ $skip_c = 1 ] || timeout 120 ./phoenix bench --device 0 --size 4g --dir /tmp --threads 8 --json 2>&1 | tee "$out/bench-device.json" || status=1
echo "core2.sh status $status"
exit $status
