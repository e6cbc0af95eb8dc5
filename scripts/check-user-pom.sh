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

work=$(mktemp -d /tmp/phoenix-user-pom.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp -r scripts/user-pom/. "$work/"
cd "$work"
mvn -B -q -ntp -Dstyle.color=never package
mvn -B -q -ntp -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:3.8.1:build-classpath \
  -Dmdep.outputFile=target/cp.txt
out=$(java --enable-native-access=ALL-UNNAMED -cp "target/classes:$(cat target/cp.txt)" example.Hello)
echo "$out"
[ "$out" = "phoenix-core $version, libphoenix ${version%%-*}: read ok" ] || { echo "check-user-pom: unexpected output" >&2; exit 1; }
