#!/usr/bin/env bash
# Every test: the C tests plain and under ASan+UBSan (host, sync/uring engines and the
# fake device), then the Maven build with all JUnit tests. Installs what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
JAVA_HOME=$(scripts/setup.sh)
export JAVA_HOME PATH="$JAVA_HOME/bin:$PATH"
jobs=$(nproc)

run_ctest() { # $1 build dir, $2... cmake flags
  local dir=$1; shift
  cmake -S phoenix-native -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
  cmake --build "$dir" -j "$jobs" >/dev/null
  # shellcheck disable=SC2086 # CTEST_ARGS is a word list
  (cd "$dir" && ctest --output-on-failure -j "$jobs" ${CTEST_ARGS:-})
}

echo "== C tests (plain)"
run_ctest build/c-plain
# Memory bounds are measured in the plain build only: sanitizer shadow memory and
# quarantine are part of RSS there.
echo "== C tests (AddressSanitizer with leak detection + UndefinedBehaviorSanitizer)"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 CTEST_ARGS="-E test_bounds" run_ctest build/c-asan -DPHX_SANITIZE=ON
echo "== C tests (ThreadSanitizer)"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" CTEST_ARGS="-E test_bounds" run_ctest build/c-tsan -DPHX_TSAN=ON

echo "== Java build and tests"
mvn -B -q -ntp install
echo "== all tests passed"
