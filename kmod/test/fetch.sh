#!/usr/bin/env bash
# Installs the host tools the guest harness needs (qemu-system-x86, busybox-static, dwarves,
# build tools) through apt, and downloads + extracts the Debian 12 kernel images and headers for
# 6.1 and 6.12 under build/kmod/kernels/<series>/ without installing them on this machine.
# Idempotent: a second run with everything present does nothing and prints the two kernel dirs.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD/build/kmod/kernels
mkdir -p "$top"
# Tools in /usr/sbin and /sbin (mkfs.ext4, debugfs) are installed for every user but are not on
# an unprivileged user's PATH on Debian.
export PATH="$PATH:/usr/sbin:/sbin"

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
# the list whole, not through grep -q: busybox writes it a name per write(), and under pipefail
# grep's early exit made that SIGPIPE a missing package at random
[ -x /bin/busybox ] && [[ $'\n'"$(/bin/busybox --list 2>/dev/null)"$'\n' == *$'\nmdev\n'* ]] \
  && [[ "$(file -L /bin/busybox 2>/dev/null)" == *static* ]] || need+=(busybox-static)
command -v pahole >/dev/null || need+=(dwarves)
command -v file >/dev/null || need+=(file)
command -v cpio >/dev/null || need+=(cpio)
command -v bc >/dev/null || need+=(bc)
command -v xz >/dev/null || need+=(xz-utils)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v gcc >/dev/null || need+=(gcc make)
[ -f /usr/include/liburing.h ] && ls /usr/lib/*/liburing.a >/dev/null 2>&1 || need+=(liburing-dev)
if [ ${#need[@]} -gt 0 ]; then
  echo "fetch: the QEMU guest tests need ${need[*]}" >&2
  scripts/apt-install.sh fetch --no-install-recommends "${need[@]}"
fi

# deps PKG: the package's Depends that are kernel packages (headers-common, kbuild)
kdeps() { apt-cache depends "$1" 2>/dev/null | sed -n 's/^ *Depends: \(linux-[a-z0-9.+-]*\)$/\1/p'; }

# fetch_series NAME META_IMAGE META_HEADERS
fetch_series() {
  local name=$1 dir=$top/$1
  if [ -f "$dir/.done" ]; then return 0; fi
  local img hdr pkgs=()
  img=$(kdeps "$2" | grep '^linux-image-' | head -1)
  hdr=$(kdeps "$3" | grep '^linux-headers-' | head -1)
  [ -n "$img" ] && [ -n "$hdr" ] || { echo "fetch: cannot resolve $2/$3 through apt-cache" >&2; return 1; }
  pkgs=("$img" "$hdr")
  local d; for d in $(kdeps "$hdr"); do pkgs+=("$d"); done
  rm -rf "$dir"; mkdir -p "$dir/debs" "$dir/root"
  echo "fetch: $name: downloading ${pkgs[*]}" >&2
  (cd "$dir/debs" && apt-get download -q "${pkgs[@]}" >&2)
  local f; for f in "$dir"/debs/*.deb; do dpkg-deb -x "$f" "$dir/root"; done
  rm -rf "$dir/debs"
  local kver; kver=$(ls "$dir/root/lib/modules" | head -1)
  [ -f "$dir/root/boot/vmlinuz-$kver" ] || { echo "fetch: $name: no vmlinuz for $kver" >&2; return 1; }
  # The headers' Makefile and scripts point at /usr/src and /usr/lib/linux-kbuild-*: relink
  # them into the extracted tree so that make -C works without installing anything.
  local hdir="$dir/root/usr/src/linux-headers-$kver"
  local t; for t in "$hdir"/* ; do
    if [ -L "$t" ]; then
      local l; l=$(readlink "$t")
      case $l in /*) ln -sfn "$dir/root$l" "$t" ;; esac
    fi
  done
  # the arch headers' Makefile includes the -common tree by absolute path
  grep -rl '/usr/src/linux-headers-' "$hdir/Makefile" 2>/dev/null | while read -r m; do
    sed -i "s#/usr/src/linux-headers-#$dir/root/usr/src/linux-headers-#g" "$m"; done
  echo "$kver" > "$dir/kver"
  touch "$dir/.done"
}
fetch_series 6.1 linux-image-amd64 linux-headers-amd64
fetch_series 6.12 linux-image-6.12-amd64 linux-headers-6.12-amd64
echo "$top/6.1 $top/6.12"
