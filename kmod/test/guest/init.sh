#!/bin/busybox sh
# PID 1 of the test guest: loads the drivers and phxfs, runs the tests, reports every result
# as "@@PHX <name> PASS|FAIL <detail>" on the console, powers off.
/bin/busybox --install -s /bin
export PATH=/bin:/tests:/tests/lp
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/shm && mount -t tmpfs tmp /tmp
series=$(cat /series)
report() { echo "@@PHX $1 $2 $3"; }
for m in $(cat /lib/modules/order); do insmod /lib/modules/$m || report "insmod-$m" FAIL "insmod failed"; done

# NVMe namespaces by serial (controller numbering varies)
nvme_dev() {
  for c in /sys/class/nvme/nvme*; do
    [ "$(cat $c/serial 2>/dev/null | tr -d ' ')" = "$1" ] && { echo /dev/$(basename $c)n1; return; }
  done
}
for i in $(seq 50); do [ -n "$(nvme_dev phxraw)" ] && [ -n "$(nvme_dev phxext4)" ] && break; sleep 0.1; done
RAW=$(nvme_dev phxraw)
EXT=$(nvme_dev phxext4)
for i in $(seq 50); do [ -b "$RAW" ] && [ -b "$EXT" ] && break; sleep 0.1; done
[ -b "$RAW" ] && [ -b "$EXT" ] || report nvme FAIL "namespaces not found (raw=$RAW ext4=$EXT)"

MiB=1048576
load_phxfs() {
  if insmod /lib/modules/phxfs.ko "$@"; then
    for i in $(seq 50); do [ -c /dev/phxfs_dev0 ] && return 0; sleep 0.1; done
  fi
  return 1
}
unload_phxfs() { # name
  if rmmod phxfs && [ ! -e /dev/phxfs_dev0 ]; then report "$1" PASS "rmmod phxfs ok"; else report "$1" FAIL "rmmod phxfs failed"; fi
}

if load_phxfs; then BDF=$(cat /sys/class/phxfs/phxfs_dev0/pci_bdf); report load PASS "$(cat /sys/class/phxfs/phxfs_dev0/backend) $(cat /sys/class/phxfs/phxfs_dev0/pci_bdf)"; else report load FAIL "insmod phxfs or /dev/phxfs_dev0"; fi
if grep -q 'phx.only=lp' /proc/cmdline; then
  # iterating on libphoenix: only its tests, in both modes
  mount -t ext4 $EXT /mnt; /tests/libphoenix.sh p2p; umount /mnt; rmmod phxfs
  load_phxfs map_mode=staging staging_mb=8; mount -t ext4 $EXT /mnt; /tests/libphoenix.sh staging; umount /mnt; rmmod phxfs
  dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace' && dmesg | tail -60
  poweroff -f
fi
phxfs_test info
phxfs_test read $RAW $((32 * MiB)) 1 0 0 @odirect-raw-read
phxfs_test read $RAW $((4 * MiB)) 1 $((12 * MiB)) $((12 * MiB)) @odirect-raw-read-offset
phxfs_test write $RAW $((8 * MiB)) 3 $((40 * MiB)) 0 @odirect-raw-write
mount -t ext4 $EXT /mnt || report mount-ext4 FAIL "mount $EXT"
phxfs_test read /mnt/data.bin $((24 * MiB)) 1 0 0 @ext4-wrong-seed-control >/tmp/control.txt
# a control: the verifier must notice the wrong pattern
if grep -q ' FAIL ' /tmp/control.txt; then report verifier-control PASS "a wrong pattern is caught"; else report verifier-control FAIL "$(cat /tmp/control.txt)"; fi
phxfs_test read /mnt/data.bin $((24 * MiB)) 2 0 0 @odirect-ext4-read
phxfs_test write /mnt/out.bin $((8 * MiB)) 4 0 1 @odirect-ext4-write
phxfs_test uring $RAW $((16 * MiB)) 1 0 @uring-read
phxfs_test uring /mnt/data.bin $((16 * MiB)) 2 0 @uring-ext4-read
phxfs_test uring-fixed $RAW $((4 * MiB)) 1
phxfs_test revoke $RAW
phxfs_test revoke-busy $RAW
phxfs_test hostile
phxfs_test leak 1000
if [ -x /tests/libphoenix.sh ]; then
  /tests/libphoenix.sh p2p
  export LD_LIBRARY_PATH=/tests/lp
  # nothing configured: the library finds the module, picks the emu connector and p2p
  lp_check read $RAW 32 1 p2p @lp-auto-p2p
  PHX_MODE=p2p lp_check revoke $RAW @lp-p2p-revoke
  # p2p against the bounce path (and staging), side by side, rounds interleaved (docs/benchmarks.md)
  for r in 1 2 3; do
    for m in p2p bounce staging; do PHX_MODE=$m PHX_PINNED_MB=16 lp_check bench $RAW 32 8 @bench-$m-r$r; done
  done
  unset LD_LIBRARY_PATH
fi
phxfs_test kill $RAW
umount /mnt
unload_phxfs unload-after-kill

if load_phxfs map_mode=staging staging_mb=8; then report load-staging PASS "map_mode=$(cat /sys/class/phxfs/phxfs_dev0/map_mode)"; else report load-staging FAIL "insmod map_mode=staging"; fi
phxfs_test staging-limit 8
phxfs_test read $RAW $((8 * MiB)) 1 0 0 @staging-odirect-read
if [ -x /tests/libphoenix.sh ]; then
  mount -t ext4 $EXT /mnt; /tests/libphoenix.sh staging; umount /mnt
  # auto mode on a staging-mode module: staging; a 32 MiB registration through 8 MiB of slots
  LD_LIBRARY_PATH=/tests/lp lp_check read $RAW 32 1 staging @staging-registration-larger-than-pool
fi
unload_phxfs unload-staging

# the memory type real GPUs get on stock kernels (no CONFIG_PCI_P2PDMA): MEMORY_DEVICE_PCI_P2PDMA
# pages registered by the module itself, mapped uncached
if load_phxfs mem_type=p2pdma; then
  report p2pdma-load PASS "mem_type=$(cat /sys/class/phxfs/phxfs_dev0/mem_type)"
  phxfs_test read $RAW $((16 * MiB)) 1 0 0 @p2pdma-odirect-read
  phxfs_test write $RAW $((4 * MiB)) 5 $((56 * MiB)) 0 @p2pdma-odirect-write
  phxfs_test uring $RAW $((8 * MiB)) 1 0 @p2pdma-uring-read
  phxfs_test leak 200 @p2pdma-leak
  unload_phxfs p2pdma-unload
else
  report p2pdma-load FAIL "insmod mem_type=p2pdma: $(dmesg | tail -3 | tr '\n' '|')"
fi

if insmod /lib/modules/phxfs.ko map_mode=bogus 2>/dev/null; then report bad-param FAIL "map_mode=bogus accepted"; rmmod phxfs; else report bad-param PASS "map_mode=bogus refused"; fi

if dmesg | grep -E 'WARNING:|BUG:|Oops|general protection|Call Trace|refcount_t|list_del corruption|kernel BUG' > /tmp/bad.txt; then
  report dmesg FAIL "$(head -3 /tmp/bad.txt | tr '\n' '|')"
  dmesg | tail -80
else
  report dmesg PASS "no warnings or oopses ($(dmesg | grep -c phxfs) phxfs lines)"
fi
sync
echo "@@PHX-DONE $series"
poweroff -f
