#!/usr/bin/env bash
# Builds the benchmarks in Release (build-bench/) and runs the SQLite benchmark on one fixed CPU.
#
# Placement: everything runs on one CPU (default 1, override with DBLOCK_BENCH_CPU). On the 2-core
# machines this project is measured on, CPU 0 takes most interrupts and housekeeping work, so CPU 1
# is the quieter one; one CPU for the benchmark, its forked contenders and dblock's threads removes
# migrations from the figures and makes runs comparable. sqlite_bench keeps the single-CPU mask it
# inherits from taskset and prints the placement in its header. Extra arguments go to sqlite_bench
# (e.g. --quick, --json-only).
set -euo pipefail

cd "$(dirname "$0")/.."
build_dir=build-bench
cpu=${DBLOCK_BENCH_CPU:-1}
if [ "$(nproc --all)" -le "$cpu" ]; then
  cpu=0  # a single-CPU machine has no CPU 1
fi
jobs=$(( $(nproc) < 2 ? $(nproc) : 2 ))

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_CLI=OFF >/dev/null
cmake --build "$build_dir" -j"$jobs" --target sqlite_bench

exec taskset -c "$cpu" "$build_dir/bench/sqlite_bench" "$@"
