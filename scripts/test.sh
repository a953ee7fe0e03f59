#!/usr/bin/env bash
# Builds dblock and runs the whole test suite (ctest), installing build dependencies first.
#
#   scripts/test.sh                 # RelWithDebInfo build in build/
#   scripts/test.sh --asan          # AddressSanitizer + UBSan build in build-asan/
#   scripts/test.sh --tsan          # ThreadSanitizer build in build-tsan/
#   scripts/test.sh --all           # all three, one after the other, then the packages
#   scripts/test.sh --package       # the Debian packages: build, install, use, remove (package.sh)
#
# Environment: JOBS (build jobs; default: number of CPUs), CTEST_JOBS (tests run at once; default
# 3: most tests wait on TTLs and servers rather than CPU, and tests sharing a server never overlap,
# see cmake/serialize_server_tests.cmake; the backend suites, which restart their servers, and the
# fault tests that must see a violation run alone), CTEST_ARGS (extra ctest arguments).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-default}"
jobs="${JOBS:-$(nproc)}"

"$(pwd)/scripts/install-deps.sh"

run_one() {
  local name="$1" dir="$2"; shift 2
  echo "=== dblock tests: $name ($dir) ==="
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBLOCK_BUILD_TESTS=ON -DDBLOCK_BUILD_CLI=ON -DDBLOCK_BUILD_BENCH=ON \
    -DDBLOCK_WITH_SQLITE=ON -DDBLOCK_WITH_POSTGRESQL=ON -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_WITH_REDIS=ON -DDBLOCK_WITH_ZOOKEEPER=ON "$@"
  cmake --build "$dir" -j "$jobs"
  # halt_on_error makes UBSan findings fail the run instead of only printing.
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
  LSAN_OPTIONS="suppressions=$(pwd)/tests/sanitizers/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/tests/sanitizers/tsan.supp" \
    ctest --test-dir "$dir" --output-on-failure -j "${CTEST_JOBS:-3}" ${CTEST_ARGS:-}
}

case "$mode" in
  default) run_one default build ;;
  --asan) run_one asan build-asan -DDBLOCK_SANITIZE_ADDRESS=ON ;;
  --tsan) run_one tsan build-tsan -DDBLOCK_SANITIZE_THREAD=ON ;;
  --all)
    run_one default build
    run_one asan build-asan -DDBLOCK_SANITIZE_ADDRESS=ON
    run_one tsan build-tsan -DDBLOCK_SANITIZE_THREAD=ON
    JOBS="$jobs" scripts/package.sh
    ;;
  --package) JOBS="$jobs" scripts/package.sh ;;
  *) echo "usage: scripts/test.sh [--asan|--tsan|--all|--package]" >&2; exit 64 ;;
esac
