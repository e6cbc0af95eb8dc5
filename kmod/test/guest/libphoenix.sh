#!/bin/sh
# libphoenix's own C tests, unchanged, in the guest through the emu connector in one mode:
#   libphoenix.sh p2p|staging
# Files live on the ext4 NVMe namespace (/mnt), so O_DIRECT really DMAs into device memory.
# With phx.lp=full on the kernel command line every test runs; otherwise the quick ones (the
# slow ones, test_io, test_eintr and test_races, take ~80 s per mode under TCG).
mode=$1
export LD_LIBRARY_PATH=/tests/lp PHX_CONNECTOR=emu PHX_MODE=$mode TMPDIR=/mnt/lp
mkdir -p $TMPDIR
tests="test_async test_batch test_registry test_stream test_uring_refused"
grep -q 'phx.lp=full' /proc/cmdline && tests="$tests test_eintr test_io test_races"
for t in $tests; do
  start=$(date +%s)
  /tests/lp/$t > /tmp/$t.out 2>&1
  rc=$?
  took=$(( $(date +%s) - start ))
  mapped=$(cat /sys/class/phxfs/phxfs_dev0/mapped_bytes)
  if [ $rc = 0 ] && [ "$mapped" = 0 ] && grep -q "mode $mode\|" /tmp/$t.out; then
    echo "@@PHX lp-$mode-$t PASS ${took}s $(grep -m1 '^mode ' /tmp/$t.out)"
  else
    echo "@@PHX lp-$mode-$t FAIL exit $rc, mapped_bytes $mapped after: $(tail -5 /tmp/$t.out | tr '\n' '|')"
    echo "---- $t ($mode) output:"; head -40 /tmp/$t.out
  fi
done
rm -rf $TMPDIR
