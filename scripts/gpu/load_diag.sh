#!/usr/bin/env bash
# Run ON THE GPU MACHINE: where a one-shot `phoenix load` spends its time, beside the bounce
# ceiling on the same file (phases from the load's JSON; workers 8 and 12).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PHX_JAVA_HOME="$PWD/.gpu/jre" PHX_LIBRARY_PATH="$PWD/build/gpu/libphoenix.so"
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
m=${MODEL_DIR:-/tmp/llama}
[ -f "$m/model.safetensors" ] || ./phoenix gen-model "$m" --size "${MODEL_SIZE:-5g}" >/dev/null 2>&1
cat "$m/model.safetensors" > /dev/null
./phoenix bench --file "$m/model.safetensors" --device 0 --no-sweep --repeat 3 --quiet | grep -E "ceiling|phoenix"
for w in 8 12; do for i in 1 2 3; do
  echo -n "workers $w: "; PHX_WORKERS=$w ./phoenix load "$m" --device 0 --json | tr -d '\n ' | grep -oE '"(seconds|gb_per_s|parse_seconds|allocate_seconds|read_seconds)":[0-9.E-]+' | tr '\n' ' '; echo
done; done
./phoenix load-bench "$m/model.safetensors" --device 0 --no-dd --repeat 5 --json --quiet | grep -A6 runs_gb
