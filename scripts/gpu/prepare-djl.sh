#!/usr/bin/env bash
# Run HERE (the build machine) before scripts/gpu/djl_gpu.sh there: puts into .gpu/ (git-ignored)
# what DJL on the GPU machine needs, small enough for the device call's 64 MiB carry (with java.desktop,
# which jinjava's chat templates need for serve):
#   .gpu/jre.tar.xz            a jlink'd JRE 25 (djl_gpu.sh unpacks it to .gpu/jre)
#   .gpu/phoenix-cli-full.jar  the CLI with DJL, without DJL's CPU JNI (the GPU machine builds its own)
#   .gpu/fixtures              the test checkpoints
#   .gpu/djl-jni               DJL 0.36.0's JNI sources (scripts/gpu/djl-jni-sources.sh MIRROR)
# Carry: .gpu/jre.tar.xz .gpu/phoenix-cli-full.jar .gpu/fixtures .gpu/djl-jni
set -euo pipefail
cd "$(dirname "$0")/../.."
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
mkdir -p .gpu
[ -f .gpu/djl-jni/SOURCE.txt ] || { echo "prepare-djl: run scripts/gpu/djl-jni-sources.sh MIRROR first (.gpu/djl-jni is missing)" >&2; exit 1; }
[ -f samples/target/phoenix-cli.jar ] || mvn -B -q -ntp -DskipTests install
if [ ! -f .gpu/jre.tar.xz ]; then
  rm -rf .gpu/jre-pack && jlink --add-modules java.base,jdk.unsupported,java.logging,java.management,java.xml,jdk.zipfs,java.net.http,java.naming,java.sql,java.desktop \
    --strip-debug --no-header-files --no-man-pages --output .gpu/jre-pack/jre
  strip --strip-unneeded .gpu/jre-pack/jre/lib/server/libjvm.so .gpu/jre-pack/jre/lib/*.so 2>/dev/null || true
  tar -C .gpu/jre-pack -cJf .gpu/jre.tar.xz jre && rm -rf .gpu/jre-pack
fi
cp samples/target/phoenix-cli.jar .gpu/phoenix-cli-full.jar
zip -q -d .gpu/phoenix-cli-full.jar 'jnilib/*' >/dev/null || true
rm -rf .gpu/fixtures && cp -r "${PHX_FIXTURES:-testdata/fixtures}" .gpu/fixtures
du -sh .gpu/jre.tar.xz .gpu/phoenix-cli-full.jar .gpu/fixtures .gpu/djl-jni
