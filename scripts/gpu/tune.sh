#!/usr/bin/env bash
# Run ON THE GPU MACHINE after check.sh: whole-file bounce throughput for several pool
# shapes (workers, slots per worker, slot size), each beside its own ceiling in the same run.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PHX_JAVA_HOME="$PWD/.gpu/jre" PHX_LIBRARY_PATH="$PWD/build/gpu/libphoenix.so"
out=${OUT:-gpu-results}; mkdir -p "$out"
for cfg in ${TUNE_CONFIGS:-"8 3 8" "8 2 8" "8 4 4" "12 3 8" "16 3 4" "12 2 8"}; do
  set -- $cfg
  echo "--- workers $1, slots $2, slot ${3} MiB"
  PHX_WORKERS=$1 PHX_SLOTS=$2 PHX_SLOT_MB=$3 ./phoenix bench --device 0 --size "${BENCH_SIZE:-4g}" --dir /tmp \
    --threads "$1" --no-sweep --repeat 5 --quiet --json > "$out/tune-$1-$2-$3.json"
  grep -E '"(ceiling|phoenix|baseline)_gbps"|phoenix_vs' "$out/tune-$1-$2-$3.json" | tr -d '\n '; echo
done
