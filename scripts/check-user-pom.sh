#!/usr/bin/env bash
# A user's view of the artifacts: builds scripts/user-pom (the README's dependency block, the
# BOM imported, versions from it) in a directory outside the repository, so that nothing of
# ours (parent pom, .mvn, reactor) helps it, against what `mvn install` put into the local
# repository, then runs it. Also fails when the README, the template or the BOM name another
# version than the project's. test-all.sh runs it after the Maven build.
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"

version=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -1)
for f in scripts/user-pom/pom.xml phoenix-bom/pom.xml README.md; do
  grep -q "<version>$version</version>" "$f" || { echo "check-user-pom: $f does not name version $version (pom.xml's)" >&2; exit 1; }
done
if grep -n '<version>[0-9][^<]*-SNAPSHOT</version>' README.md | grep -v "<version>$version</version>"; then
  echo "check-user-pom: README.md names another snapshot version than $version" >&2; exit 1
fi

# The README's install lines ask for JDK 25 because Maven on Debian's default 17 failed deep in
# a plugin ("Unsupported major.minor version 69.0"): the build now says so at once, and how.
jdk17=$(ls -d /usr/lib/jvm/java-17-openjdk-* 2>/dev/null | head -1 || true)
if [ -n "$jdk17" ]; then
  rc=0; msg=$(JAVA_HOME=$jdk17 mvn -B -q -ntp -N -Dstyle.color=never validate 2>&1) || rc=$?
  [ "$rc" != 0 ] && echo "$msg" | grep -q 'Phoenix needs JDK 25 or newer to build' && echo "$msg" | grep -q 'export JAVA_HOME=' \
    || { echo "check-user-pom: on $jdk17 the build did not stop with the JDK 25 message:" >&2; echo "$msg" >&2; exit 1; }
  echo "on Java 17 the build stops at once: $(echo "$msg" | grep -o 'Phoenix needs JDK 25[^;]*')"
fi

# the README's block that builds and runs a user's program, run as written
run_block=$(awk '/^```sh$/ {b=""; on=1; next} /^```$/ { if (on && b ~ /example\.Hello/) { printf "%s", b; exit } on=0; next } on { b = b $0 "\n" }' README.md)
[ -n "$run_block" ] || { echo "check-user-pom: README.md has no sh block running example.Hello" >&2; exit 1; }

work=$(mktemp -d /tmp/phoenix-user-pom.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r scripts/user-pom/. "$work/"
cd "$work"
# (mvn -q still ends with a colour reset on a terminal's stdout: not part of the program's output)
out=$(bash -euo pipefail -c "$run_block" | sed 's/\x1b\[[0-9;]*m//g')
echo "$out"
[ "$out" = "phoenix-core $version, libphoenix ${version%%-*}: read ok" ] || { echo "check-user-pom: unexpected output" >&2; exit 1; }
