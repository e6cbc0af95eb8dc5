#!/usr/bin/env bash
# Run HERE (the build machine): puts into .gpu/djl-jni/ (git-ignored, carried with .gpu/)
# everything scripts/gpu/djl-jni-build.sh needs to build DJL's PyTorch JNI library
# (libdjl_torch.so) on the GPU machine, which has no network and no JDK:
#   src/             DJL v0.36.0's JNI sources, in DJL's own layout:
#                    engines/pytorch/pytorch-native/{CMakeLists.txt,src/main/native/}, and
#                    api/src/main/native/djl/utils.h (the CMakeLists finds it at
#                    ../../../api/src/main/native), plus DJL's LICENSE and NOTICE
#                    engines/pytorch/pytorch-native/build/include/ai_djl_pytorch_jni_PyTorchLibrary.h:
#                    the JNI header, generated as DJL's pytorch-native/build.sh does
#                    (javac -h against pytorch-engine's PyTorchLibrary.java), where the
#                    CMakeLists' target_include_directories(... build/include ...) looks
#   jdk-include/     JDK 25's include/ (jni.h, linux/jni_md.h): the jlink'd .gpu/jre has none
#   SOURCE.txt       tag, commit and checksums of what was extracted
#
# Usage: scripts/gpu/djl-jni-sources.sh DJL_GIT_DIR     (or DJL_GIT_DIR=... scripts/gpu/djl-jni-sources.sh)
#   DJL_GIT_DIR: a git directory of github.com/deepjavalibrary/djl holding tag v0.36.0: the
#   bare mirror the session's `fetch` tool returns for github:deepjavalibrary/djl
#   (/work/.mirror/deepjavalibrary+djl/repo), or, on a machine with network, a clone made by
#     git clone --depth 1 -b v0.36.0 https://github.com/deepjavalibrary/djl
#   (its work tree or its .git), which gives the same tree.
# Source changes of our own (none are needed for libtorch 2.11: see the README) would be
# scripts/gpu/djl-jni-*.patch, applied here with patch -p1 in src/ in name order.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

DJL_TAG=v0.36.0
DJL_VERSION=0.36.0
NATIVE=engines/pytorch/pytorch-native
ENGINE_JAVA=engines/pytorch/pytorch-engine/src/main/java
HEADER=ai_djl_pytorch_jni_PyTorchLibrary.h
DEST=.gpu/djl-jni

die() { echo "djl-jni-sources: $*" >&2; exit 1; }

gitdir=${1:-${DJL_GIT_DIR:-}}
[ -n "$gitdir" ] || die "no DJL git directory given. Usage: $0 DJL_GIT_DIR (or DJL_GIT_DIR=...):
  the bare mirror from the fetch tool (source github:deepjavalibrary/djl), or a clone from
  git clone --depth 1 -b $DJL_TAG https://github.com/deepjavalibrary/djl"
[ -d "$gitdir" ] || die "DJL git directory $gitdir does not exist"
[ -d "$gitdir/.git" ] && gitdir=$gitdir/.git   # a clone's work tree
gitdir=$(cd "$gitdir" && pwd)
g() { git --git-dir="$gitdir" "$@"; }
g rev-parse --git-dir >/dev/null 2>&1 || die "$gitdir is not a git directory"

# --- step 1: the tag and its commit
commit=$(g rev-parse -q --verify "refs/tags/$DJL_TAG^{commit}" 2>/dev/null) \
  || die "step 1 (tag): $gitdir has no tag $DJL_TAG (tags there: $(g tag | tr '\n' ' ' | tail -c 200))"
# the release commit names the version in DJL's version catalog: a moved or foreign tag fails here
catalog_djl=$(g show "$commit:gradle/libs.versions.toml" 2>/dev/null | sed -n 's/^djl = "\(.*\)"$/\1/p')
[ "$catalog_djl" = "$DJL_VERSION" ] \
  || die "step 1 (tag): $DJL_TAG is commit $commit, whose gradle/libs.versions.toml says djl = \"$catalog_djl\", not $DJL_VERSION"
echo "djl-jni-sources: DJL $DJL_TAG = commit $commit ($(g log -1 --format=%ci "$commit"))"

JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME
export PATH="$JAVA_HOME/bin:$PATH"
"$JAVA_HOME/bin/javac" -version 2>&1 | grep -q '^javac 25' \
  || die "step 2 (JDK): $JAVA_HOME/bin/javac is not JDK 25 ($("$JAVA_HOME/bin/javac" -version 2>&1))"

m2=${MAVEN_REPO:-$HOME/.m2/repository}
api_jar=$m2/ai/djl/api/$DJL_VERSION/api-$DJL_VERSION.jar
engine_jar=$m2/ai/djl/pytorch/pytorch-engine/$DJL_VERSION/pytorch-engine-$DJL_VERSION.jar
for j in "$api_jar" "$engine_jar"; do
  [ -f "$j" ] || die "step 2 (jars): $j is missing (mvn -o install, or scripts/gpu/prepare.sh, resolves it)"
done

mkdir -p .gpu
tmp=$(mktemp -d "$root/.gpu/.djl-jni.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
out=$tmp/out
mkdir -p "$out/src" "$tmp/java"

# --- step 3: extract the JNI build's inputs (and the Java source the header is generated from)
g archive --format=tar "$commit" "$NATIVE/CMakeLists.txt" "$NATIVE/src/main/native" \
    api/src/main/native LICENSE NOTICE | tar -x -C "$out/src" \
  || die "step 3 (extract): git archive of $NATIVE and api/src/main/native failed"
g archive --format=tar "$commit" "$ENGINE_JAVA" | tar -x -C "$tmp/java" \
  || die "step 3 (extract): git archive of $ENGINE_JAVA failed"
[ -f "$out/src/api/src/main/native/djl/utils.h" ] \
  || die "step 3 (extract): api/src/main/native/djl/utils.h, which the CMakeLists' find_path(UTILS_INCLUDE_DIR) needs, is not in $DJL_TAG"
# anything else the CMakeLists reaches outside pytorch-native must be extracted too
while read -r ref; do
  rel=${ref#PROJECT_SOURCE_DIR\}/}
  [ -e "$out/src/$NATIVE/$rel" ] || die "step 3 (extract): the CMakeLists refers to \${$ref}, which was not extracted"
done < <(grep -o 'PROJECT_SOURCE_DIR}/[^ )]*' "$out/src/$NATIVE/CMakeLists.txt" | sort -u)

# --- step 4: our own source changes, if any
shopt -s nullglob
patches=(scripts/gpu/djl-jni-*.patch)
shopt -u nullglob
for p in "${patches[@]}"; do
  echo "djl-jni-sources: applying $p"
  patch -p1 --batch --forward -d "$out/src" < "$p" || die "step 4 (patch): $p does not apply to $DJL_TAG"
done

# --- step 5: the JNI header, as DJL's pytorch-native/build.sh makes it:
#   javac -sourcepath ../../pytorch-engine/src/main/java/ .../ai/djl/pytorch/jni/PyTorchLibrary.java -h include -d classes
# (run in pytorch-native/build, so the header lands in pytorch-native/build/include)
hdir=$out/src/$NATIVE/build/include
mkdir -p "$hdir" "$tmp/classes"
javac -nowarn -proc:none -encoding UTF-8 -cp "$api_jar" -sourcepath "$tmp/java/$ENGINE_JAVA" \
    -h "$hdir" -d "$tmp/classes" "$tmp/java/$ENGINE_JAVA/ai/djl/pytorch/jni/PyTorchLibrary.java" \
  || die "step 5 (header): javac -h on PyTorchLibrary.java failed"
[ -s "$hdir/$HEADER" ] || die "step 5 (header): javac wrote no $HEADER"
# the header must describe the PyTorchLibrary the project runs: the pytorch-engine jar's
sig() { javap -p -cp "$1" ai.djl.pytorch.jni.PyTorchLibrary | grep ' native ' | sort; }
if ! diff <(sig "$tmp/classes") <(sig "$engine_jar") > "$tmp/sig.diff"; then
  cat "$tmp/sig.diff" >&2
  die "step 5 (header): the native methods of $DJL_TAG's PyTorchLibrary.java differ from $engine_jar's"
fi
natives=$(sig "$engine_jar" | wc -l)
# every quoted include of the C++ sources is there (the rest come from libtorch, the JDK, utils.h)
while read -r inc; do
  [ -f "$out/src/$NATIVE/src/main/native/$inc" ] || [ -f "$hdir/$inc" ] \
    || die "step 5 (header): the sources include \"$inc\", which is neither in src/main/native nor generated"
done < <(grep -ho '#include "[^"]*"' "$out/src/$NATIVE/src/main/native/"* | sed 's/#include "\(.*\)"/\1/' | sort -u)

# --- step 6: the JDK's JNI headers
cp -r "$JAVA_HOME/include" "$out/jdk-include"
for h in jni.h linux/jni_md.h; do
  [ -f "$out/jdk-include/$h" ] || die "step 6 (jdk-include): $JAVA_HOME/include lacks $h"
done

{
  echo "DJL $DJL_TAG commit $commit"
  echo "from $gitdir"
  echo "header $HEADER by $(javac -version 2>&1) -h from $ENGINE_JAVA/ai/djl/pytorch/jni/PyTorchLibrary.java;" \
       "$natives native methods, identical to $(basename "$engine_jar")'s"
  echo "jdk-include from $JAVA_HOME/include ($(java -version 2>&1 | head -1))"
  echo "patches: ${patches[*]:-none}"
  echo "sha256:"
  (cd "$out" && find src jdk-include -type f | LC_ALL=C sort | xargs sha256sum)
} > "$out/SOURCE.txt"

rm -rf "$DEST"
mv "$out" "$DEST"
echo "djl-jni-sources: $DEST: $(find "$DEST" -type f | wc -l) files, $(du -sb "$DEST" | cut -f1) bytes ($(du -sh "$DEST" | cut -f1) on disk);" \
     "header $HEADER with $natives native methods"
echo "djl-jni-sources: next, on the GPU machine: scripts/gpu/djl-jni-build.sh"
