#!/usr/bin/env bash
# The peer a shell user would pick instead of `dblock run` on etcd: `etcdctl lock NAME -- cmd`
# (Debian's etcd-client), measured beside `dblock run --key NAME -- cmd` in the same run, against
# a throwaway standalone etcd pinned to CPU 0, both clients pinned to CPU 1 (as scripts/bench-etcd.sh).
# Each invocation runs `true` under the lock: what is timed is the whole command, process start to
# exit (connect, lock, run, release), the cost a cron job or a shell script pays per run.
#
#   one: N invocations one after the other, the two tools alternating in blocks of 10; p50 and p90
#        per invocation, and the ratio of the p50s.
#   two: two loops of N/2 invocations at once on the same name (two contenders); the wall time of
#        the whole, per invocation.
#
# Usage: scripts/bench-etcd-peers.sh [N] (default 200). Environment: DBLOCK_BENCH_ETCD_PORT
# (default 25489), DBLOCK_BENCH_ETCD_STATE (default /tmp/dblock-bench-etcd-peers), DBLOCK_CLI (the
# dblock command; default build/src/cli/dblock, a RelWithDebInfo build).
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
n=${1:-200}
port=${DBLOCK_BENCH_ETCD_PORT:-25489}
state=${DBLOCK_BENCH_ETCD_STATE:-/tmp/dblock-bench-etcd-peers}
dblock=${DBLOCK_CLI:-build/src/cli/dblock}
[[ -x "$dblock" ]] || { echo "bench-etcd-peers: $dblock not built (scripts/test.sh builds it)" >&2; exit 1; }
command -v etcdctl >/dev/null || { echo "bench-etcd-peers: etcdctl not found (apt-get install etcd-client)" >&2; exit 1; }

stop_server() { scripts/servers/etcd.sh stop "$state" >/dev/null 2>&1 || true; }
trap stop_server EXIT
taskset -c "$server_cpu" scripts/servers/etcd.sh start "$state" "$port" >&2
taskset -a -p -c "$server_cpu" "$(cat "$state/$port/etcd.pid")" >/dev/null

endpoint="127.0.0.1:$port"
url="etcd://$endpoint?prefix="  # etcdctl lock's own namespace: the same lock for both tools
run_etcdctl() { taskset -c "$cpu" etcdctl --endpoints "$endpoint" lock "$1" -- true >/dev/null; }
run_dblock() { taskset -c "$cpu" "$dblock" --url "$url" run --key "$1" --wait 30 -- true; }

# Prints the microseconds one call of "$@" took.
timed() {
  local t0 t1
  t0=$(date +%s%N); "$@"; t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000))
}

# p50 and p90 (ms) of the numbers on stdin.
percentiles() {
  sort -n | awk '{v[NR] = $1} END {printf "%.2f %.2f\n", v[int(NR * 0.5 + 0.5)] / 1000, v[int(NR * 0.9 + 0.5)] / 1000}'
}

echo "load: $(uptime)"
echo "etcd $(etcd --version | sed -n 's/^etcd Version: //p') on $endpoint (CPU $server_cpu), clients on CPU $cpu, N=$n"
: > "$state/etcdctl.us"; : > "$state/dblock.us"
for ((i = 0; i < 10; ++i)); do run_etcdctl warm; run_dblock warm; done
for ((block = 0; block < n / 10; ++block)); do
  for ((i = 0; i < 10; ++i)); do timed run_etcdctl one >> "$state/etcdctl.us"; done
  for ((i = 0; i < 10; ++i)); do timed run_dblock one >> "$state/dblock.us"; done
done
read -r e50 e90 < <(percentiles < "$state/etcdctl.us")
read -r d50 d90 < <(percentiles < "$state/dblock.us")
echo "one after the other, per invocation (ms): dblock run p50 $d50 p90 $d90 | etcdctl lock p50 $e50 p90 $e90 | p50 ratio $(awk -v a="$d50" -v b="$e50" 'BEGIN {printf "%.2f", a / b}')"

# Two loops at once on one name.
two() {
  local tool="$1" t0 t1
  t0=$(date +%s%N)
  for side in 1 2; do
    ( for ((i = 0; i < n / 2; ++i)); do "run_$tool" two; done ) &
  done
  wait
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000 / n))
}
dtwo=$(two dblock); etwo=$(two etcdctl)
echo "two contenders, wall per invocation (ms): dblock run $(awk -v a="$dtwo" 'BEGIN {printf "%.2f", a / 1000}') | etcdctl lock $(awk -v a="$etwo" 'BEGIN {printf "%.2f", a / 1000}') | ratio $(awk -v a="$dtwo" -v b="$etwo" 'BEGIN {printf "%.2f", a / b}')"
echo "load: $(uptime)"
