#!/usr/bin/env bash
# Builds the benchmarks in Release (build-bench/), starts a throwaway MariaDB pinned to one CPU,
# runs the MySQL/MariaDB benchmark pinned to another CPU, and stops the server again (also on error
# or Ctrl-C).
#
# Placement: server on CPU 0 (DBLOCK_BENCH_SERVER_CPU), client on CPU 1 (DBLOCK_BENCH_CPU). The
# server is started under taskset and then re-pinned with taskset -a -p on its pid (all threads);
# the bench keeps the single-CPU mask it inherits and prints both placements in its header. On a
# one-CPU machine both run on CPU 0 (the header then warns).
#
# Environment: DBLOCK_BENCH_MYSQL_PORT (default 23399), DBLOCK_BENCH_MYSQL_STATE (default
# /tmp/dblock-bench-maria; wiped at start), DBLOCK_BENCH_SERVER_CPU, DBLOCK_BENCH_CPU,
# DBLOCK_BENCH_BUILD_DIR (default build-bench).
# Extra arguments go to mysql_bench (e.g. --quick, --json-only, --figures pairs,session).
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
port=${DBLOCK_BENCH_MYSQL_PORT:-23399}
state=${DBLOCK_BENCH_MYSQL_STATE:-/tmp/dblock-bench-maria}
build_bench mysql_bench

stop_server() { scripts/servers/mariadb.sh stop "$state" >/dev/null 2>&1 || true; }
trap stop_server EXIT
taskset -c "$server_cpu" scripts/servers/mariadb.sh start "$state" "$port" >&2
# mariadbd is one process with many threads: pin every thread of it (threads created later inherit).
server_pid=$(cat "$state/mysqld.pid")
taskset -a -p -c "$server_cpu" "$server_pid" >/dev/null

status=0
taskset -c "$cpu" "$build_dir/bench/mysql_bench" --url "mysql://root@127.0.0.1:$port/dblock_test" \
  --server-pid "$server_pid" "$@" || status=$?
exit "$status"
