#!/usr/bin/env bash
# Run ON THE GPU MACHINE (carry .gpu/uring): the ramp (PHX_RAMP, batch.c) A/B below the JVM.
# Builds libphoenix from this tree and phoenix-native/tests/gpu/load_shape.cu, writes a 5 GiB
# file (RAMP_FILE) and, page cache warm, runs load_shape's c0 and c12 (timed batches of 64 MiB
# requests into a buffer allocated once, from file offset 0 and 12 KiB) in a fresh process per
# ramp setting, the settings interleaved (RAMPS, default "0 2 4 6"; ALTERNATIONS, default 5;
# ROUNDS batches a process, default 8). Prints each process's median and, per setting, the
# median of those and its ratio to the first setting within each alternation. Output also in
# $OUT/ramp-ab.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"
bash scripts/gpu/build.sh || exit 1
nvcc -O2 -arch=sm_90 -Iphoenix-native/include phoenix-native/tests/gpu/load_shape.cu \
  -Lbuild/gpu -lphoenix -Xlinker -rpath="$root/build/gpu" -o build/gpu/load_shape || exit 1
f=${RAMP_FILE:-/tmp/ramp-5g.bin}
[ -f "$f" ] || dd if=/dev/zero of="$f" bs=64M count=80 status=none
cat "$f" > /dev/null
ramps=(${RAMPS:-0 2 4 6})
{
  for a in $(seq 1 "${ALTERNATIONS:-5}"); do
    for r in "${ramps[@]}"; do
      m=$(PHX_RAMP=$r build/gpu/load_shape "$f" "${ROUNDS:-8}" c0,c12 | grep '^median:')
      echo "alternation $a ramp $r $m"
    done
  done
} | tee "$out/ramp-runs.txt"
python3 - "$out/ramp-runs.txt" "${ramps[@]}" <<'PY' | tee "$out/ramp-ab.txt"
import re, statistics, sys
runs, ramps = {}, sys.argv[2:]
for line in open(sys.argv[1]):
    m = re.match(r"alternation (\d+) ramp (\d+) median: c0 ([\d.]+) c12 ([\d.]+)", line)
    if m:
        runs[(int(m[1]), m[2])] = (float(m[3]), float(m[4]))
alts = sorted({a for a, _ in runs})
for k, tok in enumerate(("c0", "c12")):
    print(f"{tok}:")
    for r in ramps:
        v = [runs[(a, r)][k] for a in alts if (a, r) in runs]
        ratios = [runs[(a, r)][k] / runs[(a, ramps[0])][k] for a in alts if (a, r) in runs and (a, ramps[0]) in runs]
        print(f"  ramp {r}: median {statistics.median(v):.2f} GB/s (processes {', '.join('%.2f' % x for x in v)});"
              f" / ramp {ramps[0]}: {statistics.median(ratios):.3f}x ({min(ratios):.3f}..{max(ratios):.3f})")
PY
