#!/usr/bin/env bash
# Builds the ZooKeeper benchmark in Release (build-bench/), starts a throwaway standalone ZooKeeper
# pinned to one CPU, runs zookeeper_bench (dblock beside the raw C-client recipe) and then Apache
# Curator's InterProcessMutex (bench/curator/CuratorBench.java, compiled with javac against Debian's
# jars) pinned to another CPU, and stops the server by its pid file (also on error or Ctrl-C).
#
# Placement: server on CPU 0 (DBLOCK_BENCH_SERVER_CPU), clients on CPU 1 (DBLOCK_BENCH_CPU). The server
# is started under taskset and then every thread of the JVM re-pinned with taskset -a -p on its pid;
# the bench keeps the single-CPU mask it inherits and prints both placements in its header. Give
# both the same CPU (DBLOCK_BENCH_SERVER_CPU=1) for the other placement (the header warns).
#
# Environment: DBLOCK_BENCH_ZOOKEEPER_PORT (default 25181; below 32768, used by no test),
# DBLOCK_BENCH_ZOOKEEPER_STATE (default /tmp/dblock-bench-zookeeper; wiped at start),
# DBLOCK_BENCH_SERVER_CPU, DBLOCK_BENCH_CPU, DBLOCK_BENCH_BUILD_DIR (default build-bench),
# DBLOCK_BENCH_SKIP_BUILD=1 (use the built binary), DBLOCK_BENCH_CURATOR=0 (skip Curator).
# Extra arguments go to zookeeper_bench (e.g. --quick, --json-only, --figures pairs,handoff); Curator
# runs with the same pairs and iterations (defaults 5000 and 300, --quick 200 and 20).
set -euo pipefail

source "$(dirname "$0")/bench-common.sh"
port=${DBLOCK_BENCH_ZOOKEEPER_PORT:-25181}
state=${DBLOCK_BENCH_ZOOKEEPER_STATE:-/tmp/dblock-bench-zookeeper}
build_bench zookeeper_bench

# Curator's side: the same N as the bench's arguments say.
pairs=5000 warmup=500 iterations=300
args=("$@")
for ((i = 0; i < ${#args[@]}; ++i)); do
  case "${args[i]}" in
    --quick) pairs=200 warmup=50 iterations=20 ;;
    --pairs) pairs=${args[i + 1]} ;;
    --iterations) iterations=${args[i + 1]} ;;
  esac
done
curator=${DBLOCK_BENCH_CURATOR:-1}
classes="$build_dir/bench/curator"
classpath="/usr/share/java/curator-recipes.jar:/usr/share/java/slf4j-nop.jar"  # their manifests name the rest
if [ "$curator" = 1 ]; then
  if command -v javac >/dev/null && [ -r /usr/share/java/curator-recipes.jar ]; then
    mkdir -p "$classes"
    javac -d "$classes" -cp "$classpath" bench/curator/CuratorBench.java
  else
    echo "bench-zookeeper.sh: no javac or no Curator jars (apt-get install default-jdk-headless libcurator-recipes-java): Curator skipped" >&2
    curator=0
  fi
fi

stop_server() { scripts/servers/zookeeper.sh stop "$state" >/dev/null 2>&1 || true; }
trap stop_server EXIT
taskset -c "$server_cpu" scripts/servers/zookeeper.sh start "$state" "$port" >&2
server_pid=$(cat "$state/$port/zookeeper.pid")
taskset -a -p -c "$server_cpu" "$server_pid" >/dev/null  # every JVM thread, belt and braces
echo "load: $(uptime)"

status=0
taskset -c "$cpu" "$build_dir/bench/zookeeper_bench" --url "zookeeper://127.0.0.1:$port" --server-pid "$server_pid" "$@" \
  || status=$?
if [ "$curator" = 1 ]; then
  echo
  echo "curator placement: server CPU $server_cpu, client (JVM, every thread) CPU $cpu"
  taskset -c "$cpu" java -Xms64m -Xmx256m -XX:+UseSerialGC -cp "$classes:$classpath" \
    CuratorBench "127.0.0.1:$port" "$pairs" "$warmup" "$iterations" 4 || status=$?
fi
echo "load: $(uptime)"
exit "$status"
