#!/usr/bin/env bash
# Builds dblock and runs its test suite (ctest), installing build dependencies first.
#
#   scripts/test.sh                 # RelWithDebInfo build in build/: every test
#   scripts/test.sh --asan          # AddressSanitizer + UBSan build in build-asan/
#   scripts/test.sh --tsan          # ThreadSanitizer build in build-tsan/
#   scripts/test.sh --all           # all three, then the packages
#   scripts/test.sh --package       # the Debian packages: build, install, use, remove (package.sh)
#   scripts/test.sh --thread-safety # clang's -Wthread-safety analysis of the library and the
#                                   # command in build-thread-safety/: any warning fails it
#
# What each build runs (docs/testing.md): the plain build everything; the sanitizer builds what
# exercises memory and threads (the engine's units, the conformance suite on every service, the CLI
# cases), built at -O1 -g1 without the benches, examples, fault harness, failover and ensemble
# topologies and the services' own cases, whose server-driven runs belong to the plain build.
#
# Each stage prints "stage <name>: <seconds> s" when it ends (docs/testing.md, the budget).
#
# Environment: JOBS (build jobs; default: number of CPUs), CTEST_JOBS (tests run at once; default
# 4: most tests wait on TTLs and servers rather than CPU, and tests sharing a server never overlap,
# see cmake/serialize_server_tests.cmake; the fault tests that must see a violation run alone),
# CTEST_ARGS (extra ctest arguments).
set -euo pipefail
cd "$(dirname "$0")/.."

mode="${1:-default}"
jobs="${JOBS:-$(nproc)}"

"$(pwd)/scripts/install-deps.sh"

generator=()
if command -v ninja >/dev/null; then generator=(-G Ninja); fi

# Runs `"$@"` as stage $1 and prints how long it took.
stage() {
  local name="$1" started=$SECONDS; shift
  "$@"
  echo "stage $name: $((SECONDS - started)) s"
}

# build NAME DIR CMAKE_ARGS...: configures and builds DIR.
build() {
  local name="$1" dir="$2"; shift 2
  echo "=== dblock build: $name ($dir) ==="
  # A directory configured with another generator is configured afresh.
  if [[ -f "$dir/CMakeCache.txt" ]] && ! grep -q "CMAKE_GENERATOR:INTERNAL=${generator[1]:-Unix Makefiles}\$" "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBLOCK_BUILD_TESTS=ON -DDBLOCK_BUILD_CLI=ON \
    -DDBLOCK_WITH_SQLITE=ON -DDBLOCK_WITH_POSTGRESQL=ON -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_WITH_REDIS=ON -DDBLOCK_WITH_ZOOKEEPER=ON -DDBLOCK_WITH_ETCD=ON "$@"
  stage "$name build" cmake --build "$dir" -j "$jobs"
}

# run_tests NAME DIR CTEST_SELECTION: runs DIR's ctest tests.
run_tests() {
  local name="$1" dir="$2" selection="$3"
  echo "=== dblock tests: $name ($dir) ==="
  # halt_on_error makes UBSan findings fail the run instead of only printing.
  # shellcheck disable=SC2086
  ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" \
  LSAN_OPTIONS="suppressions=$(pwd)/tests/sanitizers/lsan.supp:print_suppressions=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$(pwd)/tests/sanitizers/tsan.supp" \
    stage "$name tests" ctest --test-dir "$dir" --output-on-failure -j "${CTEST_JOBS:-4}" $selection ${CTEST_ARGS:-} ||
    { failure_digest "$dir"; return 1; }
}

# failure_digest DIR: each failed test's failures again, at the end of the log, where a reader
# of its tail finds them (ctest printed them in the middle, among the other tests' lines).
failure_digest() {
  local log="$1/Testing/Temporary/LastTest.log" failed="$1/Testing/Temporary/LastTestsFailed.log" name
  [[ -r "$log" && -r "$failed" ]] || return 0
  echo "=== failure digest ($1) ==="
  while IFS=: read -r _ name; do
    echo "--- $name"
    local output
    output="$(awk -v t="\"$name\" start time" 'index($0, t) == 1 {on = 1; next} on && /^<end of output>/ {exit} on' "$log")"
    # The failures with what follows them; else the output's end.
    local found
    found="$(grep -i -E -A10 'failed|violation|error|timeout|assertion|sanitizer|terminate' <<<"$output" || true)"
    if [[ -n "$found" ]]; then head -n 80 <<<"$found"; else tail -n 25 <<<"$output"; fi
  done < "$failed"
}

# The plain build: everything, the benches included; the test code itself at -O0 (it waits on
# servers and TTLs far more than it computes, and compiles in half the time; the library, the
# command, the benches and the examples keep the build type's -O2).
plain=(-DDBLOCK_BUILD_BENCH=ON -DDBLOCK_TEST_OPTIMIZATION=-O0)
# The sanitizer builds: what they do not run is not built either; lighter optimisation and line
# tables only (a sanitizer's report still names every frame and line), the test code itself at -O0.
sanitized=(-DDBLOCK_TEST_OPTIMIZATION=-O0 -DDBLOCK_BUILD_BENCH=OFF -DDBLOCK_BUILD_EXAMPLES=OFF -DDBLOCK_BUILD_FAULT_TESTS=OFF -DDBLOCK_TEST_SERVICE_CASES=OFF
           "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
# ... and of the tests built, they leave out the documentation checks, the install consumer and
# the Java interop (no code of dblock's runs there that the other cases do not run).
sanitized_tests="-LE docs|install|interop"
# The TSan build's servers listen 10000 ports below the others' (tests/CMakeLists.txt), so its
# tests run beside the ASan build's in --all (docs/testing.md, the budget).
tsan=(-DDBLOCK_SANITIZE_THREAD=ON -DDBLOCK_TEST_PORT_OFFSET=-10000)

# The sanitizer builds of --all, built while the plain build's tests run: those wait on TTLs and
# servers far more than they compute, and the builds run under SCHED_IDLE (inherited by the
# compilers), so they take only the CPU the tests leave (docs/testing.md, the budget). Their output
# goes to sanitizer-builds.log.
background_builds() {
  chrt --idle --pid 0 "$BASHPID"
  { build asan build-asan -DDBLOCK_SANITIZE_ADDRESS=ON "${sanitized[@]}" &&
    build tsan build-tsan "${tsan[@]}" "${sanitized[@]}"; } > sanitizer-builds.log 2>&1
}

# clang's thread-safety analysis (DBLOCK_GUARDED_BY, DBLOCK_REQUIRES: dblock/service/
# thread_annotations.h) over the library and the command, every warning an error: compiled and
# linked at -O0, nothing run (docs/testing.md).
thread_safety_build() {
  local dir=build-thread-safety
  echo "=== dblock build: thread-safety ($dir) ==="
  cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_CXX_FLAGS=-Wthread-safety -Werror" \
    -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_BENCH=OFF -DDBLOCK_BUILD_EXAMPLES=OFF -DDBLOCK_BUILD_CLI=ON \
    -DDBLOCK_WITH_SQLITE=ON -DDBLOCK_WITH_POSTGRESQL=ON -DDBLOCK_WITH_MYSQL=ON -DDBLOCK_WITH_REDIS=ON -DDBLOCK_WITH_ZOOKEEPER=ON -DDBLOCK_WITH_ETCD=ON
  stage "thread-safety build" cmake --build "$dir" -j "$jobs"
}

# The packages' build and the thread-safety build of --all, built while the sanitizer tests run
# (as above, under SCHED_IDLE); their output goes to package-build.log.
background_package_build() {
  chrt --idle --pid 0 "$BASHPID"
  { JOBS="$jobs" stage "package build" scripts/package.sh --build-only && thread_safety_build; } > package-build.log 2>&1
}

# await_builds PID LOG: waits for the background builds (process PID) to end.
await_builds() {
  if ! wait "$1"; then
    tail -n 60 "$2" >&2
    echo "a background build failed ($2)" >&2
    exit 1
  fi
}

# The two sanitizer test stages of --all, side by side: each is bound by its servers' and TTLs'
# waits, not by CPU (docs/testing.md, the budget). Each line is prefixed with its stage; fails if
# either failed, after both ended.
sanitizer_tests() {
  local asan tsan status=0
  { run_tests asan build-asan "$sanitized_tests" 2>&1 | sed -u 's/^/[asan] /'; } & asan=$!
  { run_tests tsan build-tsan "$sanitized_tests" 2>&1 | sed -u 's/^/[tsan] /'; } & tsan=$!
  wait "$asan" || status=1
  wait "$tsan" || status=1
  return "$status"
}

case "$mode" in
  default) build default build "${plain[@]}" && run_tests default build "" ;;
  --asan) build asan build-asan -DDBLOCK_SANITIZE_ADDRESS=ON "${sanitized[@]}" && run_tests asan build-asan "$sanitized_tests" ;;
  --tsan) build tsan build-tsan "${tsan[@]}" "${sanitized[@]}" && run_tests tsan build-tsan "$sanitized_tests" ;;
  --all)
    started=$SECONDS
    build default build "${plain[@]}"
    # In a process group of its own (job control), stopped with everything it started if the
    # run ends early.
    set -m; background_builds & builds=$!; set +m
    trap 'kill -- -"$builds" 2>/dev/null || true' EXIT
    run_tests default build ""
    await_builds "$builds" sanitizer-builds.log
    grep '^stage' sanitizer-builds.log
    set -m; background_package_build & package_build=$!; set +m
    trap 'kill -- -"$package_build" 2>/dev/null || true' EXIT
    stage sanitizer sanitizer_tests
    await_builds "$package_build" package-build.log
    grep '^stage' package-build.log
    JOBS="$jobs" stage packages scripts/package.sh
    echo "stage all: $((SECONDS - started)) s"
    ;;
  --package) JOBS="$jobs" stage packages scripts/package.sh ;;
  --thread-safety) thread_safety_build ;;
  *) echo "usage: scripts/test.sh [--asan|--tsan|--all|--package|--thread-safety]" >&2; exit 64 ;;
esac
