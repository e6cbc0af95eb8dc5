#!/usr/bin/env bash
# Run ON THE GPU MACHINE after scripts/gpu/ab.sh (which builds each prepared revision's
# libphoenix and writes the checkpoints): cold host loads, and what they leave for the next load.
# For COLD_ROUNDS rounds and each of the last revision's PHX_HUGE_FILL=1 and =0: every file of
# the checkpoint evicted (fsync + POSIX_FADV_DONTNEED), `phoenix load DIR --host --json` (cold:
# the host tensors are copied, read through the page cache), then one warm `load --host` with
# each revision (the files now mapped: what the cold load left in the page cache decides how
# long populating the mapping takes). Output in $OUT/cold-host.txt.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=${OUT:-gpu-results}; mkdir -p "$out"
dir=${COLD_DIR:-${AB_WORK:-/tmp/ab-checkpoints}/st-dense}
[ -x .gpu/jre/bin/java ] || tar -C .gpu -xJf .gpu/jre.tar.xz
mapfile -t revs < <(cut -d' ' -f1 .gpu/ab/order)
last=${revs[-1]}
load() { # REV [VAR=V...]: one load's seconds, read seconds and GB/s
  local rev=$1; shift
  env PHX_LIBRARY_PATH="$root/build/ab/$rev/build/libphoenix.so" "$@" .gpu/jre/bin/java --enable-native-access=ALL-UNNAMED \
    -cp ".gpu/ab/$rev/phoenix-cli.jar" io.phxfs.cli.PhoenixCli load "$dir" --host --json 2>/dev/null |
    python3 -c "import json,sys; j=json.load(sys.stdin); print('%7.1f ms (read %7.1f ms, %5.2f GB/s)' % (j['seconds']*1e3, j['read_seconds']*1e3, j['gb_per_s']))"
}
evict() {
  python3 - "$dir" <<'PY'
import os, sys
for n in os.listdir(sys.argv[1]):
    fd = os.open(os.path.join(sys.argv[1], n), os.O_RDONLY)
    os.fsync(fd)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
PY
}
{
  echo "cold host loads of $dir with $last, then a warm host load with each revision (${revs[*]})"
  for r in $(seq "${COLD_ROUNDS:-3}"); do
    for hf in 1 0; do
      evict
      echo "round $r, PHX_HUGE_FILL=$hf: cold $(load "$last" PHX_HUGE_FILL=$hf)"
      for rev in "${revs[@]}"; do echo "    then warm, $rev: $(load "$rev")"; done
    done
  done
} 2>&1 | tee "$out/cold-host.txt"
