# Sourced by scripts/bench*.sh: what every benchmark launcher shares. Moves to the source tree and
# sets build_dir (DBLOCK_BENCH_BUILD_DIR, default build-bench), cpu (the client CPU:
# DBLOCK_BENCH_CPU, default 1, or 0 on a one-CPU machine) and server_cpu (DBLOCK_BENCH_SERVER_CPU,
# default 0, for the launchers that start a server); build_bench TARGET builds one benchmark in
# Release (DBLOCK_BENCH_SKIP_BUILD=1: use the binary already in the build dir, whatever its build type;
# the benchmark's header prints it).
cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${DBLOCK_BENCH_BUILD_DIR:-build-bench}
server_cpu=${DBLOCK_BENCH_SERVER_CPU:-0}
cpu=${DBLOCK_BENCH_CPU:-1}
if [ "$(nproc --all)" -le "$cpu" ]; then
  cpu=0  # a single-CPU machine has no CPU 1
fi

build_bench() {
  if [ "${DBLOCK_BENCH_SKIP_BUILD:-0}" = 1 ]; then
    [ -x "$build_dir/bench/$1" ] || { echo "$build_dir/bench/$1 not built (DBLOCK_BENCH_SKIP_BUILD=1)" >&2; exit 1; }
    return 0
  fi
  local jobs=$(( $(nproc) < 2 ? $(nproc) : 2 ))
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_CLI=OFF >/dev/null
  cmake --build "$build_dir" -j"$jobs" --target "$1"
}
