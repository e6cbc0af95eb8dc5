#!/usr/bin/env bash
# Run ON THE GPU MACHINE after check.sh (which builds build/gpu/libphoenix.so): the
# safetensors-loader benchmarks of issue 3 on one generated Llama-shaped bf16 model.
#   1. Phoenix load vs its own bounce ceiling vs safetensors.load_file(cuda) vs torch.cuda.gds,
#      page cache warm, then cold (drop_caches) beside a parallel O_DIRECT reader;
#   2. load-bench into host memory (dd bs=16M, FileChannel loop, mmap+copy) and into the
#      device (peak RSS).
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
export PHX_JAVA_HOME="$PWD/.gpu/jre" PHX_LIBRARY_PATH="$PWD/build/gpu/libphoenix.so" PYTHONUNBUFFERED=1
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
model=${MODEL_DIR:-/tmp/llama}
[ -f "$model/model.safetensors" ] || ./phoenix gen-model "$model" --size "${MODEL_SIZE:-5g}" >&2
ls -l "$model"
python3 scripts/gpu/load_bench.py "$model/model.safetensors" --repeat "${REPEAT:-3}" --settle "${SETTLE:-0}" | tee "$out/load-bench-gpu.json"
./phoenix load-bench "$model/model.safetensors" --host --json --quiet | tee "$out/load-bench-host.json"
./phoenix load-bench "$model/model.safetensors" --device 0 --json --quiet --no-dd | tee "$out/load-bench-device.json"
