#!/usr/bin/env bash
# Run ON THE GPU MACHINE (carry .gpu/uring): where a small synchronous cuFileRead's time goes.
# Builds phxfile-abi (Release) and phxfile-abi/tests/gpu/floor.cu, then runs the probe on a
# 256 MiB file with the page cache warm: pread alone, the copy alone, their serial sum, the
# same read pipelined in pieces, the context bookkeeping, and cuFileRead through ours and
# NVIDIA's libcufile (compatibility mode), interleaved in one process. Output in $OUT.
#   scripts/gpu/floor.sh [ROUNDS_OF_PROCESSES]
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"; out=$(cd "$out" && pwd)
B=$root/build/gpu-phxfile G=$root/phxfile-abi/tests/gpu
uring=(-DURING_STATIC="$root/.gpu/uring/lib/liburing.a" -DURING_INCLUDE="$root/.gpu/uring/include")
{ cmake -S phxfile-abi -B "$B" -DCMAKE_BUILD_TYPE=Release "${uring[@]}" && cmake --build "$B" -j 16; } > "$out/build.txt" 2>&1 ||
  { tail -30 "$out/build.txt"; exit 1; }
tlib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))' 2>/dev/null)
nv_lib=$(readlink -f "$(ldd "$tlib" 2>/dev/null | awk '/libcufile.so.0/ {print $3}')" 2>/dev/null)
echo "NVIDIA libcufile: ${nv_lib:-NOT FOUND}"
scratch=/tmp/phxfile-gpu; mkdir -p "$scratch"
cat > "$scratch/cufile.json" <<JSON
{ "logging": { "dir": "$out", "level": "ERROR" }, "properties": { "allow_compat_mode": true } }
JSON
export CUFILE_ENV_PATH_JSON=$scratch/cufile.json
python3 - <<'PY'
import os
os.makedirs("/run/udev/data", exist_ok=True)
fstypes = {}
for line in open("/proc/self/mountinfo"):
    p = line.split(); fstypes[p[2]] = p[p.index("-") + 1]
for dev in os.listdir("/sys/class/block"):
    try: majmin = open(f"/sys/class/block/{dev}/dev").read().strip()
    except OSError: continue
    path = "/run/udev/data/b" + majmin
    if not os.path.exists(path):
        open(path, "w").write("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=" + fstypes.get(majmin, "ext4") + "\n")
PY
nvcc -O2 -arch=sm_90 "$G/floor.cu" -lcuda -ldl -o "$B/floor" > "$out/floor-build.txt" 2>&1 || { cat "$out/floor-build.txt"; exit 1; }
head -c 256M /dev/urandom > "$scratch/small.bin" && cat "$scratch/small.bin" > /dev/null
for r in $(seq 1 "${1:-3}"); do
  timeout 120 "$B/floor" "$scratch/small.bin" "$B/libphxfile.so" "$nv_lib" > "$out/floor-$r.txt" 2>&1
  echo "round $r exit $?"
done
python3 - "$out" <<'PY'
import collections, glob, statistics, sys
v = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + "/floor-[0-9]*.txt")):
    for line in open(f):
        p = line.split()
        if p[:1] == ["RESULT"]: v[(p[1], int(p[2]))].append(float(p[3]))
        elif p[:1] == ["INFO"]: print(line.rstrip())
for sz in (4096, 65536):
    print(f"-- {sz >> 10} KiB: median over processes of per-process medians (us)")
    for (k, s), xs in sorted(v.items()):
        if s == sz: print(f"{k:10s} {statistics.median(xs):8.2f}   {' '.join(f'{x:.2f}' for x in xs)}")
PY
rm -f "$scratch/small.bin"
