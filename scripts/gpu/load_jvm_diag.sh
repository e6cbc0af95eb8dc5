#!/usr/bin/env bash
# Run ON THE GPU MACHINE after a libphoenix build (check.sh or probe_load.sh): what the JVM
# costs a one-shot `phoenix load --device 0`: JIT compiler threads, the AOT cache; beside the
# bounce ceiling and the C one-shot load (load_shape) on the same file.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/build/gpu/libphoenix.so"
mkdir -p samples/target && cp -p .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
m=${MODEL_DIR:-/tmp/llama}
[ -f "$m/model.safetensors" ] || ./phoenix gen-model "$m" --size "${MODEL_SIZE:-5g}" >/dev/null 2>&1
cat "$m/model.safetensors" > /dev/null
ceiling() { ./phoenix bench --file "$m/model.safetensors" --device 0 --no-sweep --repeat 3 --json --quiet | grep -oE '"phoenix_gbps" : [0-9.]+' | head -1; }
loads() {
  for i in 1 2 3 4; do
    "$@" ./phoenix load "$m" --device 0 --json 2>/dev/null | tr -d '\n ' |
      grep -oE '"(gb_per_s|parse_seconds|allocate_seconds|read_seconds)":[0-9.E-]+' | tr '\n' ' '; echo
  done
}
echo "ceiling: $(ceiling)"
echo "--- default launcher"; loads env
echo "--- CICompilerCount=2"; loads env JAVA_TOOL_OPTIONS=-XX:CICompilerCount=2
echo "--- TieredStopAtLevel=1"; loads env JAVA_TOOL_OPTIONS=-XX:TieredStopAtLevel=1
echo "--- no AOT cache"; loads env PHX_AOT=0
echo "--- no AOT cache, CICompilerCount=2"; loads env PHX_AOT=0 JAVA_TOOL_OPTIONS=-XX:CICompilerCount=2
echo "ceiling: $(ceiling)"
[ -x build/gpu/load_shape ] && { echo "--- C one-shot (load_shape)"; build/gpu/load_shape "$m/model.safetensors" 3; }
