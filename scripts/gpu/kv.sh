#!/usr/bin/env bash
# Run ON THE GPU MACHINE after `bash scripts/gpu/prepare.sh` on the build machine (the CLI jar
# it copies into .gpu/ carries kvcache-tier): the issue-10 figures of the KV-cache tier with
# device memory as source and destination, each beside raw Phoenix file I/O of the same bytes
# in the same run (phoenix kv bench measures both), then the same into host memory.
#   $OUT/kv-bench-device.json  phoenix kv bench --device 0: store_gb_per_s vs raw_write_gb_per_s
#                              (goal >= 0.85x), retrieve_gb_per_s vs raw_read_gb_per_s (>= 0.9x),
#                              lookup_us_128k (< 1000)
#   $OUT/kv-bench-device-nofsync.json  the same with --fsync none (raw write then unsynced too)
#   $OUT/kv-bench-host.json    the same into host memory on that machine
#   $OUT/*.err                 progress lines and any error of each step
# About 2-4 minutes; every step has its own time limit.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD; status=0
bash scripts/gpu/build.sh || exit 1
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/build/gpu/libphoenix.so"
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
dir=${KV_DIR:-/tmp}
chunks=${KV_CHUNKS:-64}   # 64 chunks of 32 MiB (Llama-3.1-8B bf16) = 2 GiB per run
nvidia-smi --query-gpu=name,memory.used,memory.total --format=csv > "$out/gpu.txt" 2>&1 || true
df -h "$dir" >> "$out/gpu.txt" 2>&1 || true
timeout 150 ./phoenix kv bench --device 0 --chunks "$chunks" --repeat 3 --dir "$dir" --json \
  > "$out/kv-bench-device.json" 2> "$out/kv-bench-device.err" || status=1
timeout 120 ./phoenix kv bench --device 0 --chunks "$chunks" --repeat 3 --dir "$dir" --fsync none --json \
  > "$out/kv-bench-device-nofsync.json" 2> "$out/kv-bench-device-nofsync.err" || status=1
timeout 120 ./phoenix kv bench --host --chunks "$chunks" --repeat 3 --dir "$dir" --json \
  > "$out/kv-bench-host.json" 2> "$out/kv-bench-host.err" || status=1
for f in "$out"/kv-bench-*.json; do echo "== $f"; cat "$f"; done
echo "kv.sh status $status"
exit $status
