#!/usr/bin/env bash
# The documented command lines, run as written: every ```sh block of the top-level README's
# section "Running cuFile programs on Phoenix" and of phxfile-abi/README.md's "Tests", in order,
# from a fresh scratch root (links to the sources, a build/ of its own, so nothing cached from
# another build, such as a build type, hides what a new user gets), then what they printed and
# built is checked. A README line that stops working fails here.
#
#   phxfile-abi/tests/readme_lines.sh [SCRATCH]    (default: build/readme-lines)
#
# Blocks naming a program the reader supplies (my_cufile_program, train.py, <pid>) are not run.
# The block for NVIDIA's cuFile runs with its CUDA= line pointed at a stand-in tree that has
# NVIDIA's layout and holds our header and library: that checks the command lines (include and
# library directories, -lcufile, the RUNPATH), not NVIDIA's library.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
scratch=${1:-$root/build/readme-lines}
case $scratch in /*) ;; *) scratch=$PWD/$scratch ;; esac
rm -rf "$scratch"
mkdir -p "$scratch/blocks"
for d in phoenix-native phxfile-abi samples kmod; do ln -s "$root/$d" "$scratch/$d"; done

# extract FILE HEADING PREFIX: each ```sh block under the "## HEADING..." section into
# $scratch/blocks/PREFIX-NN.sh
extract() {
  awk -v head="## $2" -v out="$scratch/blocks/$3" '
    /^## / { insec = index($0, head) == 1 }
    insec && /^```sh[[:space:]]*$/ { n++; f = sprintf("%s-%02d.sh", out, n); inb = 1; printf "" > f; next }
    inb && /^```[[:space:]]*$/ { inb = 0; close(f); next }
    inb { print > f }
  ' "$1"
}
extract "$root/README.md" "Running cuFile programs on Phoenix" 1-readme
extract "$root/phxfile-abi/README.md" "Tests" 2-phxfile

# NVIDIA's layout, $CUDA/include/cufile.h and $CUDA/lib/libcufile.so{,.0}, holding ours (copies:
# our library finds libphoenix.so through $ORIGIN)
standin=$scratch/cuda-standin
fail() { echo "readme_lines: $*" >&2; exit 1; }
ran=()
for f in "$scratch"/blocks/*.sh; do
  [ -e "$f" ] || fail "no \`\`\`sh blocks found in the README sections"
  name=$(basename "$f" .sh)
  if grep -qE 'my_cufile_program|train\.py|<pid>' "$f"; then
    echo "== $name: not run (names a program of the reader's)"; sed 's/^/   | /' "$f"; continue
  fi
  if grep -q '^CUDA=' "$f"; then
    [ -f "$scratch/build/phxfile/libcufile.so.0" ] || fail "$name needs build/phxfile, which no earlier block built"
    mkdir -p "$standin/include" "$standin/lib"
    cp "$root/phxfile-abi/include/cufile.h" "$standin/include/"
    cp "$scratch/build/phxfile/libcufile.so.0" "$scratch/build/phxfile/libphoenix.so" "$standin/lib/"
    ln -sf libcufile.so.0 "$standin/lib/libcufile.so"
    sed -i "s|^CUDA=.*|CUDA=$standin   # (readme_lines.sh: the stand-in for NVIDIA's install)|" "$f"
  fi
  echo "== $name:"; sed 's/^/   | /' "$f"
  (cd "$scratch" && bash -e -o pipefail "$f") > "$f.out" 2>&1 || { cat "$f.out"; fail "$name failed (above)"; }
  sed 's/^/   > /' "$f.out" | tail -40
  ran+=("$f")
done

# what each documented block must have done: found by content, so a block reworded away
# from these fails here rather than passing unrun
block_with() { grep -lE -- "$1" "${ran[@]}" | head -1; }
need() { local f; f=$(block_with "$1") || true; [ -n "$f" ] || fail "no block run matches: $1"; echo "$f"; }

b=$(need '^cmake -S phxfile-abi -B build/phxfile && cmake --build build/phxfile$')
for lib in libcufile.so.0 libphxfile.so libphoenix.so sample/cufile_checksum fakecuda/libcuda.so.1; do
  [ -e "$scratch/build/phxfile/$lib" ] || fail "$(basename "$b"): build/phxfile/$lib was not built"
done
grep -qx 'CMAKE_BUILD_TYPE:STRING=' "$scratch/build/phxfile/CMakeCache.txt" ||
  fail "build/phxfile was not configured without a build type"

t=$(need '^cmake -S phxfile-abi -B build/phxfile && cmake --build build/phxfile && \(cd build/phxfile && ctest\)$')
grep -q '100% tests passed' "$t.out" || fail "$(basename "$t"): ctest did not pass"

s=$(need '^cc -Iphxfile-abi/include samples/cufile-c/cufile_checksum.c -o build/cufile_checksum ')
grep -qE '^buffer: (host memory \(|device memory on )' "$s.out" || fail "$(basename "$s"): no buffer line"
grep -qx 'checksums match' "$s.out" || fail "$(basename "$s"): checksums differ"
cmp "$scratch/build/sample-in.bin" "$scratch/build/sample-out.bin"
readelf -d "$scratch/build/cufile_checksum" | grep -q "RUNPATH.*$scratch/build/phxfile" ||
  fail "build/cufile_checksum has no RUNPATH to build/phxfile"

k=$(need '^LD_LIBRARY_PATH=\$PWD/build/phxfile/fakecuda build/cufile_checksum ')
grep -qx 'buffer: device memory on Fake CUDA device 0 (host memory)' "$k.out" ||
  fail "$(basename "$k"): the sample did not get device memory from the fake driver"
grep -qx 'checksums match' "$k.out" || fail "$(basename "$k"): checksums differ"

n=$(need '^CUDA=')
[ "$(grep -cx 'checksums match' "$n.out")" = 2 ] || fail "$(basename "$n"): the NVIDIA-built sample did not pass twice"
readelf -d "$scratch/build/cufile_checksum-nvidia" | grep -q "RUNPATH.*$standin/lib" ||
  fail "build/cufile_checksum-nvidia has no RUNPATH to \$CUDA/lib"
readelf -d "$scratch/build/cufile_checksum-nvidia" | grep -q 'NEEDED.*\[libcufile.so.0\]' ||
  fail "build/cufile_checksum-nvidia does not need libcufile.so.0"

# the log line the README quotes names the libphoenix version the header has now
# (cufile_checksum.log-version checks the library prints it)
v=$(sed -n 's/^#define PHXFS_VERSION_STRING "\(.*\)"$/\1/p' "$root/phoenix-native/include/phoenix.h")
[ -n "$v" ] || fail "no PHXFS_VERSION_STRING in phoenix.h"
grep -F "(cuFile API 1.15, libphoenix $v), configuration:" "$scratch"/blocks/1-readme-*.sh >/dev/null ||
  fail "README's CUFILE_LOGGING_LEVEL=INFO line does not quote libphoenix $v"

echo "readme_lines: ${#ran[@]} documented blocks ran as written and did what the READMEs say"
