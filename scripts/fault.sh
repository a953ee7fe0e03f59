#!/usr/bin/env bash
# Fault-injection harness runner (docs/fault-harness.md): every backend x fault, several seeds,
# then one markdown table of the figures.
#
#   scripts/fault.sh                 short mode: 1 seed per backend x fault, 8 s each, Redis 6 s, ZooKeeper and etcd 4 s
#                                    (what CI's ctest -L fault runs)
#   scripts/fault.sh --long          long mode: 20 seeds per backend x fault
#
# Options (after the mode):
#   --runs N           seeds per backend x fault (short: 1, long: 20); seeds are SEED_BASE..SEED_BASE+N-1
#   --seed-base N      first seed (default 1)
#   --seconds S        length of one run (short: 8, Redis 6, ZooKeeper and etcd 4; long: 10)
#   --ttl-ms T         lease TTL (default 1000)
#   --clients K        contending client processes (default 4)
#   --backends LIST    comma-separated subset of sqlite,postgresql,mariadb,redis,redlock,zookeeper,etcd (default: all
#                      this build has)
#   --faults LIST      comma-separated subset of the faults (default: all that apply to a backend)
#   --budget-minutes M stop starting new runs after M minutes (seeds interleave, so every combination
#                      gets its first seeds before any gets its last)
#   --build DIR        build directory (default build-fault; configured and built if fault_driver is missing)
#   --out FILE         also write the markdown table to FILE (default: BUILD/fault-results/<time>/table.md,
#                      next to each run's log and the RESULT lines)
#
# Environment: JOBS (build parallelism, default 2); FAULT_PG_PORT, FAULT_PGBOUNCER_PORT,
# FAULT_MARIADB_PORT, FAULT_REDIS_PORT, FAULT_REDIS_AOF_PORT (default 25437, 26437, 23309, 24380,
# 24390: not the ports ctest's fixtures use; the second Redis runs with AOF always),
# FAULT_REDLOCK_PORT, FAULT_REDLOCK_AOF_PORT (default 24384, 24394: the first of three masters each);
# FAULT_ZOOKEEPER_PORT (standalone, default 22312), FAULT_ZOOKEEPER_ENSEMBLE_PORT (the first of three
# client ports of the ensemble the leader-* rows use, default 22326; quorum +1000, election +2000);
# FAULT_ETCD_CLUSTER_PORT (the first of three client ports of the etcd cluster every etcd row uses,
# default 23371, then +2 and +4; peer ports +1);
# FAULT_PG_ASYNC_PAIR_PORTS, FAULT_PG_SYNC_PAIR_PORTS, FAULT_MARIADB_PAIR_PORTS (two ports each,
# space-separated, default "25465 25466", "25467 25468", "23333 23334": the replicated pairs of the
# failover rows, PostgreSQL's failover-async and failover-sync and MariaDB's failover).
# The servers run from state directories under /tmp and are stopped on exit, by pid.
# Exit status: 0 all runs held every invariant, 1 some run reported a violation or failed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

mode=short runs="" seconds="" ttl=1000 clients=4 backends="" faults="" budget="" build=build-fault out="" seed_base=1
if [[ "${1:-}" == --long ]]; then mode=long; shift; elif [[ "${1:-}" == --short ]]; then shift; fi
while [[ $# -gt 0 ]]; do
  case "$1" in
    --runs) runs="$2"; shift 2 ;;
    --seed-base) seed_base="$2"; shift 2 ;;
    --seconds) seconds="$2"; shift 2 ;;
    --ttl-ms) ttl="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --backends) backends="$2"; shift 2 ;;
    --faults) faults="$2"; shift 2 ;;
    --budget-minutes) budget="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) sed -n '2,26p' "$0"; exit 0 ;;
    *) echo "fault.sh: unknown argument $1" >&2; sed -n '2,26p' "$0" >&2; exit 64 ;;
  esac
done
redis_seconds=${seconds:-6} zk_seconds=${seconds:-4}  # short mode: as ctest's DBLOCK_FAULT_{REDIS,ZOOKEEPER}_SECONDS
if [[ $mode == long ]]; then runs=${runs:-20}; seconds=${seconds:-10}; redis_seconds=$seconds; zk_seconds=$seconds; else runs=${runs:-1}; seconds=${seconds:-8}; fi

driver="$build/tests/fault/fault_driver"
if [[ ! -x "$driver" || ! -x "$build/tests/fault/fault_client" ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDBLOCK_BUILD_BENCH=OFF >/dev/null
  cmake --build "$build" -j "${JOBS:-2}" --target fault_driver fault_client
fi
"$driver" selftest >/dev/null || { echo "fault.sh: the oracle's self-test failed" >&2; exit 1; }

available=$("$driver" schemes | tr '\n' ' ')
# Every backend this build has runs; one whose server cannot be found fails the run (a missing
# server is never a silent pass), unless --backends left it out.
if [[ -z "$backends" ]]; then
  backends="" missing=""
  [[ " $available " == *" sqlite "* ]] && backends+="sqlite,"
  if [[ " $available " == *" postgresql "* ]]; then
    if command -v pgbouncer >/dev/null && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then backends+="postgresql,"; else missing+=" postgresql (initdb, pgbouncer)"; fi
  fi
  if [[ " $available " == *" mysql "* ]]; then
    if command -v mariadbd >/dev/null; then backends+="mariadb,"; else missing+=" mariadb (mariadbd)"; fi
  fi
  if [[ " $available " == *" redis "* ]]; then
    if command -v redis-server >/dev/null; then backends+="redis,redlock,"; else missing+=" redis (redis-server)"; fi
  fi
  if [[ " $available " == *" zookeeper "* ]]; then
    if [[ -r /usr/share/java/zookeeper.jar ]]; then backends+="zookeeper,"; else missing+=" zookeeper (zookeeper.jar)"; fi
  fi
  if [[ " $available " == *" etcd "* ]]; then
    if command -v etcd >/dev/null && command -v etcdctl >/dev/null; then backends+="etcd,"; else missing+=" etcd (etcd, etcdctl)"; fi
  fi
  if [[ -n "$missing" ]]; then
    echo "fault.sh: this build has backends whose servers are not installed:$missing (scripts/install-deps.sh; or --backends)" >&2
    exit 1
  fi
  backends=${backends%,}
fi
faults_for() {
  case "$1" in
    sqlite) echo "none client-kill client-stop writer-kill disk-full" ;;
    postgresql) echo "none client-kill client-stop session-kill server-restart server-stop relay-stall conn-full pgbouncer failover-async failover-sync" ;;
    mariadb) echo "none client-kill client-stop session-kill server-restart server-stop relay-stall conn-full failover" ;;
    redis) echo "none client-kill client-stop conn-kill pubsub-kill server-restart server-restart-aof server-stop relay-stall busy-script" ;;
    redlock) echo "none client-kill node-kill node-kill-two node-restart node-restart-two node-restart-empty node-restart-empty-two node-stop busy-script" ;;
    zookeeper) echo "none client-kill client-stop session-expire server-stop server-restart relay-stall reply-cut leader-kill leader-stop" ;;
    etcd) echo "none client-kill client-stop relay-stall leader-kill leader-stop quorum-loss server-restart" ;;
  esac
}

stamp=$(date -u +%Y%m%d-%H%M%S)
logdir="$(cd "$build" && pwd)/fault-results/$stamp"
mkdir -p "$logdir"
results="$logdir/results.txt"
out=${out:-$logdir/table.md}

pg_port=${FAULT_PG_PORT:-25437} bouncer_port=${FAULT_PGBOUNCER_PORT:-26437} maria_port=${FAULT_MARIADB_PORT:-23309}
pg_state=/tmp/dblock-fault-sh-pg-$pg_port
maria_state=/tmp/dblock-fault-sh-mariadb-$maria_port
# failover rows: replicated pairs (scripts/servers/*.sh start-pair; docs/failover.md)
pg_async_ports=(${FAULT_PG_ASYNC_PAIR_PORTS:-25465 25466}) pg_sync_ports=(${FAULT_PG_SYNC_PAIR_PORTS:-25467 25468})
maria_pair_ports=(${FAULT_MARIADB_PAIR_PORTS:-23333 23334})
pg_async_state=/tmp/dblock-fault-sh-pg-async-pair-${pg_async_ports[0]}
pg_sync_state=/tmp/dblock-fault-sh-pg-sync-pair-${pg_sync_ports[0]}
maria_pair_state=/tmp/dblock-fault-sh-mariadb-pair-${maria_pair_ports[0]}
redis_port=${FAULT_REDIS_PORT:-24380} redis_aof_port=${FAULT_REDIS_AOF_PORT:-24390}
redis_state=/tmp/dblock-fault-sh-redis-$redis_port
redis_aof_state=/tmp/dblock-fault-sh-redis-aof-$redis_aof_port
redlock_port=${FAULT_REDLOCK_PORT:-24384} redlock_aof_port=${FAULT_REDLOCK_AOF_PORT:-24394}
redlock_ports=("$redlock_port" $((redlock_port + 1)) $((redlock_port + 2)))
redlock_aof_ports=("$redlock_aof_port" $((redlock_aof_port + 1)) $((redlock_aof_port + 2)))
redlock_state=/tmp/dblock-fault-sh-redlock-$redlock_port
redlock_aof_state=/tmp/dblock-fault-sh-redlock-aof-$redlock_aof_port
zk_port=${FAULT_ZOOKEEPER_PORT:-22312} zk_ens_port=${FAULT_ZOOKEEPER_ENSEMBLE_PORT:-22326}
zk_ens_ports=("$zk_ens_port" $((zk_ens_port + 1)) $((zk_ens_port + 2)))
zk_state=/tmp/dblock-fault-sh-zookeeper-$zk_port
etcd_port=${FAULT_ETCD_CLUSTER_PORT:-23371}
etcd_ports=("$etcd_port" $((etcd_port + 2)) $((etcd_port + 4)))
etcd_state=/tmp/dblock-fault-sh-etcd-cluster-$etcd_port
zk_ens_state=/tmp/dblock-fault-sh-zookeeper-ensemble-$zk_ens_port
redlock_url() { local IFS=,; local hosts=("${@/#/127.0.0.1:}"); echo "redlock://${hosts[*]}"; }
started=()
cleanup() {
  for s in "${started[@]}"; do
    case "$s" in
      postgresql)
        scripts/servers/postgresql.sh stop "$pg_state" >/dev/null 2>&1 || true
        scripts/servers/postgresql.sh stop "$pg_async_state" >/dev/null 2>&1 || true
        scripts/servers/postgresql.sh stop "$pg_sync_state" >/dev/null 2>&1 || true ;;
      mariadb)
        scripts/servers/mariadb.sh stop "$maria_state" >/dev/null 2>&1 || true
        scripts/servers/mariadb.sh stop "$maria_pair_state" >/dev/null 2>&1 || true ;;
      redis)
        scripts/servers/redis.sh stop "$redis_state" >/dev/null 2>&1 || true
        scripts/servers/redis.sh stop "$redis_aof_state" >/dev/null 2>&1 || true ;;
      redlock)
        scripts/servers/redis.sh stop "$redlock_state" >/dev/null 2>&1 || true
        scripts/servers/redis.sh stop "$redlock_aof_state" >/dev/null 2>&1 || true ;;
      zookeeper)
        scripts/servers/zookeeper.sh stop "$zk_state" >/dev/null 2>&1 || true
        scripts/servers/zookeeper.sh stop "$zk_ens_state" >/dev/null 2>&1 || true ;;
      etcd)
        scripts/servers/etcd.sh stop "$etcd_state" >/dev/null 2>&1 || true ;;
    esac
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

selected() { [[ -z "$faults" || ",$faults," == *",$1,"* ]]; }
IFS=, read -r -a backend_list <<< "$backends"
for b in "${backend_list[@]}"; do
  case "$b" in
    postgresql)
      started+=(postgresql)
      scripts/servers/postgresql.sh start "$pg_state" "$pg_port" "$bouncer_port"
      if selected failover-async; then scripts/servers/postgresql.sh start-pair "$pg_async_state" "${pg_async_ports[@]}" async; fi
      if selected failover-sync; then scripts/servers/postgresql.sh start-pair "$pg_sync_state" "${pg_sync_ports[@]}" sync; fi ;;
    mariadb)
      started+=(mariadb)
      scripts/servers/mariadb.sh start "$maria_state" "$maria_port"
      if selected failover; then scripts/servers/mariadb.sh start-pair "$maria_pair_state" "${maria_pair_ports[@]}"; fi ;;
    redis)
      started+=(redis)
      DBLOCK_REDIS_AOF=no scripts/servers/redis.sh start "$redis_state" "$redis_port"
      DBLOCK_REDIS_AOF=always scripts/servers/redis.sh start "$redis_aof_state" "$redis_aof_port" ;;
    redlock)
      started+=(redlock)
      DBLOCK_REDIS_AOF=no scripts/servers/redis.sh start "$redlock_state" "${redlock_ports[@]}"
      DBLOCK_REDIS_AOF=always scripts/servers/redis.sh start "$redlock_aof_state" "${redlock_aof_ports[@]}" ;;
    zookeeper)
      started+=(zookeeper)
      scripts/servers/zookeeper.sh start "$zk_state" "$zk_port"
      scripts/servers/zookeeper.sh start "$zk_ens_state" "${zk_ens_ports[@]}" ;;
    etcd)
      started+=(etcd)
      scripts/servers/etcd.sh cluster "$etcd_state" "${etcd_ports[@]}" ;;
    sqlite) ;;
    *) echo "fault.sh: unknown backend $b" >&2; exit 64 ;;
  esac
done

run_one() {  # backend fault seed
  local b="$1" f="$2" seed="$3" args=() secs="$seconds" driver_fault="$2"
  case "$b" in
    sqlite) ;;
    postgresql)
      local direct="postgresql://postgres@127.0.0.1:$pg_port/postgres"
      if [[ $f == pgbouncer ]]; then
        args=(--url "postgresql://postgres@127.0.0.1:$bouncer_port/postgres?prepared=0" --admin-url "$direct" --state "$pg_state")
      elif [[ $f == failover-* ]]; then
        local -n pair=pg_${f#failover-}_ports
        local pair_state_var=pg_${f#failover-}_state
        args=(--url "postgresql://postgres@127.0.0.1:${pair[0]},127.0.0.1:${pair[1]}/postgres" --state "${!pair_state_var}")
        driver_fault=failover
      else
        args=(--url "$direct" --state "$pg_state")
      fi
      args+=(--server-script "$root/scripts/servers/postgresql.sh") ;;
    mariadb)
      if [[ $f == failover ]]; then
        args=(--url "mysql://root@127.0.0.1:${maria_pair_ports[0]},127.0.0.1:${maria_pair_ports[1]}/dblock_test"
              --state "$maria_pair_state")
      else
        args=(--url "mysql://root@127.0.0.1:$maria_port/dblock_test" --state "$maria_state")
      fi
      args+=(--server-script "$root/scripts/servers/mariadb.sh") ;;
    redis)
      secs=$redis_seconds
      if [[ $f == server-restart-aof ]]; then
        args=(--url "redis://127.0.0.1:$redis_aof_port" --state "$redis_aof_state")
      else
        args=(--url "redis://127.0.0.1:$redis_port" --state "$redis_state")
      fi
      args+=(--server-script "$root/scripts/servers/redis.sh") ;;
    redlock)
      secs=$redis_seconds
      if [[ $f == node-restart* && $f != node-restart-empty* ]]; then  # back at once with their keys: AOF always
        args=(--url "$(redlock_url "${redlock_aof_ports[@]}")" --state "$redlock_aof_state")
      else
        args=(--url "$(redlock_url "${redlock_ports[@]}")" --state "$redlock_state")
      fi
      args+=(--server-script "$root/scripts/servers/redis.sh") ;;
    zookeeper)
      secs=$zk_seconds
      if [[ $f == leader-* ]]; then
        local IFS=,; local hosts=("${zk_ens_ports[@]/#/127.0.0.1:}")
        args=(--url "zookeeper://${hosts[*]}" --state "$zk_ens_state"); unset IFS
      else
        args=(--url "zookeeper://127.0.0.1:$zk_port" --state "$zk_state")
      fi
      args+=(--server-script "$root/scripts/servers/zookeeper.sh") ;;
    etcd)
      secs=$zk_seconds
      local IFS=,; local hosts=("${etcd_ports[@]/#/127.0.0.1:}")
      args=(--url "etcd://${hosts[*]}" --state "$etcd_state" --server-script "$root/scripts/servers/etcd.sh"); unset IFS ;;
  esac
  local log="$logdir/$b-$f-$seed.log"
  if "$driver" run --fault "$driver_fault" --seed "$seed" --seconds "$secs" --ttl-ms "$ttl" --clients "$clients" \
       --results "$results" "${args[@]}" >"$log" 2>&1; then
    echo "ok        $b $f seed $seed"
  else
    echo "FAILED    $b $f seed $seed (exit $?): $(grep -E '^verdict|run failed|run problem' "$log" | head -2 | tr '\n' ' ') — $log"
    failures=$((failures + 1))
  fi
}


echo "fault.sh: $mode mode, $runs seed(s) from $seed_base, $seconds s per run (Redis $redis_seconds s, ZooKeeper and etcd $zk_seconds s), TTL $ttl ms, $clients clients; backends: $backends"
echo "fault.sh: per-run logs in $logdir"
failures=0
start=$(date +%s)
for ((i = 0; i < runs; i++)); do
  seed=$((seed_base + i))
  for b in "${backend_list[@]}"; do
    for f in $(faults_for "$b"); do
      selected "$f" || continue
      if [[ -n "$budget" ]] && (( $(date +%s) - start >= budget * 60 )); then
        echo "fault.sh: budget of $budget minutes spent; not starting more runs"
        break 3
      fi
      run_one "$b" "$f" "$seed"
    done
  done
done

echo
"$driver" report "$results" | tee "$out" || true
echo
echo "fault.sh: table written to $out; $failures failed run(s)"
[[ $failures -eq 0 ]]
