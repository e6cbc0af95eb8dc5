#!/usr/bin/env bash
# Run ON THE GPU MACHINE after scripts/gpu/ab-prepare.sh REV_A REV_B [...] here (carry
# .gpu/jre.tar.xz .gpu/uring .gpu/ab): the A/B harness of every loader performance change.
# Builds each revision's libphoenix (Release, from its own sources), writes the checkpoints
# (AB_CHECKPOINTS, default all):
#   st-dense   safetensors.torch.save_file, 4 shards + model.safetensors.index.json, Llama-8B
#              layer shapes, 3 layers a shard, bf16 (5.2 GB): as users' checkpoints come
#   gen-dense  phoenix gen-model --size 5g --shards 4 (the same shapes, our own writer)
#   st-moe     save_file, one file, 4,681 tensors of 1 MiB (4.9 GB)
# then, page cache warm, loads each with every revision's `phoenix load --device 0 --json` in a
# fresh JVM, revisions interleaved round by round (AB_ROUNDS, default 5), beside the pinned
# host-to-device rate of the same run (torch). Prints per checkpoint each revision's median
# GB/s, its ratio to the link, its phases, and each later revision's ratio to the first with
# the spread of the per-round ratios, and the command's wall time (JVM start to exit: the CLI's
# start-up and warm-up are in it, not in the JSON's seconds); the revisions' order turns every
# round. AB_SETTINGS="NAME:VAR=V,...;..." adds the last revision
# under other environments as variants (ab.py --settings); AB_RW=1 then runs rw_bench (device
# <-> page cache against the kernel's pread/pwrite) with the last revision's library.
# AB_CEILING=1 then runs phoenix-native/tests/gpu/copy_ceiling.cu's "defaults" mode on the st-moe
# file: the bounce path's own ceiling at the library's default shape (pread + H2D, 2 slots of
# 4 MiB a thread, 12 threads; also the CPU copy alone, the copies alone, and one stream a thread
# as libphoenix queues them), to set each load's read phase against on the same machine.
# AB_STDERR=1 keeps every child's stderr in $OUT/ab-stderr.txt. AB_TARGET=host loads into host
# memory (`load --host`) instead of device 0.
# Outputs in $OUT: ab.json (every run), ab-table.txt, rw-bench.txt, copy-ceiling.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"
[ -f .gpu/ab/order ] || { echo "ab.sh: no .gpu/ab/order: run scripts/gpu/ab-prepare.sh REV_A REV_B here first" >&2; exit 2; }
[ -x .gpu/jre/bin/java ] || tar -C .gpu -xJf .gpu/jre.tar.xz
while read -r name desc; do
  src=build/ab/$name; rm -rf "$src" && mkdir -p "$src"
  tar -C "$src" -xf ".gpu/ab/$name/native.tar"
  cmake -S "$src/phoenix-native" -B "$src/build" -DCMAKE_BUILD_TYPE=Release \
    -DURING_STATIC="$root/.gpu/uring/lib/liburing.a" -DURING_INCLUDE="$root/.gpu/uring/include" > "$out/ab-build-$name.txt" 2>&1 &&
    cmake --build "$src/build" -j --target phoenix >> "$out/ab-build-$name.txt" 2>&1 \
    || { echo "ab.sh: libphoenix of $name failed to build"; tail -20 "$out/ab-build-$name.txt"; exit 1; }
  echo "ab.sh: built $name ($desc)"
done < .gpu/ab/order
[ -n "${AB_STDERR:-}" ] && export AB_STDERR="$out/ab-stderr.txt"
timeout 480 python3 scripts/gpu/ab.py --order .gpu/ab/order --rounds "${AB_ROUNDS:-5}" --target "${AB_TARGET:-device}" \
  --checkpoints "${AB_CHECKPOINTS:-st-dense,gen-dense,st-moe}" --settings "${AB_SETTINGS:-}" --json "$out/ab.json" 2>&1 | tee "$out/ab-table.txt"
if [ -n "${AB_RW:-}" ]; then
  # device <-> page cache both ways beside the kernel's own pread/pwrite, with the last revision,
  # under its defaults and then each AB_SETTINGS environment
  last=$(tail -1 .gpu/ab/order | cut -d' ' -f1); b=build/ab/$last/build
  gcc -O2 -Wall -Wextra -Iphoenix-native/include phoenix-native/tests/gpu/rw_bench.c -L$b -lphoenix -lpthread \
    -Wl,-rpath="$root/$b" -o $b/rw_bench || exit 1
  IFS=';' read -ra specs <<< "default:;${AB_SETTINGS:-}"
  for spec in "${specs[@]}"; do
    [ -n "$spec" ] || continue
    vname=${spec%%:*}; assigns=${spec#*:}
    echo "== rw_bench, $vname ${assigns//,/ }"
    env ${assigns//,/ } timeout 200 $b/rw_bench /tmp "${RW_GIB:-4}" 2>&1 | grep -E "write|pwrite|read  page|verified" | tee "$out/rw-bench-$vname.txt"
  done
fi
if [ -n "${AB_CEILING:-}" ]; then
  f=${AB_WORK:-/tmp/ab-checkpoints}/st-moe/model.safetensors
  if [ -f "$f" ]; then
    mkdir -p build/gpu
    nvcc -O2 -arch=sm_90 phoenix-native/tests/gpu/copy_ceiling.cu -o build/gpu/copy_ceiling -lpthread || exit 1
    cat "$f" > /dev/null
    echo "== copy_ceiling defaults, $f"
    timeout 150 build/gpu/copy_ceiling "$f" defaults "${CEILING_THREADS:-12}" 2>&1 | tee "$out/copy-ceiling.txt"
  else
    echo "ab.sh: AB_CEILING needs the st-moe checkpoint ($f)"
  fi
fi
