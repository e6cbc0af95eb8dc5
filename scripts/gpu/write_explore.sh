#!/usr/bin/env bash
# Run ON THE GPU MACHINE after check.sh (which builds build/gpu): where the device -> page cache
# write ceiling lies. rw_bench (phoenix and kernel rows on the same bytes, one run each) on the
# default /tmp file system, with 16 kernel threads and 16 Phoenix workers, on tmpfs, and on tmpfs
# with huge pages (fewer per-folio steps in the write path). Output in $OUT/write-explore.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
b=build/gpu
log="$out/write-explore.txt"
{
  echo "kernel $(uname -r); /tmp is $(df -T /tmp | awk 'NR==2 {print $2}')"
  sysctl vm.dirty_ratio vm.dirty_background_ratio vm.dirty_bytes vm.dirty_background_bytes 2>/dev/null
  mkdir -p /mnt/phx-huge && mount -t tmpfs -o size=48g,huge=always tmpfs /mnt/phx-huge 2>&1
  configs=("/tmp 16 16" "/dev/shm 8 8" "/mnt/phx-huge 8 8" "/mnt/phx-huge 16 16")
  for cfg in "${configs[@]}"; do
    set -- $cfg
    echo; echo "=== dir $1, Phoenix workers $2, kernel threads $3"
    PHX_CONNECTOR=cuda PHX_WORKERS=$2 RW_THREADS=$3 timeout 150 $b/rw_bench "$1" 4 2>&1 | grep -vE '^device' || echo "rw_bench failed ($?)"
  done
  umount /mnt/phx-huge
} > "$log" 2>&1
cat "$log"
