#!/usr/bin/env bash
# Throwaway PostgreSQL (and pgbouncer) for tests and benchmarks, on 127.0.0.1 only.
#
#   postgresql.sh start STATE_DIR PORT [PGBOUNCER_PORT [STANDBY_PORT]]
#                                  initdb + pg_ctl start (+ pgbouncer, pool_mode=transaction)
#                                  (+ a streaming standby made with pg_basebackup, in recovery)
#   postgresql.sh stop STATE_DIR                          stop both by the pids in their pid files
#   postgresql.sh restart STATE_DIR [fast|immediate]      restart PostgreSQL keeping its data
#
# A replicated pair for failover tests (nodes `a` and `b`: data directories STATE_DIR/a, STATE_DIR/b):
#   postgresql.sh start-pair STATE_DIR PORT_A PORT_B [async|sync]
#                                  a = primary on PORT_A; b = its streaming standby on PORT_B made with
#                                  pg_basebackup -R -X stream (application_name=dblock_standby); sync:
#                                  synchronous_standby_names = 'dblock_standby' on the primary. Returns
#                                  once the standby streams (and is `sync` in sync mode)
#   postgresql.sh failover STATE_DIR [immediate|fast]     stop the primary (immediate: a crash), promote
#                                  the standby, then rebuild the old primary as its standby (pg_basebackup)
#   postgresql.sh lag STATE_DIR    SIGSTOP the primary's walsenders (the standby stops receiving WAL)
#   postgresql.sh unlag STATE_DIR  SIGCONT them
#   postgresql.sh primary-port STATE_DIR | standby-port STATE_DIR    print the node's port
#   (`stop STATE_DIR` stops a pair too.) STATE_DIR/{mode,a.port,b.port,primary} describe the pair.
#
# STATE_DIR holds the data directory, sockets, logs and pid files; it is created (0755) and owned
# by an unprivileged user, because initdb and postgres refuse to run as root: as root the servers
# run as the `postgres` system user that Debian's package creates. Nothing is ever stopped by name.
set -euo pipefail

bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[[ -n "$bindir" ]] || { echo "postgresql.sh: no /usr/lib/postgresql/*/bin (apt-get install postgresql)" >&2; exit 1; }

as_server_user() {
  if [[ $(id -u) -eq 0 ]]; then runuser -u postgres -- "$@"; else "$@"; fi
}

cmd="${1:-}"; state="${2:-}"
[[ -n "$cmd" && -n "$state" ]] || { sed -n '2,25p' "$0"; exit 64; }

source "$(dirname "$0")/clock.sh"  # clock_preload: a server whose clock a test steps

start_postgres() {
  local port="$1"
  as_server_user "${clock_preload[@]}" "$bindir/pg_ctl" -D "$state/data" -l "$state/postgresql.log" -w -t 60 \
    -o "-p $port -k $state -c listen_addresses=127.0.0.1" start >/dev/null
}

# ---- the replicated pair ----------------------------------------------------------------------
standby_name=dblock_standby
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
other() { if [[ "$1" == a ]]; then echo b; else echo a; fi; }
node_port() { cat "$state/$1.port"; }
primary_node() {
  local p; p=$(cat "$state/primary" 2>/dev/null) || true
  [[ "$p" == a || "$p" == b ]] || { echo "postgresql.sh: no pair in $state (start-pair first)" >&2; exit 1; }
  echo "$p"
}
alive() {  # PID: exists and is not a zombie (pid 1 here may reap the detached servers late)
  local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}
# postmaster_pid DIR: the pid in DIR/postmaster.pid while that process is DIR's postmaster.
postmaster_pid() {
  local pid; pid=$(head -1 "$1/postmaster.pid" 2>/dev/null) || return 1
  [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "-D $1 " && echo "$pid"
}
pair_running() { [[ -f "$state/a/postmaster.pid" || -f "$state/b/postmaster.pid" || -f "$state/data/postmaster.pid" ]]; }

# sql NODE STATEMENT...: psql on the node's unix socket in STATE_DIR, one transaction per statement,
# unaligned tuples only; bounded (60 s).
sql() {
  local port args=() s; port=$(node_port "$1"); shift
  for s in "$@"; do args+=(-c "$s"); done
  PGCONNECT_TIMEOUT=5 timeout 60 "$bindir/psql" -h "$state" -p "$port" -U postgres -d postgres -XAtq "${args[@]}"
}

start_node() {
  local node="$1" lock pid
  lock="$state/.s.PGSQL.$(node_port "$node").lock"
  # A postmaster killed by SIGKILL leaves its socket lock behind, naming a pid that may still be an
  # unreaped zombie here: postgres would refuse to start while that pid exists.
  if [[ -f "$lock" ]]; then
    pid=$(head -1 "$lock"); alive "$pid" || rm -f "$lock" "${lock%.lock}"
  fi
  as_server_user "${clock_preload[@]}" "$bindir/pg_ctl" -D "$state/$node" -l "$state/$node.log" -w -t 60 \
    -o "-p $(node_port "$node") -k $state -c listen_addresses=127.0.0.1" start >/dev/null
}

# make_standby NODE FROM: STATE_DIR/NODE wiped and remade as a streaming standby of FROM, started.
make_standby() {
  local node="$1" from="$2" conf="$state/$1/postgresql.auto.conf"
  rm -rf "${state:?}/$node"
  as_server_user timeout 120 "$bindir/pg_basebackup" -h 127.0.0.1 -p "$(node_port "$from")" -U postgres \
    -D "$state/$node" -R -X stream -c fast --no-sync >/dev/null
  # The standby names itself in primary_conninfo: synchronous_standby_names refers to that name.
  as_server_user sed -i "s/^primary_conninfo = '\(.*\)'\$/primary_conninfo = '\1 application_name=$standby_name'/" "$conf"
  grep -q "^primary_conninfo = '.*application_name=$standby_name'\$" "$conf" \
    || { echo "postgresql.sh: no primary_conninfo in $conf" >&2; exit 1; }
  start_node "$node"
}

# wait_streaming NODE [sync]: until NODE's pg_stat_replication shows the standby streaming (and, with
# `sync`, as the synchronous standby); up to 30 s.
wait_streaming() {
  local node="$1" cond="state = 'streaming'" n=0
  [[ "${2:-}" == sync ]] && cond+=" AND sync_state = 'sync'"
  for _ in $(seq 1 300); do
    n=$(sql "$node" "SELECT count(*) FROM pg_stat_replication WHERE application_name = '$standby_name' AND $cond" \
        2>/dev/null) || n=0
    [[ "$n" -ge 1 ]] && return 0
    sleep 0.1
  done
  echo "postgresql.sh: no standby ${2:+(sync) }streaming from $node (127.0.0.1:$(node_port "$node")) after 30 s:" >&2
  sql "$node" "SELECT application_name, state, sync_state FROM pg_stat_replication" >&2 || true
  tail -5 "$state/$(other "$node").log" >&2 || true
  exit 1
}

# set_sync NODE NAMES: synchronous_standby_names on NODE (ALTER SYSTEM + reload), in effect for new
# sessions when this returns.
set_sync() {
  local node="$1" names="$2"
  sql "$node" "ALTER SYSTEM SET synchronous_standby_names = '$names'" "SELECT pg_reload_conf()" >/dev/null
  for _ in $(seq 1 100); do
    [[ "$(sql "$node" "SHOW synchronous_standby_names")" == "$names" ]] && return 0
    sleep 0.1
  done
  echo "postgresql.sh: synchronous_standby_names = '$names' not in effect on $node after 10 s" >&2; exit 1
}

# lagged_signal SIG: SIG to the walsenders `lag` stopped (STATE_DIR/lagged.pids: "PID POSTMASTER_PID"
# lines), to each only while it is still that postmaster's child or, orphaned, still a walsender.
lagged_signal() {
  [[ -s "$state/lagged.pids" ]] || return 0
  local pid pm info
  while read -r pid pm; do
    info=$(ps -o ppid=,args= -p "$pid" 2>/dev/null) || continue
    if [[ "$(awk '{print $1}' <<<"$info")" == "$pm" || "$info" =~ postgres:\ walsender ]]; then
      kill "-$1" "$pid" 2>/dev/null || true
    fi
  done < "$state/lagged.pids"
}

# stop_node DIR: pg_ctl stop -m fast (30 s), else SIGKILL of the postmaster by its pid file.
stop_node() {
  local dir="$1" pid
  pid=$(postmaster_pid "$dir") || return 0
  as_server_user "$bindir/pg_ctl" -D "$dir" -m fast -w -t 30 stop >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
}

case "$cmd" in
  start)
    port="${3:?PORT}"; bouncer_port="${4:-}"; standby_port="${5:-}"
    if pair_running; then "$0" stop "$state" || true; fi
    rm -rf "$state"; mkdir -p "$state"; chmod 0755 "$state"
    if [[ $(id -u) -eq 0 ]]; then chown postgres:postgres "$state"; fi
    as_server_user "$bindir/initdb" -D "$state/data" -U postgres -A trust --no-sync -E UTF8 >/dev/null
    # Test-server settings: room for many connections (one per held session lock) and quick
    # detection of dead clients. Durability stays at the defaults.
    cat >> "$state/data/postgresql.conf" <<CONF
max_connections = 300
tcp_keepalives_idle = 5
log_min_messages = warning
CONF
    start_postgres "$port"
    echo "$port" > "$state/port"
    if [[ -n "$bouncer_port" ]]; then
      cat > "$state/pgbouncer.ini" <<INI
[databases]
* = host=127.0.0.1 port=$port
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $state/userlist.txt
pool_mode = transaction
default_pool_size = 10
max_client_conn = 200
pidfile = $state/pgbouncer.pid
logfile = $state/pgbouncer.log
ignore_startup_parameters = extra_float_digits,options
INI
      echo '"postgres" ""' > "$state/userlist.txt"
      if [[ $(id -u) -eq 0 ]]; then chown postgres:postgres "$state/pgbouncer.ini" "$state/userlist.txt"; fi
      as_server_user pgbouncer -d -q "$state/pgbouncer.ini"
      for _ in $(seq 1 100); do [[ -s "$state/pgbouncer.pid" ]] && break; sleep 0.1; done
      [[ -s "$state/pgbouncer.pid" ]] || { echo "pgbouncer did not start" >&2; cat "$state/pgbouncer.log" >&2 || true; exit 1; }
    fi
    if [[ -n "$standby_port" ]]; then
      as_server_user "$bindir/pg_basebackup" -h 127.0.0.1 -p "$port" -U postgres -D "$state/standby" -R -X stream \
        --no-sync >/dev/null
      as_server_user "$bindir/pg_ctl" -D "$state/standby" -l "$state/standby.log" -w -t 60 \
        -o "-p $standby_port -k $state -c listen_addresses=127.0.0.1" start >/dev/null
    fi
    echo "postgresql started on 127.0.0.1:$port${bouncer_port:+ (pgbouncer transaction mode on 127.0.0.1:$bouncer_port)}${standby_port:+ (standby on 127.0.0.1:$standby_port)}"
    ;;
  stop)
    if [[ -s "$state/pgbouncer.pid" ]]; then
      pid=$(head -1 "$state/pgbouncer.pid"); kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
      rm -f "$state/pgbouncer.pid"
    fi
    if [[ -s "$state/standby/postmaster.pid" ]]; then
      pid=$(head -1 "$state/standby/postmaster.pid")
      as_server_user "$bindir/pg_ctl" -D "$state/standby" -m fast -w -t 30 stop >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
    fi
    if [[ -s "$state/data/postmaster.pid" ]]; then
      pid=$(head -1 "$state/data/postmaster.pid")
      as_server_user "$bindir/pg_ctl" -D "$state/data" -m fast -w -t 30 stop >/dev/null 2>&1 || kill -KILL "$pid" 2>/dev/null || true
    fi
    # A pair: walsenders `lag` stopped go on first (a fast shutdown waits for them), then the
    # standby, then the primary.
    lagged_signal CONT; rm -f "$state/lagged.pids"
    p=$(cat "$state/primary" 2>/dev/null || echo a)
    [[ "$p" == a || "$p" == b ]] || p=a
    stop_node "$state/$(other "$p")"
    stop_node "$state/$p"
    echo "postgresql stopped"
    ;;
  restart)
    mode="${3:-fast}"
    as_server_user "$bindir/pg_ctl" -D "$state/data" -m "$mode" -w -t 30 stop >/dev/null 2>&1 || true
    start_postgres "$(cat "$state/port")"
    ;;
  start-pair)
    port_a="${3:?PORT_A}"; port_b="${4:?PORT_B}"; mode="${5:-async}"
    [[ "$mode" == async || "$mode" == sync ]] || { echo "postgresql.sh: mode is async or sync, not '$mode'" >&2; exit 64; }
    if pair_running; then "$0" stop "$state" >/dev/null || true; fi
    rm -rf "$state"; mkdir -p "$state"; chmod 0755 "$state"
    if [[ $(id -u) -eq 0 ]]; then chown postgres:postgres "$state"; fi
    echo "$mode" > "$state/mode"; echo "$port_a" > "$state/a.port"; echo "$port_b" > "$state/b.port"
    echo a > "$state/primary"
    as_server_user "$bindir/initdb" -D "$state/a" -U postgres -A trust --no-sync -E UTF8 >/dev/null
    # The test settings of `start`, plus: WAL kept for a standby that `lag` held back (no slots: a
    # failover would have to carry them over), and no wal_receiver_timeout, so that a standby whose
    # walsender is stopped waits for it instead of reconnecting to a fresh one after 60 s. The
    # standby copies this file (pg_basebackup); sync settings go through ALTER SYSTEM on the primary.
    cat >> "$state/a/postgresql.conf" <<CONF
max_connections = 300
tcp_keepalives_idle = 5
log_min_messages = warning
wal_keep_size = 256MB
wal_receiver_timeout = 0
CONF
    echo "host replication all 127.0.0.1/32 trust" >> "$state/a/pg_hba.conf"
    start_node a
    if [[ "$mode" == sync ]]; then
      sql a "ALTER SYSTEM SET synchronous_commit = on" >/dev/null
      set_sync a "$standby_name"
    fi
    make_standby b a
    wait_streaming a "$mode"
    echo "postgresql pair started: primary 127.0.0.1:$port_a (a), $mode standby 127.0.0.1:$port_b (b)"
    ;;
  failover)
    how="${3:-immediate}"
    [[ "$how" == immediate || "$how" == fast ]] || { echo "postgresql.sh: failover is immediate or fast, not '$how'" >&2; exit 64; }
    old=$(primary_node); new=$(other "$old"); mode=$(cat "$state/mode")
    t0=$(now_ms)
    pm=$(postmaster_pid "$state/$old" || true)
    if [[ "$how" == immediate ]]; then
      # The crash first, then SIGKILL of the walsenders `lag` stopped: a SIGCONT before the crash would
      # let them ship the held-back WAL in the instant before it.
      as_server_user "$bindir/pg_ctl" -D "$state/$old" -m immediate -W stop >/dev/null 2>&1 || true
      lagged_signal KILL; lagged_signal CONT
    else
      lagged_signal CONT  # a fast shutdown waits for its walsenders to send everything
      as_server_user "$bindir/pg_ctl" -D "$state/$old" -m fast -w -t 30 stop >/dev/null 2>&1 || true
    fi
    rm -f "$state/lagged.pids"
    if [[ -n "$pm" ]]; then
      for _ in $(seq 1 300); do alive "$pm" || break; sleep 0.05; done
      if alive "$pm"; then kill -KILL "$pm" 2>/dev/null || true; fi
    fi
    t1=$(now_ms)
    as_server_user "$bindir/pg_ctl" -D "$state/$new" -w -t 60 promote >/dev/null
    for _ in $(seq 1 300); do
      [[ "$(sql "$new" "SELECT pg_is_in_recovery()" 2>/dev/null)" == f ]] && break; sleep 0.1
    done
    [[ "$(sql "$new" "SELECT pg_is_in_recovery()")" == f ]] || { echo "postgresql.sh: $new still in recovery after promote" >&2; exit 1; }
    # No synchronous standby is left: a manager (Patroni) empties synchronous_standby_names so that
    # the new primary's commits do not wait for one.
    [[ "$mode" == sync ]] && set_sync "$new" ""
    sql "$new" "SELECT txid_current()" >/dev/null  # a commit: writes go through (bounded by sql)
    echo "$new" > "$state/primary"
    t2=$(now_ms)
    make_standby "$old" "$new"
    wait_streaming "$new"
    if [[ "$mode" == sync ]]; then set_sync "$new" "$standby_name"; wait_streaming "$new" sync; fi
    t3=$(now_ms)
    echo "postgresql failover: primary $new on 127.0.0.1:$(node_port "$new") (old primary stopped ($how) in" \
         "$((t1 - t0)) ms, promoted in $((t2 - t1)) ms; $old rebuilt as its $mode standby on" \
         "127.0.0.1:$(node_port "$old") in $((t3 - t2)) ms)"
    ;;
  lag)
    p=$(primary_node); pm=$(postmaster_pid "$state/$p") || { echo "postgresql.sh: primary $p is not running" >&2; exit 1; }
    pids=$(sql "$p" "SELECT pid FROM pg_stat_replication")
    [[ -n "$pids" ]] || { echo "postgresql.sh: no walsender on the primary ($p)" >&2; exit 1; }
    for pid in $pids; do kill -STOP "$pid"; echo "$pid $pm" >> "$state/lagged.pids"; done
    echo "postgresql lag: walsender(s) $(echo $pids) of the primary 127.0.0.1:$(node_port "$p") stopped"
    ;;
  unlag)
    lagged_signal CONT; rm -f "$state/lagged.pids"
    echo "postgresql unlag: walsenders continued"
    ;;
  primary-port) node_port "$(primary_node)" ;;
  standby-port) node_port "$(other "$(primary_node)")" ;;
  *) sed -n '2,25p' "$0"; exit 64 ;;
esac
