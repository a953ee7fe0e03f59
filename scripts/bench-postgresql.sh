#!/usr/bin/env bash
# Builds the benchmarks in Release (build-bench/), starts a throwaway PostgreSQL pinned to one CPU,
# runs the PostgreSQL benchmark pinned to another CPU, and stops the server again (also on error
# or Ctrl-C).
#
# Placement: server on CPU 0 (DBLOCK_BENCH_SERVER_CPU), client on CPU 1 (DBLOCK_BENCH_CPU). The
# server is started under taskset, so the postmaster and every backend it forks inherit the CPU;
# the bench keeps the single-CPU mask it inherits and prints both placements in its header. On a
# one-CPU machine both run on CPU 0 (the header then warns).
#
# Environment: DBLOCK_BENCH_PG_PORT (default 25499), DBLOCK_BENCH_PG_STATE (default
# /tmp/dblock-bench-pg; wiped at start), DBLOCK_BENCH_SERVER_CPU, DBLOCK_BENCH_CPU,
# DBLOCK_BENCH_BUILD_DIR (default build-bench).
# Extra arguments go to postgresql_bench (e.g. --quick, --json-only, --figures pairs,advisory).
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
port=${DBLOCK_BENCH_PG_PORT:-25499}
state=${DBLOCK_BENCH_PG_STATE:-/tmp/dblock-bench-pg}
build_bench postgresql_bench

stop_server() { scripts/servers/postgresql.sh stop "$state" >/dev/null 2>&1 || true; }
trap stop_server EXIT
taskset -c "$server_cpu" scripts/servers/postgresql.sh start "$state" "$port" >&2
# Belt and braces: re-pin the postmaster and all its threads (children forked later inherit it).
taskset -a -p -c "$server_cpu" "$(head -1 "$state/data/postmaster.pid")" >/dev/null

status=0
taskset -c "$cpu" "$build_dir/bench/postgresql_bench" --url "postgresql://postgres@127.0.0.1:$port/postgres" "$@" \
  || status=$?
exit "$status"
