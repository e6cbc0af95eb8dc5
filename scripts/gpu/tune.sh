#!/usr/bin/env bash
# Run ON THE GPU MACHINE after check.sh: whole-file bounce throughput for several pool
# shapes (workers, slots per worker, slot KiB, engine), each beside its own ceiling with the
# same number of threads, in the same run.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PHX_JAVA_HOME="$PWD/.gpu/jre" PHX_LIBRARY_PATH="$PWD/build/gpu/libphoenix.so"
out=${OUT:-gpu-results}; mkdir -p "$out"
: > "$out/tune.txt"
for cfg in ${TUNE_CONFIGS:-"8 4 4096 uring" "8 4 4096 sync" "8 4 2048 uring" "8 6 2048 uring" "8 8 1024 uring" "12 4 2048 uring" "16 4 2048 uring" "16 6 1024 uring"}; do
  set -- $cfg
  line=$(PHX_WORKERS=$1 PHX_SLOTS=$2 PHX_SLOT_KB=$3 PHX_ENGINE=$4 ./phoenix bench --device 0 --size "${BENCH_SIZE:-4g}" \
    --dir /tmp --threads "$1" --no-sweep --repeat 5 --quiet --json | tr -d '\n ' |
    grep -oE '"(ceiling|phoenix|baseline)_gbps":[0-9.]+|"phoenix_vs_ceiling":[0-9.]+' | tr '\n' ' ')
  echo "workers=$1 slots=$2 slot_kb=$3 engine=$4 $line" | tee -a "$out/tune.txt"
done
