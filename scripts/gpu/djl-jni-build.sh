#!/usr/bin/env bash
# Run THERE (the GPU machine, no network), after scripts/gpu/djl-jni-sources.sh here: builds
# DJL 0.36.0's PyTorch JNI library against the libtorch of the machine's Python torch
# (2.11.0+cu130 when written) from the sources carried in .gpu/djl-jni/, and lays out
#   build/djl-jni/lib/     symlinks to torch/lib/*.so (libtorch_python.so left out) and
#                          0.36.0-libdjl_torch.so, the name DJL's LibUtils looks for there
#   build/djl-jni/env.sh   PYTORCH_LIBRARY_PATH (that folder), PYTORCH_VERSION, PYTORCH_FLAVOR,
#                          PYTORCH_LIBRARY_EXCLUSION, DJL_OFFLINE: source it, then run DJL
#   build/djl-jni/cmake/   the CMake build
# Nothing is written into Python's site-packages. With $OUT set, the log, env.sh, the library
# and, on a failed configure, CMake's own logs are copied to $OUT/djl-jni/.
#
# Environment (all optional):
#   PYTHON                     the Python with torch (python3)
#   DJL_JNI_USE_CUDA           ON (default) or OFF: DJL's USE_CUDA (its CUDA stream/cache calls)
#   TORCH_CMAKE_PREFIX_PATH    instead of python's torch.utils.cmake_prefix_path
#   TORCH_LIB_DIR              instead of python's torch/lib
#   DJL_JNI_JVM_LIBRARY        instead of .gpu/jre/lib/server/libjvm.so (only FindJNI wants it:
#                              libdjl_torch.so does not link it)
#   DJL_JNI_TIMEOUT_PYTHON / _CONFIGURE / _BUILD   seconds per step (180 / 300 / 480)
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

DJL_VERSION=0.36.0
PROBED_TORCH=2.11.0
SRC=$root/.gpu/djl-jni
NATIVE=$SRC/src/engines/pytorch/pytorch-native
HEADER=$NATIVE/build/include/ai_djl_pytorch_jni_PyTorchLibrary.h
DEST=$root/build/djl-jni
BLD=$DEST/cmake
JNI_NAME=$DJL_VERSION-libdjl_torch.so
PYTHON=${PYTHON:-python3}
USE_CUDA=${DJL_JNI_USE_CUDA:-ON}
T_PY=${DJL_JNI_TIMEOUT_PYTHON:-180}
T_CONF=${DJL_JNI_TIMEOUT_CONFIGURE:-300}
T_BUILD=${DJL_JNI_TIMEOUT_BUILD:-480}
OUTD=${OUT:+$OUT/djl-jni}

die() { echo "djl-jni-build: FAILED: $*" >&2; exit 1; }
say() { echo "djl-jni-build: $*"; }
# run STEP SECONDS CMD...: the command under timeout, a failure named by its step
run() {
  local name=$1 secs=$2 rc=0
  shift 2
  timeout --kill-after=10 "$secs" "$@" || rc=$?
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    die "step $name: timed out after ${secs}s: $*"
  elif [ "$rc" != 0 ]; then
    die "step $name: exit $rc: $*"
  fi
}
save_cmake_logs() {
  [ -n "${OUTD:-}" ] || return 0
  local f
  for f in CMakeFiles/CMakeOutput.log CMakeFiles/CMakeError.log CMakeFiles/CMakeConfigureLog.yaml CMakeCache.txt; do
    if [ -f "$BLD/$f" ]; then cp "$BLD/$f" "$OUTD/"; fi
  done
}

main() {
  # --- step 1 (inputs): what djl-jni-sources.sh and prepare.sh carried here
  local f
  for f in "$NATIVE/CMakeLists.txt" "$HEADER" "$SRC/jdk-include/jni.h" "$SRC/SOURCE.txt"; do
    [ -f "$f" ] || die "step 1 (inputs): no $f: run scripts/gpu/djl-jni-sources.sh on the build machine and carry .gpu"
  done
  (cd "$SRC" && sed '1,/^sha256:$/d' SOURCE.txt | sha256sum --quiet -c -) \
    || die "step 1 (inputs): $SRC does not match its SOURCE.txt checksums (a partial carry?): rerun scripts/gpu/djl-jni-sources.sh"
  say "sources: $(head -1 "$SRC/SOURCE.txt")"
  local jvm=${DJL_JNI_JVM_LIBRARY:-$root/.gpu/jre/lib/server/libjvm.so}
  [ -f "$jvm" ] || die "step 1 (inputs): $jvm is missing: run scripts/gpu/prepare.sh on the build machine (it makes .gpu/jre), or set DJL_JNI_JVM_LIBRARY"

  # --- step 2 (tools)
  local t
  for t in cmake c++ timeout sha256sum readelf nm "$PYTHON"; do
    command -v "$t" >/dev/null || die "step 2 (tools): $t not found"
  done
  if [ "$USE_CUDA" = ON ] && ! command -v nvcc >/dev/null; then
    for t in "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
      if [ -n "$t" ] && [ -x "$t/bin/nvcc" ]; then PATH=$t/bin:$PATH; break; fi
    done
    command -v nvcc >/dev/null || die "step 2 (tools): nvcc not found (torch's CMake config needs the CUDA toolkit): put it on PATH or set CUDA_HOME"
  fi
  say "tools: $(cmake --version | head -1); $(c++ --version | head -1)"
  [ "$USE_CUDA" = OFF ] || say "tools: $(command -v nvcc): $(nvcc --version | tail -1)"

  # --- step 3 (torch): what the machine's torch is and where its CMake config and libraries are
  local info version="" cuda="" prefix="" lib="" abi="" k v
  info=$(timeout "$T_PY" "$PYTHON" -c '
import os, torch
print("version=" + torch.__version__)
print("cuda=" + (torch.version.cuda or ""))
print("prefix=" + torch.utils.cmake_prefix_path)
print("lib=" + os.path.join(os.path.dirname(torch.__file__), "lib"))
print("abi=" + str(int(torch._C._GLIBCXX_USE_CXX11_ABI)))
' 2>&1) || die "step 3 (torch): '$PYTHON -c \"import torch\"' failed (or ran past ${T_PY}s): $info"
  while IFS='=' read -r k v; do
    case $k in
      version) version=$v ;; cuda) cuda=$v ;; prefix) prefix=$v ;; lib) lib=$v ;; abi) abi=$v ;;
    esac
  done <<< "$info"
  prefix=${TORCH_CMAKE_PREFIX_PATH:-$prefix}
  lib=${TORCH_LIB_DIR:-$lib}
  [ -n "$version" ] || die "step 3 (torch): no torch version in: $info"
  [ -f "$prefix/Torch/TorchConfig.cmake" ] \
    || die "step 3 (torch): no Torch/TorchConfig.cmake under $prefix (torch $version): a torch without its CMake files? Set TORCH_CMAKE_PREFIX_PATH"
  [ -d "$lib" ] && lib=$(cd "$lib" && pwd -P)
  [ -f "$lib/libtorch.so" ] || die "step 3 (torch): no libtorch.so in $lib: set TORCH_LIB_DIR"
  local pt_version=${version%%+*} flavor
  if [ -n "$cuda" ]; then
    flavor=cu${cuda//./}                       # 13.0 -> cu130, DJL's flavor naming
  else
    flavor=cpu
    [ "$USE_CUDA" = OFF ] || die "step 3 (torch): torch $version is a CPU build (torch.version.cuda is None): DJL_JNI_USE_CUDA=OFF builds a CPU JNI"
  fi
  case $version in *+*) [ "${version#*+}" = "$flavor" ] || say "warning: torch's local version ${version#*+} is not $flavor (from torch.version.cuda=$cuda); using $flavor" ;; esac
  [ "$pt_version" = "$PROBED_TORCH" ] || say "warning: torch $pt_version, not the $PROBED_TORCH this was probed with; building anyway"
  [ "$abi" = 1 ] || say "warning: torch was built with _GLIBCXX_USE_CXX11_ABI=$abi (DJL's builds for 2.x use 1)"
  say "torch $version (cuda ${cuda:-none}, cxx11 abi $abi): cmake prefix $prefix, libraries $lib"
  # as DJL's pytorch-native/build.sh: the older API branch of its sources for these versions
  local pt_define=""
  case $pt_version in 1.13.*|2.0.*|2.1.*) pt_define=V1_13_X ;; esac

  # --- step 4 (configure)
  rm -rf "$BLD" && mkdir -p "$BLD"
  say "configure: USE_CUDA=$USE_CUDA${pt_define:+ PT_VERSION=$pt_define} (timeout ${T_CONF}s)"
  if ! (run "4 (configure)" "$T_CONF" cmake -S "$NATIVE" -B "$BLD" \
      -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" \
      -DUSE_CUDA="$USE_CUDA" \
      ${pt_define:+-DPT_VERSION="$pt_define"} \
      -DJAVA_INCLUDE_PATH="$SRC/jdk-include" \
      -DJAVA_INCLUDE_PATH2="$SRC/jdk-include/linux" \
      -DJAVA_JVM_LIBRARY="$jvm"); then
    save_cmake_logs
    [ -z "${OUTD:-}" ] || say "CMake's logs and cache copied to $OUTD/"
    exit 1
  fi

  # --- step 5 (build)
  say "build: -j $(nproc) (timeout ${T_BUILD}s)"
  local t0=$SECONDS
  run "5 (build)" "$T_BUILD" cmake --build "$BLD" --config Release -j "$(nproc)" 2>&1 | tee "$BLD/build.log"
  [ -f "$BLD/libdjl_torch.so" ] || die "step 5 (build): no $BLD/libdjl_torch.so after the build"
  say "built in $((SECONDS - t0)) s, $(grep -c 'warning:' "$BLD/build.log" || true) compiler warnings"

  # --- step 6 (layout): a folder DJL takes as libtorch's (it must hold libtorch.so) with our JNI in it
  rm -rf "${DEST:?}/lib" && mkdir -p "$DEST/lib"
  local name n=0
  for f in "$lib"/*; do
    name=${f##*/}
    [[ $name =~ \.so(\.[0-9]+)*$ ]] || continue
    [ "$name" = libtorch_python.so ] && continue   # needs libpython: not for a JVM
    if [[ $name == *libdjl_torch.so ]]; then       # e.g. a probe's copy: never ours, never overwritten
      say "note: $f is not used (DJL takes $DEST/lib/$JNI_NAME)"
      continue
    fi
    ln -s "$f" "$DEST/lib/$name"
    n=$((n + 1))
  done
  cp --remove-destination "$BLD/libdjl_torch.so" "$DEST/lib/$JNI_NAME"
  say "layout: $DEST/lib: $n links into $lib, and $JNI_NAME"

  # --- step 7 (check): every native method of the header is defined, and a fresh process loads
  # the folder as DJL 0.36.0's LibUtils.loadLibTorch does (its filters, ranks and deferred list;
  # canonical paths, as System.load; RTLD_LAZY, as the JVM), then the JNI library with every
  # symbol bound (RTLD_NOW): what the JVM will do, without a JVM
  local missing
  missing=$(LC_ALL=C comm -23 <(grep -o 'Java_ai_djl_pytorch_jni_PyTorchLibrary_[A-Za-z0-9_]*' "$HEADER" | LC_ALL=C sort -u) \
                     <(nm -D --defined-only "$DEST/lib/$JNI_NAME" | awk '{print $3}' | LC_ALL=C sort -u))
  [ -z "$missing" ] || die "step 7 (check): native methods declared in the header but not defined: $missing"
  say "NEEDED: $(readelf -d "$DEST/lib/$JNI_NAME" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
  local load
  load=$(timeout "$T_PY" "$PYTHON" - "$DEST/lib" "$JNI_NAME" "$flavor" libtorch_python.so 2>&1 <<'PY'
import ctypes, os, re, sys
libdir, jni, flavor, exclusion = sys.argv[1], sys.argv[2], sys.argv[3], set(sys.argv[4].split(","))
lib = re.compile(r".*\.(so(\.\d+)*|dll|dylib)")
cuda = "cu" in flavor
deferred = ["libfbgemm.so", "libcaffe2_nvrtc.so", "libtorch_cpu.so", "libc10_cuda.so", "libtorch_cuda_cpp.so",
            "libtorch_cuda_cu.so", "libtorch_cuda.so", "libnvfuser_codegen.so", "libtorch.so"]
rank = {}
for d, _, files in os.walk(libdir):
    for name in files:
        path = os.path.join(d, name)
        if not lib.fullmatch(name) or name in exclusion:
            continue
        if name.startswith("libarm_compute-") or name.startswith("libopenblasp"):
            rank[path] = 2
        elif name.startswith("libarm_compute_"):
            rank[path] = 3
        elif (name not in deferred and os.path.isfile(path) and not name.endswith("libdjl_torch.so")
              and "torch_" not in name and "caffe2_" not in name and not name.startswith("cudnn")):
            rank[path] = 1
order = sorted(rank, key=rank.get)
if not cuda:
    deferred = ["libfbgemm.so", "libtorch_cpu.so", "libtorch.so"]
order += [p for p in (os.path.join(libdir, n) for n in deferred) if os.path.exists(p)]
for p in order:
    try:
        ctypes.CDLL(os.path.realpath(p), mode=os.RTLD_LAZY | os.RTLD_LOCAL)
    except OSError as e:
        sys.exit("loading %s as DJL does: %s" % (p, e))
try:
    ctypes.CDLL(os.path.join(libdir, jni), mode=os.RTLD_NOW | os.RTLD_LOCAL)
except OSError as e:
    sys.exit("loading %s after %s: %s" % (jni, " ".join(os.path.basename(p) for p in order), e))
print("loaded as DJL does: %s, then %s" % (" ".join(os.path.basename(p) for p in order), jni))
PY
) || die "step 7 (check): $load"
  say "check: $load"

  # --- step 8 (env.sh)
  cat > "$DEST/env.sh" <<EOF
# Written by scripts/gpu/djl-jni-build.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ): DJL $DJL_VERSION's PyTorch
# JNI built against torch $version at $lib. Source it, then run DJL with
# the project's CLI jar (DJL's libtorch comes from PYTORCH_LIBRARY_PATH, not from a native jar):
#   . build/djl-jni/env.sh
#   .gpu/jre/bin/java --enable-native-access=ALL-UNNAMED -jar phoenix-cli.jar djl-run MODEL_DIR --ids 1,2,3
export PYTORCH_LIBRARY_PATH=$DEST/lib
export PYTORCH_VERSION=$pt_version
export PYTORCH_FLAVOR=$flavor
export PYTORCH_LIBRARY_EXCLUSION=libtorch_python.so
export DJL_OFFLINE=true
EOF
  say "wrote $DEST/env.sh:"
  grep '^export' "$DEST/env.sh"
  if [ -n "${OUTD:-}" ]; then
    cp "$DEST/env.sh" "$DEST/lib/$JNI_NAME" "$OUTD/"
  fi
  say "done"
}

if [ -n "${OUTD:-}" ]; then
  mkdir -p "$OUTD"
  main "$@" 2>&1 | tee "$OUTD/djl-jni-build.log"   # pipefail: the exit status is main's
  exit 0
fi
main "$@"
