#!/usr/bin/env bash
# Run ON THE GPU MACHINE: why abi_check's stream section hangs on our libcufile. Builds as
# cufile.sh does, then runs abi_check (NVIDIA-compiled) with the default number of CUDA
# hardware queues, with CUDA_DEVICE_MAX_CONNECTIONS=32, and with 1 Phoenix worker.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD out=${OUT:-gpu-results}; mkdir -p "$out"
B=$root/build/gpu-phxfile G=$root/phxfile-abi/tests/gpu
cmake -S phxfile-abi -B "$B" -DCMAKE_BUILD_TYPE=Release -DURING_STATIC="$root/.gpu/uring/lib/liburing.a" \
  -DURING_INCLUDE="$root/.gpu/uring/include" >/dev/null && cmake --build "$B" -j 16 >/dev/null || { echo build failed; exit 1; }
nv_lib=$(readlink -f /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcufile.so.0)
nvcc -O2 -arch=sm_90 -I/usr/local/cuda/include "$G/abi_check.cu" -Xlinker "$nv_lib" -ldl -o "$B/abi_check" || exit 1
mkdir -p /tmp/abi
for v in ${VARIANTS-default ABI_NO_SPIN=1 ABI_EARLY=1 ABI_NO_SPIN=1,ABI_EARLY=1 PHX_ENGINE=sync}; do
  v=${v//,/ }
  echo "=== $v"
  env $( [ "$v" = default ] || echo "$v" ) LD_LIBRARY_PATH="$B" PHX_CONNECTOR=cuda \
    bash scripts/gpu/hang_dump.sh ${SECS:-20} "$B/abi_check" /tmp/abi "$B" 2>&1 | grep -vE '^\[<0>\]' | head -40
done
# the same stream section on libphoenix alone (no shim)
nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/stream_probe.cu -L"$B" -lphoenix \
  -Xlinker -rpath="$B" -o "$B/stream_probe" || ls "$B"
for m in ${PROBES:-plain,memset+spin plain,spin plain,memset}; do
  echo "=== stream_probe ${m//,/ }"
  PHX_CONNECTOR=cuda bash scripts/gpu/hang_dump.sh "${SECS:-20}" "$B/stream_probe" /tmp ${m//,/ } 2>&1 | grep -vE '^\[<0>\]' | grep -v "^-- " | head -8
done
