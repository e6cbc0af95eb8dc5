#!/usr/bin/env bash
# Run ON THE GPU MACHINE: stream-ordered I/O on streams the caller created (the core-2 hang).
# stream_probe with the kernel launched right after the queued read (lazy loading, no EAGER),
# early and late values, small and large; abi_check (NVIDIA-compiled) through our libcufile
# with its late-bound ReadAsync; then stream_bench (stream vs synchronous, same run).
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD out=${OUT:-gpu-results}; mkdir -p "$out"
B=$root/build/gpu-phxfile G=$root/phxfile-abi/tests/gpu
unset CUDA_MODULE_LOADING
cmake -S phxfile-abi -B "$B" -DCMAKE_BUILD_TYPE=Release -DURING_STATIC="$root/.gpu/uring/lib/liburing.a" \
  -DURING_INCLUDE="$root/.gpu/uring/include" >/dev/null && cmake --build "$B" -j 16 >/dev/null || { echo build failed; exit 1; }
nv_lib=$(readlink -f /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcufile.so.0)
nvcc -O2 -arch=sm_90 -I/usr/local/cuda/include "$G/abi_check.cu" -Xlinker "$nv_lib" -ldl -o "$B/abi_check" || exit 1
for p in stream_probe stream_bench; do
  nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/$p.cu -L"$B" -lphoenix \
    -Xlinker -rpath="$B" -o "$B/$p" || exit 1
done
status=0
for m in "plain memset+spin 300000 early" "plain memset+spin 300000 late" "plain none 48000000 early" \
         "plain spin 48000000 late" "after-sync memset+spin 300000 late"; do
  echo "=== stream_probe $m"
  PHX_CONNECTOR=cuda bash scripts/gpu/hang_dump.sh 30 "$B/stream_probe" /tmp $m 2>&1 | grep -vE '^\[<0>\]' | grep -v "^-- " | tail -3
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
echo "=== abi_check through our libcufile (late-bound ReadAsync, kernels launched after it)"
mkdir -p /tmp/abi
LD_LIBRARY_PATH="$B" PHX_CONNECTOR=cuda bash scripts/gpu/hang_dump.sh 60 "$B/abi_check" /tmp/abi "$B" > "$out/abi_check.txt" 2>&1 || status=1
grep -vE '^\[<0>\]' "$out/abi_check.txt" | tail -8
echo "=== stream_bench (1 GiB in /dev/shm, medians of 3)"
PHX_CONNECTOR=cuda timeout 300 "$B/stream_bench" /dev/shm | tee "$out/stream_bench.txt" || status=1
echo "stream_check.sh status $status"
exit $status
