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
  (cd "$dir" && ctest --output-on-failure -j "$jobs")
}

echo "== C tests (plain)"
run_ctest build/c-plain
echo "== C tests (AddressSanitizer + UndefinedBehaviorSanitizer)"
ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 run_ctest build/c-asan -DPHX_SANITIZE=ON

echo "== Java build and tests"
mvn -B -q -ntp install
echo "== all tests passed"
