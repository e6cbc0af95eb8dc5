#!/usr/bin/env bash
# hang_dump.sh SECS CMD...: runs CMD; if it is still running after SECS, prints what each of
# its threads is blocked in (name, wchan, syscall, kernel stack), then kills it and exits 124.
# For a GPU-machine run that gets one try: a hang then names its place.
secs=$1; shift
"$@" &
pid=$!
for _ in $(seq "$secs"); do
  kill -0 "$pid" 2>/dev/null || { wait "$pid"; exit $?; }
  sleep 1
done
echo "hang_dump: still running after ${secs}s; threads of $pid:"
for t in /proc/"$pid"/task/*; do
  echo "-- $(cat "$t/comm") tid ${t##*/} wchan $(cat "$t/wchan" 2>/dev/null) syscall $(cut -d' ' -f1 "$t/syscall" 2>/dev/null)"
  head -6 "$t/stack" 2>/dev/null
done
command -v gdb >/dev/null && timeout 60 gdb -p "$pid" -batch -ex "thread apply all bt" 2>/dev/null | grep -E '^(#|Thread)' | head -120
kill -9 "$pid"
exit 124
