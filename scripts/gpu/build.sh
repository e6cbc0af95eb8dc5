#!/usr/bin/env bash
# Run ON THE GPU MACHINE: builds libphoenix (Release) into build/gpu with the liburing that
# scripts/gpu/prepare.sh put into .gpu/uring. The other GPU scripts start with it.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
cmake -S phoenix-native -B build/gpu -DCMAKE_BUILD_TYPE=Release \
  -DURING_STATIC="$root/.gpu/uring/lib/liburing.a" -DURING_INCLUDE="$root/.gpu/uring/include" >/dev/null &&
  cmake --build build/gpu -j >/dev/null || { echo "libphoenix build failed" >&2; exit 1; }
