#!/usr/bin/env bash
# Builds the etcd benchmark in Release (build-bench/), starts a throwaway standalone etcd pinned to
# one CPU, runs etcd_bench (dblock beside the raw gRPC recipes) pinned to another CPU, and stops the
# server by its pid file (also on error or Ctrl-C).
#
# Placement: server on CPU 0 (DBLOCK_BENCH_SERVER_CPU), client on CPU 1 (DBLOCK_BENCH_CPU). The server
# is started under taskset (so Go's runtime sizes GOMAXPROCS to that one CPU) and then every thread
# re-pinned with taskset -a -p on its pid, belt and braces; the bench keeps the single-CPU mask it
# inherits and prints both placements in its header. Give both the same CPU
# (DBLOCK_BENCH_SERVER_CPU=1) for the other placement (the header warns). On a one-CPU machine both
# run on CPU 0.
#
# The server: scripts/servers/etcd.sh (one member, data on the state directory's disk, which etcd
# fsyncs at every write; heartbeat 10 ms, election timeout 100 ms).
#
# Environment: DBLOCK_BENCH_ETCD_PORT (default 25479, peer port +1; below 32768, used by no test),
# DBLOCK_BENCH_ETCD_STATE (default /tmp/dblock-bench-etcd; wiped at start), DBLOCK_BENCH_SERVER_CPU,
# DBLOCK_BENCH_CPU, DBLOCK_BENCH_BUILD_DIR (default build-bench), DBLOCK_BENCH_SKIP_BUILD=1 (use the
# built binary). Extra arguments go to etcd_bench (e.g. --quick, --json-only, --figures pairs,handoff).
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
port=${DBLOCK_BENCH_ETCD_PORT:-25479}
state=${DBLOCK_BENCH_ETCD_STATE:-/tmp/dblock-bench-etcd}
build_bench etcd_bench

stop_server() { scripts/servers/etcd.sh stop "$state" >/dev/null 2>&1 || true; }
trap stop_server EXIT
taskset -c "$server_cpu" scripts/servers/etcd.sh start "$state" "$port" >&2
server_pid=$(cat "$state/$port/etcd.pid")
taskset -a -p -c "$server_cpu" "$server_pid" >/dev/null  # every thread of the Go runtime
echo "load: $(uptime)"

status=0
taskset -c "$cpu" "$build_dir/bench/etcd_bench" --url "etcd://127.0.0.1:$port" --server-pid "$server_pid" "$@" \
  || status=$?
echo "load: $(uptime)"
exit "$status"
