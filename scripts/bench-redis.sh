#!/usr/bin/env bash
# Builds the benchmarks in Release (build-bench/), starts a throwaway Redis pinned to one CPU, runs
# the Redis benchmark pinned to another CPU, and stops the server again by its state directory
# (also on error or Ctrl-C).
#
# Placement: server on CPU 0 (DBLOCK_BENCH_SERVER_CPU), client on CPU 1 (DBLOCK_BENCH_CPU). The
# server is started under taskset and then re-pinned with taskset -a -p on its pid (all threads:
# redis-server's background I/O threads too); the bench keeps the single-CPU mask it inherits and
# prints both placements in its header. Give both the same CPU (DBLOCK_BENCH_SERVER_CPU=1) for the
# other placement: every round trip is then two context switches on one CPU instead of a crossing
# between CPUs (the header warns). On a one-CPU machine both run on CPU 0.
#
# Persistence: no AOF by default (and never RDB snapshots: scripts/servers/redis.sh); set
# DBLOCK_BENCH_REDIS_AOF=everysec or always to measure with one. The header prints which.
#
# Redlock: three more masters (ports PORT+1..PORT+3, state STATE-redlock) on the server CPU, for the
# redlock figure (--redlock-url).
#
# Environment: DBLOCK_BENCH_REDIS_PORT (default 25379; below 32768, used by no test),
# DBLOCK_BENCH_REDIS_STATE (default /tmp/dblock-bench-redis; wiped at start), DBLOCK_BENCH_REDIS_AOF,
# DBLOCK_BENCH_SERVER_CPU, DBLOCK_BENCH_CPU, DBLOCK_BENCH_BUILD_DIR (default build-bench).
# Extra arguments go to redis_bench (e.g. --quick, --json-only, --figures pairs,scale).
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
port=${DBLOCK_BENCH_REDIS_PORT:-25379}
state=${DBLOCK_BENCH_REDIS_STATE:-/tmp/dblock-bench-redis}
aof=${DBLOCK_BENCH_REDIS_AOF:-no}
build_bench redis_bench

redlock_ports=($((port + 1)) $((port + 2)) $((port + 3)))
stop_server() {
  scripts/servers/redis.sh stop "$state" >/dev/null 2>&1 || true
  scripts/servers/redis.sh stop "$state-redlock" >/dev/null 2>&1 || true
}
trap stop_server EXIT
DBLOCK_REDIS_AOF="$aof" taskset -c "$server_cpu" scripts/servers/redis.sh start "$state" "$port" >&2
DBLOCK_REDIS_AOF="$aof" taskset -c "$server_cpu" scripts/servers/redis.sh start "$state-redlock" "${redlock_ports[@]}" >&2
# redis-server daemonizes (it inherits the mask); re-pin every thread of each, belt and braces.
server_pid=$(head -1 "$state/$port/redis.pid")
taskset -a -p -c "$server_cpu" "$server_pid" >/dev/null
redlock_url="redlock://"
for p in "${redlock_ports[@]}"; do
  taskset -a -p -c "$server_cpu" "$(head -1 "$state-redlock/$p/redis.pid")" >/dev/null
  redlock_url+="127.0.0.1:$p,"
done

status=0
taskset -c "$cpu" "$build_dir/bench/redis_bench" --url "redis://127.0.0.1:$port" --server-pid "$server_pid" \
  --redlock-url "${redlock_url%,}" "$@" \
  || status=$?
exit "$status"
