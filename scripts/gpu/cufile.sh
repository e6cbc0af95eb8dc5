#!/usr/bin/env bash
# Run ON THE GPU MACHINE (after scripts/gpu/prepare.sh here, which carries liburing in .gpu/uring):
# issue 11, the cuFile-compatible library. One run, every step time-limited, each step's output
# in its own $OUT file, a summary in $OUT/summary.txt:
#   1  build libphxfile.so / libcufile.so.0 (and libphoenix) from phxfile-abi/
#   2  the shim's own tests on the cuda connector (real device memory)
#   3  ABI: the header layout printed through NVIDIA's cufile.h and through ours, diffed; then a
#      test program compiled against NVIDIA's cufile.h and linked to libcufile.so.0 runs with ours
#      (LD_LIBRARY_PATH) - before any udev data exists (hidden if the image has some)
#   4  torch.cuda.gds.GdsFile save+load through ours (LD_PRELOAD + LD_LIBRARY_PATH), byte-exact,
#      checking /proc/self/maps shows ours and only ours
#   5  udev data faked for NVIDIA's compatibility mode; the same ABI program and torch test
#      through NVIDIA's libcufile (for comparison)
#   6  the same read workload through NVIDIA's libcufile and ours: cuFileDriverOpen, HandleRegister
#      and BufRegister latency, cuFileRead 4 KiB-64 MiB and 4 GiB into registered device memory,
#      page cache warm (alternating runs) and O_DIRECT; $OUT/table.txt
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"; out=$(cd "$out" && pwd)
B=$root/build/gpu-phxfile
G=$root/phxfile-abi/tests/gpu
summary=$out/summary.txt; : > "$summary"
note() { echo "$*" | tee -a "$summary"; }
step() { # step NAME OUTFILE SECONDS CMD... : runs CMD with a time limit, output in $out/OUTFILE
  local name=$1 file=$2 secs=$3 rc=0 t0=$SECONDS; shift 3
  timeout "$secs" "$@" > "$out/$file" 2>&1 || rc=$?
  note "$(printf '%-58s %s (%ss, exit %s) -> %s' "$name" "$([ $rc = 0 ] && echo ok || echo FAILED)" $((SECONDS - t0)) $rc "$file")"
  return $rc
}

# ---- where things are ----
tlib=$(python3 -c 'import torch, os; print(os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cuda.so")); print("torch", torch.__version__, torch.version.cuda, file=__import__("sys").stderr)' 2>"$out/torch-version.txt")
{
  nvidia-smi -L; nvcc --version | tail -2; cmake --version | head -1; cat "$out/torch-version.txt"
  echo "libtorch_cuda: $tlib"; ldd "$tlib" 2>/dev/null | grep -i cufile
  readelf -d "$tlib" 2>/dev/null | grep -E 'RPATH|RUNPATH'
} > "$out/env.txt" 2>&1
nv_lib=$(ldd "$tlib" 2>/dev/null | awk '/libcufile.so.0/ {print $3}')
[ -f "$nv_lib" ] || nv_lib=""
nv_inc=""
pip_cufile=$(python3 -c 'import importlib.util as u; s = u.find_spec("nvidia.cufile"); print(list(s.submodule_search_locations)[0])' 2>/dev/null)
for d in ${CUDA_HOME:-/usr/local/cuda} /usr/local/cuda /usr/local/cuda/targets/x86_64-linux "$pip_cufile" /usr; do
  [ -n "$d" ] && [ -z "$nv_inc" ] && [ -f "$d/include/cufile.h" ] && nv_inc=$d/include
  [ -n "$d" ] && [ -z "$nv_lib" ] && for l in "$d/lib64/libcufile.so.0" "$d/lib/libcufile.so.0"; do [ -f "$l" ] && nv_lib=$l && break; done
done
[ -z "$nv_inc" ] && nv_inc=$(dirname "$(timeout 60 find / -xdev -name cufile.h -path '*include*' 2>/dev/null | grep -v -e "$root" -e phxfile | head -1)" 2>/dev/null)
[ -z "$nv_lib" ] && nv_lib=$(timeout 60 find / -xdev -name libcufile.so.0 2>/dev/null | grep -v -e "$root" -e phxfile -e gpu-phxfile | head -1)
nv_lib=$(readlink -f "$nv_lib" 2>/dev/null || echo "$nv_lib")
cuda_inc=""
for d in ${CUDA_HOME:+$CUDA_HOME/include} /usr/local/cuda/include "$(dirname "$(readlink -f "$(command -v nvcc)")")/../include" /usr/include; do
  [ -z "$cuda_inc" ] && [ -f "$d/cuda.h" ] && cuda_inc=$d
done
cuda_inc=${cuda_inc:-/usr/local/cuda/include}
{ echo "NVIDIA cufile.h: $nv_inc/cufile.h"; echo "NVIDIA libcufile: $nv_lib"; echo "CUDA include: $cuda_inc"
  echo "udev data before this run:"; ls -la /run/udev/data 2>&1 | head -20; } >> "$out/env.txt"
note "NVIDIA cufile.h in ${nv_inc:-NOT FOUND}; libcufile ${nv_lib:-NOT FOUND}"

scratch=/tmp/phxfile-gpu
mkdir -p "$scratch"
dd if=/dev/zero of="$scratch/odirect-probe" bs=4096 count=1 oflag=direct status=none 2>/dev/null ||
  { scratch=$root/build/phxfile-scratch; mkdir -p "$scratch"; }
rm -f "$scratch/odirect-probe"
cat > "$scratch/cufile.json" <<JSON
{
  // the same file for both libraries: NVIDIA's defaults otherwise
  "logging": { "dir": "$out", "level": "ERROR" },
  "properties": { "allow_compat_mode": true }
}
JSON
export CUFILE_ENV_PATH_JSON=$scratch/cufile.json

# ---- 1 build ----
step "1 build (libphoenix, libphxfile.so, libcufile.so.0, tests)" build.txt 240 bash -c "
  cmake -S phxfile-abi -B '$B' -DCMAKE_BUILD_TYPE=Release -DURING_STATIC='$root/.gpu/uring/lib/liburing.a' \
    -DURING_INCLUDE='$root/.gpu/uring/include' && cmake --build '$B' -j 16 && ls -la '$B' && readelf -d '$B/libcufile.so.0' | grep -E 'SONAME|NEEDED|RUNPATH'" ||
  { note "build failed: nothing else can run"; exit 1; }

# ---- 2 the shim's tests on the GPU ----
step "2 shim tests, cuda connector" shim-tests-cuda.txt 240 bash -c "
  set -o pipefail; st=0; for t in test_api test_batch test_stream test_config test_exit test_dlopen test_stats; do
    PHX_CONNECTOR=cuda CUFILE_ENV_PATH_JSON= LD_LIBRARY_PATH='$B' timeout 90 '$B/tests/'\$t 2>&1 | grep -v '^phxfile:' | tail -5 || st=1
  done; exit \$st"
grep -q FAILED "$out/shim-tests-cuda.txt" && note "  (a shim test failed on the GPU: see shim-tests-cuda.txt)"

# ---- 3 ABI: layout, then NVIDIA-compiled program on our library, without udev data ----
hidden=""
if [ -d /run/udev/data ] && [ -n "$(ls -A /run/udev/data 2>/dev/null)" ]; then
  mv /run/udev/data /run/udev/data.phxfile-hidden && hidden=1 && note "udev data present in the image: hidden while ours runs"
fi
restore_udev() { [ -n "$hidden" ] && rm -rf /run/udev/data && mv /run/udev/data.phxfile-hidden /run/udev/data && hidden=""; }
trap restore_udev EXIT
step "3a header layout: NVIDIA's cufile.h vs ours (diff)" abi-layout.txt 60 bash -c "
  core=''
  gcc -O0 -I'$nv_inc' -I'$cuda_inc' '$G/layout.c' -o '$B/layout-nvidia' ||
    { echo 'retrying without the newest parameter names'; core=-DPHX_LAYOUT_CORE; gcc -O0 \$core -I'$nv_inc' -I'$cuda_inc' '$G/layout.c' -o '$B/layout-nvidia'; } &&
  gcc -O0 \$core -Wall -Wextra -Werror -Iphxfile-abi/include '$G/layout.c' -o '$B/layout-ours' &&
  '$B/layout-nvidia' > '$out/layout-nvidia.txt' && '$B/layout-ours' > '$out/layout-ours.txt' &&
  wc -l '$out/layout-nvidia.txt' && diff '$out/layout-nvidia.txt' '$out/layout-ours.txt' && echo 'identical layout and values'"
step "3b build abi_check against NVIDIA's cufile.h" abi-build.txt 120 \
  nvcc -O2 -arch=sm_90 -I"$nv_inc" "$G/abi_check.cu" -Xlinker "$nv_lib" -ldl -o "$B/abi_check"
step "3c abi_check (NVIDIA-compiled) on OUR libcufile.so.0, no udev data" abi-check-ours.txt 120 \
  env LD_LIBRARY_PATH="$B" PHX_CONNECTOR=cuda "$B/abi_check" "$scratch" "$B"

# ---- 4 torch.cuda.gds through ours ----
step "4 torch.cuda.gds GdsFile save+load through OUR library" torch-gds-ours.txt 240 \
  env LD_PRELOAD="$B/libcufile.so.0" LD_LIBRARY_PATH="$B" python3 "$G/gds_roundtrip.py" "$scratch" "$B"
restore_udev
# UPTO=4: our library's checks only (steps 1-4), without NVIDIA's runs and the benchmark
[ "${UPTO:-6}" -le 4 ] && { note "stopped after step 4 (UPTO=${UPTO})"; exit 0; }

# ---- 5 NVIDIA's library in compatibility mode ----
step "5a fake udev data for NVIDIA's compatibility mode" udev.txt 30 python3 -c '
import os
os.makedirs("/run/udev/data", exist_ok=True)
fstypes = {}
for line in open("/proc/self/mountinfo"):
    p = line.split(); fstypes[p[2]] = p[p.index("-") + 1]
for dev in os.listdir("/sys/class/block"):
    try: majmin = open(f"/sys/class/block/{dev}/dev").read().strip()
    except OSError: continue
    path = "/run/udev/data/b" + majmin
    fstype = fstypes.get(majmin, "ext4")
    if not os.path.exists(path):
        open(path, "w").write("E:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=" + fstype + "\n")
print(sorted(os.listdir("/run/udev/data")))'
step "5b abi_check on NVIDIA's libcufile (compat mode), for comparison" abi-check-nvidia.txt 120 \
  env LD_LIBRARY_PATH="$(dirname "$nv_lib")" "$B/abi_check" "$scratch" ""
step "5c torch.cuda.gds through NVIDIA's library, for comparison" torch-gds-nvidia.txt 180 \
  python3 "$G/gds_roundtrip.py" "$scratch" ""

# ---- 6 the same read workload through both ----
step "6a build bench against NVIDIA's cufile.h" bench-build.txt 120 \
  nvcc -O2 -arch=sm_90 -I"$nv_inc" "$G/bench.cu" -Xlinker "$nv_lib" -ldl -o "$B/bench"
step "6b 4 GiB file, page cache warmed" bench-file.txt 120 bash -c "
  head -c 64M /dev/urandom > '$scratch/chunk' && for i in \$(seq 64); do cat '$scratch/chunk'; done > '$scratch/bench.bin' &&
  rm '$scratch/chunk' && sync && cat '$scratch/bench.bin' > /dev/null && ls -la '$scratch/bench.bin' && free -g"
# (timeout runs programs, not shell functions: the environment goes through env)
ours=(env LD_PRELOAD="$B/libcufile.so.0" LD_LIBRARY_PATH="$B" "$B/bench" "$scratch/bench.bin")
nvidia=(env LD_LIBRARY_PATH="$(dirname "$nv_lib")" "$B/bench" "$scratch/bench.bin")
for round in 1 2; do
  step "6c round $round: ours, page cache" bench-ours-$round.txt 120 "${ours[@]}" ours
  step "6c round $round: NVIDIA compat mode, page cache" bench-nvidia-$round.txt 120 "${nvidia[@]}" nvidia
done
step "6d ours, O_DIRECT" bench-ours-direct.txt 150 "${ours[@]}" ours-direct direct
step "6d NVIDIA compat mode, O_DIRECT" bench-nvidia-direct.txt 150 "${nvidia[@]}" nvidia-direct direct
cat "$out"/bench-*.txt > "$out/bench-all.txt"
step "6e table" table.txt 30 python3 - "$out/bench-all.txt" <<'PY'
import collections, statistics, sys
vals = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) == 4 and p[0] == "RESULT":
        vals[(p[1], p[2])].append(float(p[3]))
    elif p[:1] in (["INFO"], ["ERROR"]):
        print(line.rstrip())
med = lambda lib, key: statistics.median(vals[(lib, key)]) if vals.get((lib, key)) else float("nan")
# time until the first transfer can start: open + first handle + first buffer registration
for lib in ("ours", "nvidia"):
    parts = [med(lib, k) for k in ("open_us", "handle_first_us", "bufreg_first_us")]
    if all(x == x for x in parts):
        vals[(lib, "ready_us")] = [sum(parts)]
def row(name, key, a, b, unit, higher_better):
    x, y = med(a, key), med(b, key)
    r = (x / y if higher_better else y / x) if x == x and y == y and x and y else float("nan")
    print(f"| {name:34s} | {x:12.3f} | {y:12.3f} | {unit:5s} | {r:8.3g}x |")
print("\n| measure (median of runs)            |         ours |       NVIDIA | unit  | ours better by |")
print("|------------------------------------|--------------|--------------|-------|---------|")
for key, name in [("open_us", "cuFileDriverOpen"), ("handle_first_us", "HandleRegister, first"),
                  ("handle_us", "HandleRegister"), ("bufreg_first_us", "BufRegister 64 MiB, first"),
                  ("bufreg_us", "BufRegister 64 MiB"), ("bufreg_4g_us", "BufRegister 4 GiB"),
                  ("ready_us", "open + first handle + first buffer")]:
    row(name, key, "ours", "nvidia", "us", False)
for mode, a, b in [("page cache", "ours", "nvidia"), ("O_DIRECT", "ours-direct", "nvidia-direct")]:
    for sz in [4096, 65536, 1 << 20, 16 << 20, 64 << 20, 4 << 30]:
        if (a, f"read_{sz}_gbps") not in vals and (b, f"read_{sz}_gbps") not in vals:
            continue
        label = f"{sz >> 10} KiB" if sz < 1 << 20 else f"{sz >> 20} MiB" if sz < 1 << 30 else f"{sz >> 30} GiB"
        row(f"cuFileRead {label}, {mode}", f"read_{sz}_gbps", a, b, "GB/s", True)
        if sz <= 65536:
            row(f"  latency {label}, {mode}", f"read_{sz}_us", a, b, "us", False)
for lib in ("ours", "nvidia", "ours-direct", "nvidia-direct"):
    print(f"verify {lib}: {vals.get((lib, 'verify'))}")
PY
cat "$out/table.txt"
rm -f "$scratch/bench.bin"
ls "$out"/cufile*.log >/dev/null 2>&1 && note "NVIDIA's cufile.log kept in \$OUT"
note "done in ${SECONDS}s"
