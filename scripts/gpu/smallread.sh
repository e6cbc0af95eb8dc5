#!/usr/bin/env bash
# Run ON THE GPU MACHINE (carry .gpu/uring: liburing's headers and static library, as
# scripts/gpu/prepare.sh puts them there): small synchronous reads on the caller's thread
# (libphoenix's xfer_inline.c, issue 11's 4 KiB / 64 KiB gap). Every step time-limited, its
# output in its own $OUT file, a line per step in $OUT/summary.txt:
#   1  libphoenix's C tests that touch the path, on the cuda connector (real device memory,
#      the caller's context kept current: test_cuda_ctx)
#   2  the cuFile library's tests on the cuda connector (test_smallio: small cuFileRead on the
#      caller's thread)
#   3  phxfile-abi/tests/gpu/bench.cu on a 256 MiB file, page cache warm, alternating rounds:
#      ours (inline_kb default), ours with PHX_INLINE_KB=0 (every read on the workers, as
#      before), ours with PHX_INLINE_KB=1024 (1 MiB inline too), NVIDIA's libcufile 1.15 in
#      compatibility mode; medians in $OUT/table.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"; out=$(cd "$out" && pwd)
N=$root/build/gpu-native B=$root/build/gpu-phxfile G=$root/phxfile-abi/tests/gpu
summary=$out/summary.txt; : > "$summary"
note() { echo "$*" | tee -a "$summary"; }
step() { # step NAME OUTFILE SECONDS CMD...
  local name=$1 file=$2 secs=$3 rc=0 t0=$SECONDS; shift 3
  timeout "$secs" "$@" > "$out/$file" 2>&1 || rc=$?
  note "$(printf '%-58s %s (%ss, exit %s) -> %s' "$name" "$([ $rc = 0 ] && echo ok || echo FAILED)" $((SECONDS - t0)) $rc "$file")"
  return $rc
}
uring=(-DURING_STATIC="$root/.gpu/uring/lib/liburing.a" -DURING_INCLUDE="$root/.gpu/uring/include")

step "build libphoenix + C tests (Release)" build-native.txt 240 bash -c "
  cmake -S phoenix-native -B '$N' -DCMAKE_BUILD_TYPE=Release ${uring[*]} && cmake --build '$N' -j 16" ||
  { note "build failed"; exit 1; }
step "1 C tests, cuda connector" c-tests-cuda.txt 300 bash -c "
  st=0; for t in test_inline test_cuda_ctx test_io test_batch test_races test_registry; do
    echo \"== \$t\"; PHX_CONNECTOR=cuda timeout 120 '$N/'\$t 2>&1 | tail -8 || st=1
  done; exit \$st"
step "build phxfile-abi (Release)" build-phxfile.txt 240 bash -c "
  cmake -S phxfile-abi -B '$B' -DCMAKE_BUILD_TYPE=Release ${uring[*]} && cmake --build '$B' -j 16" ||
  { note "build failed"; exit 1; }
step "2 cuFile library tests, cuda connector" shim-tests-cuda.txt 240 bash -c "
  st=0; for t in test_smallio test_api test_batch; do
    echo \"== \$t\"; PHX_CONNECTOR=cuda CUFILE_ENV_PATH_JSON= LD_LIBRARY_PATH='$B' timeout 90 '$B/tests/'\$t 2>&1 | grep -v '^phxfile:' | tail -5 || st=1
  done; exit \$st"

# NVIDIA's header and library, as scripts/gpu/cufile.sh finds them
tlib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so"))' 2>/dev/null)
nv_lib=$(ldd "$tlib" 2>/dev/null | awk '/libcufile.so.0/ {print $3}')
[ -f "$nv_lib" ] || nv_lib=""
nv_inc=""
pip_cufile=$(python3 -c 'import importlib.util as u; s = u.find_spec("nvidia.cufile"); print(list(s.submodule_search_locations)[0])' 2>/dev/null)
for d in ${CUDA_HOME:-/usr/local/cuda} /usr/local/cuda /usr/local/cuda/targets/x86_64-linux "$pip_cufile" /usr; do
  [ -n "$d" ] && [ -z "$nv_inc" ] && [ -f "$d/include/cufile.h" ] && nv_inc=$d/include
  [ -n "$d" ] && [ -z "$nv_lib" ] && for l in "$d/lib64/libcufile.so.0" "$d/lib/libcufile.so.0"; do [ -f "$l" ] && nv_lib=$l && break; done
done
nv_lib=$(readlink -f "$nv_lib" 2>/dev/null || echo "$nv_lib")
note "NVIDIA cufile.h in ${nv_inc:-NOT FOUND}; libcufile ${nv_lib:-NOT FOUND}"
scratch=/tmp/phxfile-gpu
mkdir -p "$scratch"
cat > "$scratch/cufile.json" <<JSON
{
  "logging": { "dir": "$out", "level": "ERROR" },
  "properties": { "allow_compat_mode": true }
}
JSON
export CUFILE_ENV_PATH_JSON=$scratch/cufile.json
# NVIDIA's compatibility mode needs udev's ID_FS_* for the file's block device (cufile.sh, 5a)
step "udev data for NVIDIA's compatibility mode" udev.txt 30 python3 -c '
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
print(sorted(os.listdir("/run/udev/data")))'
step "3a build bench against NVIDIA's cufile.h" bench-build.txt 120 \
  nvcc -O2 -arch=sm_90 -I"$nv_inc" "$G/bench.cu" -Xlinker "$nv_lib" -ldl -o "$B/bench"
step "3b 256 MiB file, page cache warmed" bench-file.txt 60 bash -c "
  head -c 256M /dev/urandom > '$scratch/small.bin' && cat '$scratch/small.bin' > /dev/null && ls -la '$scratch/small.bin'"
for round in 1 2 3; do
  step "3c round $round: ours" bench-ours-$round.txt 60 env LD_PRELOAD="$B/libcufile.so.0" LD_LIBRARY_PATH="$B" "$B/bench" "$scratch/small.bin" ours
  step "3c round $round: ours, PHX_INLINE_KB=0" bench-off-$round.txt 60 env PHX_INLINE_KB=0 LD_PRELOAD="$B/libcufile.so.0" LD_LIBRARY_PATH="$B" "$B/bench" "$scratch/small.bin" ours-inline0
  step "3c round $round: ours, PHX_INLINE_KB=1024" bench-1m-$round.txt 60 env PHX_INLINE_KB=1024 LD_PRELOAD="$B/libcufile.so.0" LD_LIBRARY_PATH="$B" "$B/bench" "$scratch/small.bin" ours-inline1024
  step "3c round $round: NVIDIA compat mode" bench-nvidia-$round.txt 60 env LD_LIBRARY_PATH="$(dirname "$nv_lib")" "$B/bench" "$scratch/small.bin" nvidia
done
cat "$out"/bench-*-[0-9].txt > "$out/bench-all.txt"
step "3d table" table.txt 30 python3 - "$out/bench-all.txt" <<'PY'
import collections, statistics, sys
vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4 and p[0] == "RESULT":
        vals[(p[1], p[2])].append(float(p[3]))
    elif p[:1] == ["ERROR"]:
        print(line.rstrip())
libs = ["ours", "ours-inline0", "ours-inline1024", "nvidia"]
med = lambda lib, key: statistics.median(vals[(lib, key)]) if vals.get((lib, key)) else float("nan")
print("| cuFileRead, page cache | " + " | ".join(libs) + " | ours / NVIDIA |")
print("|---|" + "---|" * (len(libs) + 1))
for sz in [4096, 65536, 1 << 20, 16 << 20, 64 << 20]:
    label = f"{sz >> 10} KiB" if sz < 1 << 20 else f"{sz >> 20} MiB"
    g = [med(l, f"read_{sz}_gbps") for l in libs]
    print(f"| {label} GB/s | " + " | ".join(f"{x:.3f}" for x in g) + f" | {g[0] / g[3]:.2f}x |")
    u = [med(l, f"read_{sz}_us") for l in libs]
    print(f"| {label} latency us | " + " | ".join(f"{x:.1f}" for x in u) + f" | {u[3] / u[0]:.2f}x |")
for l in libs:
    print(f"verify {l}: {vals.get((l, 'verify'))}")
PY
cat "$out/table.txt"
rm -f "$scratch/small.bin"
note "done in ${SECONDS}s"
