#!/usr/bin/env bash
# Run HERE (the build machine) before scripts/gpu/ab.sh there: builds the CLI of each revision
# named (a commit, a branch, or "tree" for this working tree as it is, uncommitted changes
# included) and puts into .gpu/ab/NAME/ what the GPU machine needs to run it:
#   phoenix-cli.jar   that revision's CLI without DJL (DJL is not needed to load weights)
#   native.tar        that revision's phoenix-native sources (and kmod/include) (ab.sh builds each libphoenix there,
#                     against the CUDA it finds)
# and .gpu/ab/order (the names, in the order given), plus .gpu/jre.tar.xz and .gpu/uring when
# missing. Each revision is built in a git worktree of its own under build/ab/ with
# `mvn package` (never install: ~/.m2 keeps this tree's artifacts).
# Usage: scripts/gpu/ab-prepare.sh REV_A REV_B [REV...]    e.g. main tree, or 8b14d82 main tree
# Carry: .gpu/jre.tar.xz .gpu/uring .gpu/ab   (three revisions: about 55 MiB of the 64 MiB)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
[ $# -ge 1 ] || { echo "usage: $0 REV_A [REV_B...]  (a commit, a branch, or 'tree')" >&2; exit 2; }
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
rm -rf .gpu/ab && mkdir -p .gpu/ab build/ab
: > .gpu/ab/order
for rev in "$@"; do
  if [ "$rev" = tree ]; then
    name=tree; src=$root
    desc="working tree at $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- . ':!.gpu' || echo ' + uncommitted changes')"
  else
    commit=$(git rev-parse --verify -q "$rev^{commit}") || { echo "ab-prepare: $rev is not a revision here" >&2; exit 2; }
    name=$(git rev-parse --short "$commit"); src=$root/build/ab/$name
    desc="$rev = $(git log -1 --format='%h %ci %s' "$commit" | cut -c1-100)"
    if [ ! -d "$src" ]; then
      git worktree prune
      git worktree add -q --detach "$src" "$commit"
    fi
  fi
  echo "ab-prepare: $name: $desc"
  (cd "$src" && mvn -B -q -ntp package -DskipTests -Dmaven.javadoc.skip=true -pl samples -am) \
    || { echo "ab-prepare: $name: the build failed" >&2; exit 1; }
  jar=$src/samples/target/phoenix-cli-nodjl.jar
  [ -f "$jar" ] || jar=$src/samples/target/phoenix-cli.jar   # before DJL joined the CLI
  mkdir -p ".gpu/ab/$name"
  cp "$jar" ".gpu/ab/$name/phoenix-cli.jar"
  if [ "$name" = tree ]; then
    tar -C "$src" --exclude=target -cf ".gpu/ab/$name/native.tar" phoenix-native $(cd "$src" && ls -d kmod/include 2>/dev/null)
  else
    # kmod/include: the ioctl header libphoenix includes, where the revision has it
    git -C "$root" archive --format=tar -o "$root/.gpu/ab/$name/native.tar" "$commit" phoenix-native \
      $(git -C "$root" cat-file -e "$commit:kmod/include" 2>/dev/null && echo kmod/include)
  fi
  echo "$name $desc" >> .gpu/ab/order
done
if [ ! -f .gpu/jre.tar.xz ] || ! tar -tJf .gpu/jre.tar.xz | grep 'lib/server/classes.jsa$' >/dev/null; then
  # --generate-cds-archive: the JDK's default class-data archive, as every JDK 25 install has
  # it (lib/server/classes.jsa). Without it each fresh JVM loads and links the JDK's classes
  # from the module image, and the loads measured there paid for it in every phase a cold
  # class meets. The archive for heaps of 32 GB and more (no compressed oops) is left out.
  rm -rf .gpu/jre-pack && jlink --add-modules java.base,jdk.unsupported,java.logging,java.management,java.xml,jdk.zipfs,java.net.http,java.naming,java.sql,java.desktop \
    --strip-debug --no-header-files --no-man-pages --generate-cds-archive --output .gpu/jre-pack/jre
  rm -f .gpu/jre-pack/jre/lib/server/classes_nocoops.jsa
  strip --strip-unneeded .gpu/jre-pack/jre/lib/server/libjvm.so .gpu/jre-pack/jre/lib/*.so 2>/dev/null || true
  tar -C .gpu/jre-pack -cJf .gpu/jre.tar.xz jre && rm -rf .gpu/jre-pack
fi
if [ ! -f .gpu/uring/lib/liburing.a ]; then
  rm -rf .gpu/uring && mkdir -p .gpu/uring/include .gpu/uring/lib
  cp -r /usr/include/liburing.h /usr/include/liburing .gpu/uring/include/
  cp /usr/lib/x86_64-linux-gnu/liburing.a .gpu/uring/lib/
fi
du -shc .gpu/jre.tar.xz .gpu/uring .gpu/ab | tail -1
