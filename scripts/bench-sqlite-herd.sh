#!/usr/bin/env bash
# The SQLite herd: N `dblock run --key hot --ttl 30s --wait forever` processes (default 300) on one
# key of one lock file, each COMMAND holding the lock ~10 ms. Prints one row: all finished?, any
# overlap?, releases in doubt, stderr lines (the warning storm), the total time against
# N x (mean hold + median hand-off), and the hand-off gaps (a COMMAND's end to the next one's
# start). An outcome row, not a timing to assert (docs/benchmarks.md, "The SQLite herd").
#
#   scripts/bench-sqlite-herd.sh [N] [HOLD_SECONDS]
#
# Environment: DBLOCK_BIN (a dblock binary; default: the `dblock_cli` target built in Release in
# build-bench/, with -DDBLOCK_WITH_SQLITE=ON only), DBLOCK_BENCH_CPU (bench-common.sh: every
# process is pinned to that one CPU). Exit status 0 only when every process finished, nothing
# overlapped and no release was in doubt.
set -euo pipefail
source "$(dirname "$0")/bench-common.sh"

n=${1:-300}
hold=${2:-0.01}
bin=${DBLOCK_BIN:-}
if [[ -z "$bin" ]]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DDBLOCK_BUILD_TESTS=OFF -DDBLOCK_BUILD_CLI=ON \
    -DDBLOCK_WITH_POSTGRESQL=OFF -DDBLOCK_WITH_MYSQL=OFF -DDBLOCK_WITH_REDIS=OFF >/dev/null
  cmake --build "$build_dir" -j2 --target dblock_cli
  bin=$build_dir/src/cli/dblock
fi
bin=$(realpath "$bin")

dir=$(mktemp -d)
if [[ -n "${DBLOCK_HERD_KEEP:-}" ]]; then echo "keeping $dir" >&2; else trap 'rm -rf "$dir"' EXIT; fi
url="sqlite://$dir/locks.db"
"$bin" --url "$url" migrate >/dev/null

# COMMAND logs its start and end (bash's EPOCHREALTIME, µs) with appends of one line each.
command='echo "$EPOCHREALTIME s" >>"$1"; sleep "$2"; echo "$EPOCHREALTIME e" >>"$1"'
start=$(date +%s.%N)
pids=()
for ((i = 0; i < n; i++)); do
  taskset -c "$cpu" "$bin" --url "$url" run --key hot --ttl 30s --wait forever -- \
    bash -c "$command" bash "$dir/events" "$hold" 2>"$dir/err.$i" >/dev/null &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=$((failed + 1)); done
end=$(date +%s.%N)

cat "$dir"/err.* >"$dir/stderr" || true
stderr_lines=$(wc -l <"$dir/stderr")
in_doubt=$(grep -c "in doubt" "$dir/stderr" || true)
locked=$(grep -c "database is locked" "$dir/stderr" || true)

# Holds and hand-offs from the events (in time order); an "s" while held is an overlap.
sort -n "$dir/events" | awk -v gaps="$dir/gaps" '
  $2 == "s" { if (held) overlap++; held = 1; starts++; if (last_end) print ($1 - last_end) * 1000 > gaps; s = $1 }
  $2 == "e" { held = 0; holds += ($1 - s) * 1000; last_end = $1 }
  END { printf "%d %d %.3f\n", starts, overlap, starts ? holds / starts : 0 }' >"$dir/summary"
touch "$dir/gaps"
read -r starts overlap mean_hold <"$dir/summary"
sort -n "$dir/gaps" >"$dir/gaps.sorted"
gap_count=$(wc -l <"$dir/gaps.sorted")
quantile() {  # quantile Q: the gap at that rank (0 when none)
  if ((gap_count == 0)); then echo 0; return; fi
  local rank
  rank=$(awk -v n="$gap_count" -v q="$1" 'BEGIN { r = int(n * q + 0.999999); print (r < 1 ? 1 : r) }')
  sed -n "${rank}p" "$dir/gaps.sorted"
}
median=$(quantile 0.5)
p90=$(quantile 0.9)
max=$(quantile 1)
awk -v n="$n" -v t0="$start" -v t1="$end" -v starts="$starts" -v failed="$failed" -v overlap="$overlap" \
  -v in_doubt="$in_doubt" -v stderr_lines="$stderr_lines" -v locked="$locked" -v mean_hold="$mean_hold" \
  -v median="$median" -v p90="$p90" -v max="$max" -v cpu="$cpu" 'BEGIN {
  printf "| processes | finished | failed | overlaps | in doubt | stderr lines | \"database is locked\" | total s | N x (hold + median hand-off) s | mean hold ms | hand-off median / p90 / max ms | CPU |\n"
  printf "|---|---|---|---|---|---|---|---|---|---|---|---|\n"
  printf "| %d | %d | %d | %d | %d | %d | %d | %.2f | %.2f | %.2f | %.2f / %.2f / %.2f | %s |\n", n, starts, failed,
         overlap, in_doubt, stderr_lines, locked, t1 - t0, n * (mean_hold + median) / 1000, mean_hold, median, p90, max, cpu
}'
[[ $failed -eq 0 && $overlap -eq 0 && $in_doubt -eq 0 && $starts -eq $n ]]
