#!/usr/bin/env bash
# Builds phxfs.ko out of tree against one kernel's headers: kmod/build.sh KDIR OUTDIR
# (sources are copied to OUTDIR, so the checkout stays clean and builds for several kernels
# can coexist). Extra make variables (NVIDIA_SYMVERS=...) pass through.
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
kdir=$1 out=$(realpath -m "$2"); shift 2
mkdir -p "$out/include/uapi"
cp "$src"/*.c "$src"/*.h "$src"/Kbuild "$out"/
cp "$src"/include/uapi/*.h "$out"/include/uapi/
make -s -C "$kdir" M="$out" "$@" modules
