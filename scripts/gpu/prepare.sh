#!/usr/bin/env bash
# Run HERE (the build machine) before a GPU run: puts everything the GPU machine lacks into
# .gpu/ (git-ignored), which the device call carries: a jlink'd JRE 25, liburing's static
# library and headers (so libphoenix builds there), the CLI jar, the Java tests and the JUnit
# console launcher.
set -euo pipefail
cd "$(dirname "$0")/../.."
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
mkdir -p .gpu
mvn -B -q -ntp -DskipTests install
[ -x .gpu/jre/bin/java ] || jlink --add-modules java.base,jdk.unsupported,java.logging,java.management,java.xml,jdk.zipfs \
  --strip-debug --no-header-files --no-man-pages --compress zip-9 --output .gpu/jre
# the JDK ships libjvm.so with its symbol table: 5 MB of the 64 MiB the device call carries
strip --strip-unneeded .gpu/jre/lib/server/libjvm.so .gpu/jre/lib/*.so 2>/dev/null || true
rm -rf .gpu/uring && mkdir -p .gpu/uring/include .gpu/uring/lib
cp -r /usr/include/liburing.h /usr/include/liburing .gpu/uring/include/
cp /usr/lib/x86_64-linux-gnu/liburing.a .gpu/uring/lib/
# the CLI without DJL (the GPU machine cannot run DJL's libtorch 2.7, and the carry is capped at 64 MiB)
cp samples/target/phoenix-cli-nodjl.jar .gpu/phoenix-cli.jar
rm -rf .gpu/java-tests && mkdir -p .gpu/java-tests
cp -r phoenix-core/target/test-classes .gpu/java-tests/classes
cp -r safetensors-loader/target/test-classes .gpu/java-tests/st-classes
rm -rf .gpu/fixtures && cp -r "${PHX_FIXTURES:-testdata/fixtures}" .gpu/fixtures
mvn -B -q -ntp dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.13.4 \
  -DoutputDirectory=.gpu/java-tests >/dev/null
(cd safetensors-loader && mvn -B -q -ntp dependency:build-classpath -Dmdep.outputFile=../.gpu/java-tests/cp.txt -Dmdep.includeScope=test >/dev/null)
# the classpath names jars in ~/.m2: copy the ones the tests need next to them
mkdir -p .gpu/java-tests/lib
tr ':' '\n' < .gpu/java-tests/cp.txt | grep -vE 'junit|opentest4j|apiguardian' | while read -r j; do [ -f "$j" ] && cp "$j" .gpu/java-tests/lib/; done
# by exact name: a glob would also take the -sources and -javadoc jars
version=$(sed -n 's:^  <version>\(.*\)</version>$:\1:p' pom.xml | head -1)
cp "phoenix-core/target/phoenix-core-$version.jar" "safetensors-loader/target/safetensors-loader-$version.jar" .gpu/java-tests/lib/
du -sh .gpu
