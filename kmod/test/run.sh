#!/usr/bin/env bash
# The phxfs module end to end in QEMU guests: Debian 12's 6.1 and 6.12 kernels (from Debian's
# packages, extracted, not installed), an emulated NVMe controller with a raw and an ext4
# namespace, and an ivshmem-plain device whose BAR stands in for GPU memory (the emu backend).
#
#   kmod/test/run.sh [6.1|6.12 ...]     (default: both)
#
# Installs what it needs through apt, builds the module per kernel and the static guest
# programs, boots each kernel under TCG, runs the guest tests and checks on the host what the
# guest wrote to the disks. Results: build/kmod/results-<kernel>.json (one object per test) and
# build/kmod/guest-<kernel>.log (the console). The last line is
#   guest tests: P/T passed on 6.1, P/T passed on 6.12
# and the exit status is non-zero when any test failed or a guest did not finish.
# Downloads and builds are cached under build/kmod/ (delete it to start over).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
out=$root/build/kmod
mkdir -p "$out"
series=("$@")
[ ${#series[@]} -gt 0 ] || series=(6.1 6.12)
GUEST_TIMEOUT=${GUEST_TIMEOUT:-420}

log() { echo "run.sh: $*" >&2; }

kmod/test/fetch.sh >/dev/null
export PATH="$PATH:/usr/sbin:/sbin"   # mkfs.ext4 and debugfs, off an unprivileged user's PATH
command -v mkfs.ext4 debugfs >/dev/null

# ---- host-built pieces shared by both kernels ----
tools=$out/guest-bin
mkdir -p "$tools"
src=kmod/test/guest/phxfs_test.c
if [ ! -x "$tools/phxfs_test" ] || [ "$src" -nt "$tools/phxfs_test" ] || [ kmod/include/uapi/phxfs_ioctl.h -nt "$tools/phxfs_test" ] || [ kmod/test/guest/pattern.h -nt "$tools/phxfs_test" ]; then
  log "building the static guest test program"
  gcc -O2 -Wall -Wextra -Werror -static -Ikmod/include/uapi -pthread -o "$tools/phxfs_test" "$src" -luring
fi
# libphoenix and its C tests, run in the guest against the module (p2p and staging modes)
if [ -f kmod/test/build-libphoenix.sh ]; then
  kmod/test/build-libphoenix.sh "$out/libphoenix" >/dev/null
fi

# disks: a raw namespace with pattern seed 1 over its first 32 MiB, an ext4 one with data.bin
disk_raw=$out/raw.img disk_ext4=$out/ext4.img
make_disks() {
  rm -f "$disk_raw" "$disk_ext4"
  truncate -s 64M "$disk_raw"
  "$tools/phxfs_test" gen "$disk_raw" $((32 << 20)) 1 0
  local d; d=$(mktemp -d)
  "$tools/phxfs_test" gen "$d/data.bin" $((24 << 20)) 2 0
  truncate -s 512M "$disk_ext4"
  mkfs.ext4 -q -F -d "$d" "$disk_ext4"
  rm -rf "$d"
}

# deps KVER_ROOT KVER MOD_PATH...: prints the modules to insmod, dependencies first
mod_file() { ls "$1"/lib/modules/"$2"/kernel/"$3".ko* 2>/dev/null | head -1; }
mod_depends() {
  local f=$1
  case $f in
    *.xz) xz -dc "$f" ;;
    *) cat "$f" ;;
  esac | strings | sed -n 's/^depends=//p' | tr ',' ' '
}
declare -A modpath
index_modules() { # KROOT KVER: name -> file, for dependency lookup
  modpath=()
  local f n
  while IFS= read -r f; do
    n=$(basename "$f"); n=${n%%.ko*}; n=${n//-/_}
    modpath[$n]=$f
  done < <(find "$1/lib/modules/$2/kernel" -name '*.ko*')
}
declare -A seen
ordered=()
add_mod() {
  local n=${1//-/_}
  [ -n "${seen[$n]:-}" ] && return 0
  seen[$n]=1
  local f=${modpath[$n]:-}
  [ -n "$f" ] || { log "module $1 not found"; return 1; }
  local d
  for d in $(mod_depends "$f"); do add_mod "$d"; done
  ordered+=("$f")
}

build_initramfs() { # SERIES KROOT KVER MODULE_KO OUT
  local s=$1 kroot=$2 kver=$3 ko=$4 img=$5 d
  d=$(mktemp -d)
  mkdir -p "$d"/{bin,dev,proc,sys,mnt,tmp,lib/modules,tests}
  cp /bin/busybox "$d/bin/busybox"
  index_modules "$kroot" "$kver"
  seen=(); ordered=()
  add_mod nvme; add_mod ext4; add_mod crc32c_generic
  local i=0 f
  : > "$d/lib/modules/order"
  for f in "${ordered[@]}"; do
    local name; name=$(basename "$f"); name=${name%.xz}
    case $f in *.xz) xz -dc "$f" > "$d/lib/modules/$name" ;; *) cp "$f" "$d/lib/modules/$name" ;; esac
    echo "$name" >> "$d/lib/modules/order"
    i=$((i + 1))
  done
  cp "$ko" "$d/lib/modules/phxfs.ko"
  cp "$tools/phxfs_test" "$d/tests/"
  if [ -d "$out/libphoenix/guest" ]; then cp -a "$out/libphoenix/guest/." "$d/"; fi
  cp kmod/test/guest/init.sh "$d/init"
  chmod +x "$d/init"
  echo "$s" > "$d/series"
  (cd "$d" && find . | cpio -o -H newc --quiet | gzip -1) > "$img"
  rm -rf "$d"
}

# expected test names, in order; a name never reported counts as failed. Names marked "full"
# run only on the kernels in LP_FULL (libphoenix's slow tests: once is enough for CI time).
LP_FULL=${LP_FULL-6.12}
expected_tests() { # SERIES
  local full=0 k
  for k in $LP_FULL; do [ "$k" = "$1" ] && full=1; done
  awk -v full=$full '$2 != "full" || full { print $1 }' kmod/test/guest/expected.txt
}
guest_append() { # SERIES
  local k
  for k in $LP_FULL; do [ "$k" = "$1" ] && { echo phx.lp=full; return; }; done
}

total_summary=()
overall=0
for s in "${series[@]}"; do
  kroot=$out/kernels/$s/root
  kver=$(cat "$out/kernels/$s/kver")
  kdir=$kroot/usr/src/linux-headers-$kver
  log "$s ($kver): building phxfs.ko"
  kmod/build.sh "$kdir" "$out/mod-$s" >"$out/build-$s.log" 2>&1 || { cat "$out/build-$s.log" >&2; exit 1; }
  # the nvidia backend linked against the driver's exports (how it is built on kernels >= 6.5),
  # compiled against a Module.symvers that names them: checks that path builds, loads nowhere
  printf '0x00000000\t%s\tnvidia\tEXPORT_SYMBOL\t\n' nvidia_p2p_get_pages nvidia_p2p_put_pages \
    nvidia_p2p_free_page_table >"$out/nv-fake.symvers"
  if kmod/build.sh "$kdir" "$out/mod-$s-nvlinked" NVIDIA_SYMVERS="$out/nv-fake.symvers" >"$out/build-$s-nvlinked.log" 2>&1 &&
     modinfo_dep=$(strings "$out/mod-$s-nvlinked/phxfs.ko" | sed -n 's/^depends=//p') && [ "$modinfo_dep" = nvidia ]; then
    nv_linked="@@PHX build-nvidia-linked PASS phxfs.ko built with NVIDIA_SYMVERS depends on nvidia"
  else
    nv_linked="@@PHX build-nvidia-linked FAIL see $out/build-$s-nvlinked.log"
  fi
  make_disks
  build_initramfs "$s" "$kroot" "$kver" "$out/mod-$s/phxfs.ko" "$out/initrd-$s.gz"
  log "$s: booting under TCG"
  console=$out/guest-$s.log
  start=$SECONDS
  rc=0
  timeout "$GUEST_TIMEOUT" qemu-system-x86_64 -machine q35 -accel tcg -cpu max -smp 2 -m 1536 \
    -nographic -no-reboot -monitor none -serial stdio \
    -kernel "$kroot/boot/vmlinuz-$kver" -initrd "$out/initrd-$s.gz" \
    -append "console=ttyS0 panic=-1 loglevel=4 tsc=reliable $(guest_append "$s") ${GUEST_APPEND:-}" \
    -drive file="$disk_raw",if=none,id=raw,format=raw -device nvme,drive=raw,serial=phxraw \
    -drive file="$disk_ext4",if=none,id=ext,format=raw -device nvme,drive=ext,serial=phxext4 \
    -object memory-backend-ram,size=256M,id=shm -device ivshmem-plain,memdev=shm \
    </dev/null >"$console" 2>&1 || rc=$?
  log "$s: guest finished in $((SECONDS - start)) s (qemu exit $rc)"
  echo "$nv_linked" >>"$console"
  # what the guest wrote, checked from the host
  "$tools/phxfs_test" check "$disk_raw" $((8 << 20)) 3 $((40 << 20)) @host-raw-verify >>"$console" 2>&1 || true
  tmpf=$(mktemp)
  if debugfs -R "dump /out.bin $tmpf" "$disk_ext4" >/dev/null 2>&1 && [ -s "$tmpf" ]; then
    "$tools/phxfs_test" check "$tmpf" $((8 << 20)) 4 0 @host-ext4-verify >>"$console" 2>&1 || true
  else
    echo "@@PHX host-ext4-verify FAIL /out.bin not found in the ext4 image" >>"$console"
  fi
  rm -f "$tmpf"
  # results: the last report of each expected test
  json=$out/results-$s.json
  pass=0 total=0
  {
    echo "{\"kernel\": \"$kver\", \"series\": \"$s\", \"tests\": ["
    sep=""
    while read -r t; do
      [ -n "$t" ] || continue
      total=$((total + 1))
      line=$(grep -ao "@@PHX $t .*" "$console" | tail -1 | tr -d '\r' || true)
      status=$(echo "$line" | awk '{print $3}')
      detail=$(echo "$line" | cut -d' ' -f4- | sed 's/\\/\\\\/g; s/"/\\"/g')
      [ -n "$status" ] || { status=MISSING; detail="never reported (guest crashed or hung?)"; }
      [ "$status" = PASS ] && pass=$((pass + 1))
      printf '%s  {"name": "%s", "status": "%s", "detail": "%s"}' "$sep" "$t" "$status" "$detail"
      sep=$',\n'
    done < <(expected_tests "$s")
    echo ""
    echo "], \"passed\": $pass, \"total\": $total}"
  } >"$json"
  grep -ao "@@PHX .*" "$console" | grep -v " PASS " | sed "s/^@@PHX /run.sh: $s: /" >&2 || true
  if [ "$pass" != "$total" ]; then
    overall=1
    log "$s: $pass/$total passed; console in $console"
    grep -aE 'WARNING|BUG:|Oops|Call Trace|Kernel panic' "$console" | head -20 >&2 || true
  fi
  total_summary+=("$pass/$total passed on $s")
done
summary=$(IFS=,; echo "${total_summary[*]}" | sed 's/,/, /g')
echo "guest tests: $summary"
exit $overall
