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

source "$(dirname "$0")/bench-common.sh"
build_bench sqlite_bench

exec taskset -c "$cpu" "$build_dir/bench/sqlite_bench" "$@"
