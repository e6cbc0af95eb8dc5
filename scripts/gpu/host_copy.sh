#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare.sh here; carry .gpu/jre,
# .gpu/phoenix-cli.jar, .gpu/uring): issue 13's host copies on a second machine, same run:
#   1  the fresh_order probe (pread into fresh pages against UFFDIO_COPY, and a read of every
#      page after), alternating
#   2  `phoenix load --host --copy` in a fresh JVM per load, PHX_FRESH_FILL=1 (UFFDIO_COPY) and
#      0 (off, the default) alternating with `dd bs=16M` on the same warm file, 5 rounds
#   3  `phoenix load-bench --host` with PHX_FRESH_FILL=1 and 0
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-gpu-results}; mkdir -p "$out"
root=$PWD
export PHX_JAVA_HOME="$root/.gpu/jre" PHX_LIBRARY_PATH="$root/build/gpu/libphoenix.so"
timeout 180 bash scripts/gpu/build.sh > "$out/host-copy-build.txt" 2>&1 || { echo "build failed"; cat "$out/host-copy-build.txt"; exit 1; }
mkdir -p samples/target && cp .gpu/phoenix-cli.jar samples/target/phoenix-cli.jar
# the fresh-fill test on this kernel, path on and off (build/gpu is built with the C tests)
(cd build/gpu && for v in "PHX_FRESH_FILL=1" "PHX_FRESH_FILL=0"; do env PHX_CONNECTOR=host $v timeout 120 ./test_fresh_fill; echo "test_fresh_fill $v: exit $?"; done) > "$out/test_fresh_fill.txt" 2>&1
cat "$out/test_fresh_fill.txt"
d=/tmp/hcopy
[ -f "$d/model.safetensors" ] || timeout 120 ./phoenix gen-model "$d" --size "${SIZE:-4g}" >/dev/null
f=$d/model.safetensors
cat "$f" > /dev/null
nproc; uname -r; cat /sys/kernel/mm/transparent_hugepage/enabled
gcc -O2 -o build/gpu/fresh_order phoenix-native/tests/probe/fresh_order.c -lpthread && timeout 120 build/gpu/fresh_order "$f" 0
for r in 1 2 3 4 5; do
  for ff in 1 0; do
    PHX_FRESH_FILL=$ff timeout 60 ./phoenix load "$f" --host --copy --json 2>/dev/null | python3 -c "import json,sys; d=json.load(sys.stdin); print('round $r fresh_fill=$ff load --host --copy', d['gb_per_s'], 'GB/s, read', round(d['read_seconds'], 3), 's')"
  done
  dd if="$f" of=/dev/null bs=16M 2>&1 | tail -1
done
for ff in 1 0; do
  echo "== load-bench, PHX_FRESH_FILL=$ff"
  PHX_FRESH_FILL=$ff timeout 150 ./phoenix load-bench "$f" --host --repeat 3 --quiet 2>&1 | tail -12
done
