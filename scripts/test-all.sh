#!/usr/bin/env bash
# Every test: the C tests plain, under ASan+UBSan and under TSan (host, sync/uring engines and
# the fake device), then the Maven build with all JUnit tests, then a user's minimal pom built
# against the installed artifacts. Installs what is missing.
#
# Quiet by default: one line per step and a summary with the test counts; a failing step prints
# its whole output. -v (or VERBOSE=1) streams every step's output as it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
verbose=${VERBOSE:-0}
for a in "$@"; do
  case $a in
    -v|--verbose) verbose=1 ;;
    -h|--help) echo "usage: scripts/test-all.sh [-v]   (VERBOSE=1 is the same as -v)"; exit 0 ;;
    *) echo "test-all: unknown argument $a (usage: scripts/test-all.sh [-v])" >&2; exit 2 ;;
  esac
done
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
jobs=$(nproc)
logs=build/test-logs
mkdir -p "$logs"

# step NAME LOG CMD...: runs CMD with its output in LOG (and on the terminal with -v); on
# failure prints LOG whole, since the last lines rarely hold the first error.
step() {
  local name=$1 log=$2 start=$SECONDS rc=0; shift 2
  if [ "$verbose" = 1 ]; then
    echo "== $name"
    "$@" 2>&1 | tee "$log" || rc=$?
  else
    printf '%s ... ' "$name"
    "$@" >"$log" 2>&1 || rc=$?
  fi
  if [ "$rc" != 0 ]; then
    [ "$verbose" = 1 ] || { echo "FAILED"; sed 's/\x1b\[[0-9;]*m//g' "$log"; }
    echo "== FAILED: $name (exit $rc; output in $log)"
    exit "$rc"
  fi
  [ "$verbose" = 1 ] || echo "ok ($((SECONDS - start)) s)"
}

run_ctest() { # $1 build dir, $2... cmake flags
  local dir=$1; shift
  cmake -S phoenix-native -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  # shellcheck disable=SC2086 # CTEST_ARGS is a word list
  (cd "$dir" && ctest --output-on-failure -j "$jobs" ${CTEST_ARGS:-})
}
# "100% tests passed, 0 tests failed out of 42" -> "42"
ctest_count() { sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$1" | tail -1; }

step "C tests (plain)" "$logs/c-plain.log" run_ctest build/c-plain
# Memory bounds are measured in the plain build only: sanitizer shadow memory and
# quarantine are part of RSS there.
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 CTEST_ARGS="-E test_bounds" \
  step "C tests (AddressSanitizer with leak detection + UndefinedBehaviorSanitizer)" "$logs/c-asan.log" \
  run_ctest build/c-asan -DPHX_SANITIZE=ON
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/phoenix-native/tests/tsan.supp" CTEST_ARGS="-E test_bounds" \
  step "C tests (ThreadSanitizer)" "$logs/c-tsan.log" run_ctest build/c-tsan -DPHX_TSAN=ON

# The cuFile-compatible library (phxfile-abi, with its own libphoenix build): its tests on the
# host connector (both engines), the fake device and the cuda connector over the fake libcuda,
# plain, under ASan+UBSan and under TSan; the sample is built and run with them.
run_phxfile_ctest() { # $1 build dir, $2... cmake flags
  local dir=$1; shift
  cmake -S phxfile-abi -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  (cd "$dir" && ctest --output-on-failure -j "$jobs")
}
step "cuFile-compatible library (phxfile-abi) tests (plain)" "$logs/phxfile-plain.log" run_phxfile_ctest build/phxfile
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  step "cuFile-compatible library tests (AddressSanitizer with leak detection + UndefinedBehaviorSanitizer)" \
  "$logs/phxfile-asan.log" run_phxfile_ctest build/phxfile-asan -DPHX_SANITIZE=ON
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/phoenix-native/tests/tsan.supp" \
  step "cuFile-compatible library tests (ThreadSanitizer)" "$logs/phxfile-tsan.log" run_phxfile_ctest build/phxfile-tsan -DPHX_TSAN=ON
# Every CMake build type builds with -Wall -Wextra -Werror: what gcc warns about changes with
# the optimisation level (-O0 for none and Debug, -O2, -Os). RelWithDebInfo is built above;
# here the other four, libphoenix and phxfile-abi in full, and the libraries (libphoenix's
# and the shim's sources) under each sanitizer. Build trees are kept, so a rerun is incremental.
# step runs this where set -e does not hold: each failure returns explicitly.
build_types() {
  local bt proj san
  for bt in "" Debug Release MinSizeRel; do
    for proj in phoenix-native phxfile-abi; do
      echo "== $proj, build type '${bt:-none}'"
      cmake -S "$proj" -B "build/types/$proj-${bt:-none}" -DCMAKE_BUILD_TYPE="$bt" >/dev/null &&
        cmake --build "build/types/$proj-${bt:-none}" -j "$jobs" >/dev/null || return
    done
    for san in SANITIZE TSAN; do
      echo "== phxfile-abi libraries, build type '${bt:-none}', PHX_$san=ON"
      cmake -S phxfile-abi -B "build/types/phxfile-abi-${bt:-none}-$san" -DCMAKE_BUILD_TYPE="$bt" -DPHX_$san=ON >/dev/null &&
        cmake --build "build/types/phxfile-abi-${bt:-none}-$san" -j "$jobs" --target cufile phxfile >/dev/null || return
    done
  done
}
step "every build type builds with -Werror (none, Debug, Release, MinSizeRel; plain and sanitized)" \
  "$logs/build-types.log" build_types
# The READMEs' cuFile build, test and sample lines, as written, in a fresh scratch root: the
# build with no build type, the tests, the sample against our library, over the fake driver
# and with NVIDIA's command lines (see the script).
step "README lines for the cuFile library and its sample, run as written" "$logs/readme-lines.log" \
  phxfile-abi/tests/readme_lines.sh build/readme-lines
# The phxfs kernel module end to end: Debian's 6.1 and 6.12 kernels booted under QEMU (TCG)
# with an NVMe disk and an ivshmem "GPU"; downloads and builds are cached under build/kmod.
step "phxfs kernel module in QEMU guests (Debian 6.1 and 6.12)" "$logs/kmod.log" kmod/test/run.sh

# kvcache-tier's Redis and Redis Cluster tests run in containers through Testcontainers: a Docker
# engine is found or started here (scripts/docker-engine.sh, a bounded wait; it stays up for the
# next run). With one, the tests must use it (PHX_REDIS_DOCKER=require); without, they fall back to
# a plain redis-server and say so.
if [ "${PHX_REDIS_DOCKER:-auto}" = off ]; then
  echo "Docker engine for the Redis tests ... not used (PHX_REDIS_DOCKER=off: plain redis-server)"
elif scripts/docker-engine.sh 2>"$logs/docker-engine.log"; then
  export PHX_REDIS_DOCKER=${PHX_REDIS_DOCKER:-require}
  echo "Docker engine for the Redis tests ... ok ($(tail -1 "$logs/docker-engine.log" | sed 's/^docker-engine: //'))"
else
  echo "Docker engine for the Redis tests ... none: plain redis-server fallback ($(tail -1 "$logs/docker-engine.log" | sed 's/^docker-engine: //'))"
fi

# Reports of test classes since deleted would otherwise be counted again.
rm -rf ./*/target/surefire-reports*
step "Java build and tests" "$logs/maven.log" mvn -B -q -ntp -Dstyle.color=never install
step "a user's minimal pom against the installed artifacts" "$logs/user-pom.log" scripts/check-user-pom.sh
step "the ./phoenix launcher: Ctrl-C while it records the start-up cache; the heap's huge pages; stdout kept for --json" "$logs/launcher.log" scripts/check-launcher.sh

# One <testsuite tests= failures= errors= skipped=> line per test class and surefire execution.
java_counts=$(cat ./*/target/surefire-reports*/TEST-*.xml | grep -o '<testsuite [^>]*>' | awk '
  { for (i = 1; i <= NF; i++) if (split($i, kv, "=") == 2) { gsub(/[">]/, "", kv[2]); s[kv[1]] += kv[2] } }
  END { printf "%d tests, %d failures, %d errors, %d skipped", s["tests"], s["failures"], s["errors"], s["skipped"] }')
echo "== all tests passed: C $(ctest_count "$logs/c-plain.log") plain, $(ctest_count "$logs/c-asan.log") ASan+UBSan," \
  "$(ctest_count "$logs/c-tsan.log") TSan; cuFile library $(ctest_count "$logs/phxfile-plain.log") plain," \
  "$(ctest_count "$logs/phxfile-asan.log") ASan+UBSan, $(ctest_count "$logs/phxfile-tsan.log") TSan; Java (JUnit, every surefire execution) $java_counts;" \
  "kmod $(tail -1 "$logs/kmod.log")"
