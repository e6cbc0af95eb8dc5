#!/usr/bin/env bash
# The ./phoenix launcher as a user meets it on the first run after a build: Ctrl-C while it
# records the start-up cache ends the command (it used to be swallowed, and the command ran to
# completion), leaves no half-written cache and runs nothing; the next run records the cache
# and works. It gives the Java heap transparent huge pages where the kernel has them (phoenix
# info says so), and not with PHX_THP=0. Runs on a copy of the launcher beside the built jar, in a directory of its own, so
# the checkout's cache is left alone. test-all.sh runs it after the Maven build.
set -euo pipefail
cd "$(dirname "$0")/.."
jar=samples/target/phoenix-cli.jar
[ -f "$jar" ] || { echo "check-launcher: $jar missing: build first (mvn package)" >&2; exit 1; }

root=$(mktemp -d /tmp/phoenix-launcher.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/samples/target" "$root/scripts" "$root/bench"
cp phoenix "$root/phoenix"
cp scripts/setup.sh "$root/scripts/"
cp "$jar" "$root/samples/target/"

# Ctrl-C from a terminal signals the whole foreground process group: setsid gives the launcher
# one of its own, and kill -INT -PGID signals it as the terminal would. A command started with &
# by a script has SIGINT ignored, which no terminal user has: env restores the default.
err="$root/stderr"
setsid env --default-signal=INT,TERM "$root/phoenix" bench --host --size 2g --dir "$root/bench" >"$root/stdout" 2>"$err" &
pid=$!
for _ in $(seq 1 600); do
  grep -q 'recording the start-up cache' "$err" 2>/dev/null && break
  sleep 0.05
done
grep -q 'recording the start-up cache' "$err" || { echo "check-launcher: never saw the recording start" >&2; cat "$err" >&2; exit 1; }
sleep 0.5 # inside the training run
kill -INT -- "-$pid"
rc=0
for _ in $(seq 1 600); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$pid" 2>/dev/null; then
  kill -KILL -- "-$pid"; echo "check-launcher: Ctrl-C did not end the launcher within 30 s" >&2; cat "$err" >&2; exit 1
fi
wait "$pid" || rc=$?
fail() { echo "check-launcher: $*" >&2; echo "--- stderr" >&2; cat "$err" >&2; exit 1; }
[ "$rc" = 130 ] || fail "exit status $rc after Ctrl-C while recording (want 130)"
grep -q 'interrupted while recording the start-up cache; nothing ran' "$err" || fail "no word that it was interrupted"
if grep -q 'writing\|target:' "$err"; then fail "the command ran after Ctrl-C"; fi
[ -z "$(ls -A "$root/bench")" ] || fail "files left in --dir: $(ls -A "$root/bench")"
ls "$root/samples/target/"*.tmp >/dev/null 2>&1 && fail "a half-written cache was left: $(ls "$root/samples/target/")"
[ -s "$root/samples/target/phoenix-cli.aot" ] && fail "a cache was kept from an interrupted recording"
echo "Ctrl-C while recording: exit 130, nothing ran, nothing left"

# the next run records the cache and runs the command
out=$("$root/phoenix" --version 2>"$err") || fail "the next run failed"
grep -q 'recording the start-up cache' "$err" || fail "the next run did not record the cache again"
[ -s "$root/samples/target/phoenix-cli.aot" ] || fail "the next run left no cache (see phoenix-cli.aot.log)"
case "$out" in phoenix\ *) ;; *) fail "unexpected --version output: $out" ;; esac
echo "the next run recorded the cache and ran: $(echo "$out" | head -1)"

# the heap's pages: transparent huge pages where the kernel gives them (madvise or always),
# not with PHX_THP=0, and no flag (so no JVM warning) where it gives none
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
info=$("$root/phoenix" info 2>"$err") || fail "phoenix info failed"
line=$(echo "$info" | grep '^java heap: ') || fail "phoenix info has no 'java heap:' line: $info"
case "$thp" in
  madvise|always)
    case "$line" in "java heap: transparent huge pages ("*" MiB of this process in them, kernel mode $thp)") ;;
      *) fail "kernel mode $thp, but: $line" ;; esac ;;
  *) case "$line" in "java heap: 4 KiB pages ("*) ;; *) fail "kernel mode '${thp:-none}', but: $line" ;; esac ;;
esac
grep -qi 'warning' "$err" && fail "the JVM warned: $(cat "$err")"
echo "phoenix info: $line"
if [ "$thp" = madvise ]; then
  line=$(PHX_THP=0 "$root/phoenix" info 2>"$err" | grep '^java heap: ') || fail "PHX_THP=0 phoenix info failed"
  case "$line" in "java heap: 4 KiB pages (none of this process in transparent huge pages, kernel mode madvise;"*) ;;
    *) fail "PHX_THP=0, but: $line" ;; esac
  echo "PHX_THP=0 phoenix info: $line"
fi
