#!/usr/bin/env bash
# The ./phoenix launcher as a user meets it on the first run after a build: Ctrl-C while it
# records the start-up cache ends the command (it used to be swallowed, and the command ran to
# completion), leaves no half-written cache and runs nothing; the next run records the cache
# and works. It asks for transparent huge pages for the Java heap where the kernel has them (not
# with PHX_THP=0, not under ZGC; phoenix info says what the kernel gave), and keeps the JVM's
# warnings off stdout. Runs on a copy of the launcher beside the built jar, in a directory of its own, so
# the checkout's cache is left alone. test-all.sh runs it after the Maven build.
set -euo pipefail
cd "$(dirname "$0")/.."
jar=samples/target/phoenix-cli.jar
[ -f "$jar" ] || { echo "check-launcher: $jar missing: build first (mvn package)" >&2; exit 1; }

root=$(mktemp -d /tmp/phoenix-launcher.XXXXXX)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/samples/target" "$root/scripts" "$root/bench"
cp phoenix "$root/phoenix"
cp scripts/setup.sh scripts/apt-install.sh "$root/scripts/"
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

# The heap's pages. The flag, as the launcher passes it (a stub java that prints its arguments):
# given where the kernel's mode is madvise or always, not with PHX_THP=0, not under ZGC.
thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
mkdir -p "$root/stub/bin"
printf '#!/bin/sh\nfor a in "$@"; do echo "$a"; done\n' > "$root/stub/bin/java"
chmod +x "$root/stub/bin/java"
stub() { env PHX_AOT=0 PHX_JAVA_HOME="$root/stub" "$@" "$root/phoenix" info; }
case "$thp" in madvise|always) want=1 ;; *) want=0 ;; esac
got=$(stub | grep -cx -- '-XX:+UseTransparentHugePages' || true)
[ "$got" = "$want" ] || fail "kernel mode '${thp:-none}': the flag given $got times, want $want: $(stub | tr '\n' ' ')"
[ "$(stub PHX_THP=0 | grep -c -- 'TransparentHugePages' || true)" = 0 ] || fail "PHX_THP=0 still gave the flag"
[ "$(stub JDK_JAVA_OPTIONS='-Xmx1g -XX:+UseZGC' | grep -c -- 'TransparentHugePages' || true)" = 0 ] \
  || fail "the flag given under ZGC"
echo "the launcher's flag: kernel mode '${thp:-none}', -XX:+UseTransparentHugePages given $got time(s); none with PHX_THP=0 or ZGC"

# The real JVM: phoenix info says what the kernel gave. Huge pages must come where the kernel
# compacts for an advised region (defrag always/madvise) and this process may have them;
# elsewhere a fragmented machine may give 4 KiB pages, and that is only noted.
info=$("$root/phoenix" info 2>"$err") || fail "phoenix info failed"
line=$(echo "$info" | grep '^transparent huge pages: ') || fail "phoenix info has no 'transparent huge pages:' line: $info"
echo "phoenix info: $line"
defrag=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/defrag 2>/dev/null || true)
case "$line" in
  "transparent huge pages: "*" MiB of this process "*) ;;
  *) if [ "$want" = 1 ] && grep -q '^THP_enabled:[[:space:]]*1' /proc/self/status \
        && case "$defrag" in always|madvise|defer+madvise) true ;; *) false ;; esac; then
       fail "kernel mode $thp, defrag $defrag, but: $line"
     fi
     echo "(note: no huge pages given here; kernel mode '${thp:-none}', defrag '${defrag:-none}')" ;;
esac
if [ "$thp" = madvise ]; then
  line=$(PHX_THP=0 "$root/phoenix" info 2>"$err" | grep '^transparent huge pages: ') || fail "PHX_THP=0 phoenix info failed"
  case "$line" in "transparent huge pages: none in this process (kernel mode madvise;"*) ;;
    *) fail "PHX_THP=0, but: $line" ;; esac
  echo "PHX_THP=0 phoenix info: $line"
fi

# stdout stays the command's own: a --json answer parses, with the flag, under ZGC, with a user's
# -XX:+UseLargePages, and under a ZGC the launcher does not see (_JAVA_OPTIONS: the flag is then
# given, and the JVM's page-size warning, printed on stdout unless told otherwise, must go to stderr)
"$root/phoenix" gen-model "$root/model" --size 4m --hidden 256 --intermediate 512 --vocab 1024 >/dev/null 2>"$err" \
  || fail "gen-model failed"
for setting in "" "JDK_JAVA_OPTIONS=-XX:+UseZGC" "JDK_JAVA_OPTIONS=-XX:+UseLargePages" "_JAVA_OPTIONS=-XX:+UseZGC"; do
  env $setting "$root/phoenix" load "$root/model" --host --json >"$root/out.json" 2>"$err" \
    || fail "load --json failed ($setting)"
  python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$root/out.json" \
    || fail "load --json ($setting) wrote no JSON: $(head -c 300 "$root/out.json")"
  if grep -q '\[warning\]' "$root/out.json"; then fail "a JVM warning on stdout ($setting)"; fi
  if [ -z "$setting" ] && grep -q '\[warning\]' "$err"; then fail "a JVM warning from the launcher's own options: $(cat "$err")"; fi
done
echo "load --json: JSON on stdout and no JVM warning there, with the default collector, ZGC (seen or not) and -XX:+UseLargePages"
