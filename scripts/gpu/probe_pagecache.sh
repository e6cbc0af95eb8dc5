#!/usr/bin/env bash
# Run ON THE GPU MACHINE: builds libphoenix and the page-cache registration probe
# (phoenix-native/tests/gpu/pagecache_register.cu), generates the 5 GB Llama-shaped model if
# missing, and measures copying the warm file to the device straight from registered page-cache
# pages beside the bounce path (load_diag.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bash scripts/gpu/build.sh || exit 1
nvcc -O2 -arch=sm_90 phoenix-native/tests/gpu/pagecache_register.cu -o build/gpu/pagecache_register -lpthread || exit 1
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/build/gpu/libphoenix.so"
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
m=${MODEL_DIR:-/tmp/llama}
[ -f "$m/model.safetensors" ] || ./phoenix gen-model "$m" --size "${MODEL_SIZE:-5g}" >/dev/null 2>&1
cat "$m/model.safetensors" > /dev/null
uname -r; grep -i huge /proc/meminfo | head -3
build/gpu/pagecache_register "$m/model.safetensors"
bash scripts/gpu/load_diag.sh
