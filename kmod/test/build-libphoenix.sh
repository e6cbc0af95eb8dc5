#!/usr/bin/env bash
# Builds libphoenix and its own C tests for the test guest: OUT/guest/ is laid out as part of
# the guest's root (the test binaries, libphoenix.so and the shared libraries they load, at the
# paths the dynamic loader looks for them). Usage: kmod/test/build-libphoenix.sh OUT
set -euo pipefail
cd "$(dirname "$0")/../.."
out=$(realpath -m "$1")
cmake -S phoenix-native -B "$out/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$out/build" -j "$(nproc)" >/dev/null
g=$out/guest
rm -rf "$g"
mkdir -p "$g/tests/lp"
cp kmod/test/guest/libphoenix.sh "$g/tests/"
cp "$out/build/libphoenix.so" "$g/tests/lp/"
for t in "$out"/build/test_*; do
  [ -x "$t" ] && [ -f "$t" ] && cp "$t" "$g/tests/lp/"
done
gcc -O2 -Wall -Wextra -Werror -Iphoenix-native/include -Ikmod/test/guest -o "$g/tests/lp/lp_check" \
  kmod/test/guest/lp_check.c -L"$out/build" -lphoenix
# the loader and libc the host built them against, at the same paths in the guest
for f in "$g"/tests/lp/*; do
  ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true
done | sort -u | while read -r lib; do
  case $lib in */libphoenix.so) continue ;; esac
  mkdir -p "$g$(dirname "$lib")"
  cp -L "$lib" "$g$lib"
done
