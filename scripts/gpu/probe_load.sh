#!/usr/bin/env bash
# Run ON THE GPU MACHINE: builds libphoenix and phoenix-native/tests/gpu/load_shape.cu and
# measures, in one process, what separates a one-shot load from the bounce ceiling (fresh
# allocation, file offset, polling), for 8 and 12 workers; then repeated loads in one JVM.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bash scripts/gpu/build.sh || exit 1
nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/load_shape.cu \
  -Lbuild/gpu -lphoenix -Xlinker -rpath="$root/build/gpu" -o build/gpu/load_shape || exit 1
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/build/gpu/libphoenix.so"
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
m=${MODEL_DIR:-/tmp/llama}
[ -f "$m/model.safetensors" ] || ./phoenix gen-model "$m" --size "${MODEL_SIZE:-5g}" >/dev/null 2>&1
cat "$m/model.safetensors" > /dev/null
nvidia-smi --query-gpu=pstate,pcie.link.gen.current,pcie.link.width.current,clocks.sm,clocks.mem --format=csv
for w in ${WORKERS:-8 12}; do
  echo "--- load_shape, $w workers"; PHX_WORKERS=$w build/gpu/load_shape "$m/model.safetensors" "${ROUNDS:-6}"
done
for w in ${WORKERS:-8 12}; do
  echo "--- load-bench --device 0 (one JVM), $w workers"
  PHX_WORKERS=$w ./phoenix load-bench "$m/model.safetensors" --device 0 --no-dd --repeat 5 --json --quiet | grep -A2 runs_gb
done
