#!/usr/bin/env bash
# Throwaway MariaDB for tests and benchmarks, on 127.0.0.1 only.
#
#   mariadb.sh start STATE_DIR PORT     mariadb-install-db + mariadbd (pid file in STATE_DIR)
#   mariadb.sh stop STATE_DIR           stop by the pid in the pid file
#   mariadb.sh restart STATE_DIR [kill] restart keeping the data (kill: SIGKILL instead of a clean stop)
#
# A replicated pair for failover tests (nodes `a` and `b`, each with its datadir, socket, pid file and
# error log in STATE_DIR/a, STATE_DIR/b; binlog, ROW, GTID strict mode, log-slave-updates):
#   mariadb.sh start-pair STATE_DIR PORT_A PORT_B
#                                       a = primary on PORT_A (database and users of `start`, plus a
#                                       replication user); b = its read-only GTID replica on PORT_B,
#                                       replicating a's binlog from the start. Returns once b caught up
#   mariadb.sh failover STATE_DIR [kill|stop]
#                                       SIGKILL (stop: clean stop) of the primary; the replica applies
#                                       what it received and becomes the writable primary; the old
#                                       primary is rebuilt empty as its replica (whole binlog replayed;
#                                       a new server id: the highest so far + 1)
#   mariadb.sh lag STATE_DIR            STOP SLAVE IO_THREAD on the replica (it stops receiving)
#   mariadb.sh unlag STATE_DIR          START SLAVE IO_THREAD
#   mariadb.sh primary-port STATE_DIR | standby-port STATE_DIR    print the node's port
#   (`stop STATE_DIR` stops a pair too.) STATE_DIR/{a,b}.port, {a,b}.server_id, primary describe it.
#
# As root the server runs as the `mysql` system user that Debian's package creates. The test user
# is root over TCP without a password (auth by socket is disabled for it). Nothing is ever stopped
# by name.
set -euo pipefail

cmd="${1:-}"; state="${2:-}"
[[ -n "$cmd" && -n "$state" ]] || { sed -n '2,26p' "$0"; exit 64; }
server=$(command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd 2>/dev/null || true)
[[ -n "$server" ]] || { echo "mariadb.sh: mariadbd not found (apt-get install mariadb-server)" >&2; exit 1; }
user=$([[ $(id -u) -eq 0 ]] && echo mysql || id -un)

source "$(dirname "$0")/clock.sh"  # clock_preload: a server whose clock a test steps

# launch PORT [DIR [OPTION...]]: mariadbd with its datadir, socket, pid file and error log in DIR
# (default STATE_DIR), extra server options after the usual ones.
# private_tmp DIR: DIR/tmp for the server's temporary files. Never the shared /tmp: a starting
# mariadbd (and mariadb-install-db's bootstrap) deletes the `#sql*` files it finds in its tmpdir,
# which are another server's live temporary tables when servers start side by side.
private_tmp() {
  mkdir -p "$1/tmp"; chmod 0700 "$1/tmp"
  if [[ $(id -u) -eq 0 ]]; then chown "$user" "$1/tmp"; fi
  echo "$1/tmp"
}

launch() {
  local port="$1" dir="${2:-$state}"; shift; [[ $# -gt 0 ]] && shift
  local tmp; tmp=$(private_tmp "$dir")
  "${clock_preload[@]}" "$server" --no-defaults --user="$user" --datadir="$dir/data" --socket="$dir/mysqld.sock" \
    --tmpdir="$tmp" \
    --pid-file="$dir/mysqld.pid" --port="$port" --bind-address=127.0.0.1 --skip-name-resolve \
    --log-error="$dir/error.log" --max-connections=400 --innodb-buffer-pool-size=256M \
    --innodb-log-file-size=256M "$@" >/dev/null 2>&1 &
  local server_pid=$!
  for _ in $(seq 1 300); do
    kill -0 "$server_pid" 2>/dev/null || break  # exited (bind failure, bad datadir): no point waiting
    if [[ -S "$dir/mysqld.sock" ]] && mariadb-admin --socket="$dir/mysqld.sock" -uroot ping >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "mariadbd did not start:" >&2; tail -20 "$dir/error.log" >&2 || true; exit 1
}

alive() {  # PID: exists and is not a zombie (pid 1 here may reap the detached servers late)
  local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}
stop_server() {  # [DIR]: the server whose pid file is DIR/mysqld.pid (default STATE_DIR)
  local dir="${1:-$state}"
  if [[ -s "$dir/mysqld.pid" ]]; then
    local pid; pid=$(cat "$dir/mysqld.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$dir/mysqld.pid"
  fi
}

# ---- the replicated pair ----------------------------------------------------------------------
repl_user=dblock_repl; repl_password=dblock-repl-pw
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
other() { if [[ "$1" == a ]]; then echo b; else echo a; fi; }
node_port() { cat "$state/$1.port"; }
primary_node() {
  local p; p=$(cat "$state/primary" 2>/dev/null) || true
  [[ "$p" == a || "$p" == b ]] || { echo "mariadb.sh: no pair in $state (start-pair first)" >&2; exit 1; }
  echo "$p"
}
sql() {  # sql NODE STATEMENTS: as root on the node's socket, tab-separated, no column names; bounded
  timeout 90 mariadb --socket="$state/$1/mysqld.sock" -uroot -N -B -e "$2"
}
slave_field() {  # slave_field NODE FIELD: FIELD of SHOW SLAVE STATUS on NODE (empty when not a replica)
  timeout 30 mariadb --socket="$state/$1/mysqld.sock" -uroot -e "SHOW SLAVE STATUS\G" \
    | awk -v f="$2" '{ k = $1; sub(/:$/, "", k) } k == f { sub(/^[^:]*: ?/, ""); print; exit }'
}

# start_node NODE SERVER_ID: mariadb-install-db in a wiped STATE_DIR/NODE, then mariadbd with binlog.
# The server id goes to STATE_DIR/NODE.server_id. A node rebuilt empty must not reuse its old id: a
# replica skips the events of its own server id (and replicate_same_server_id cannot be combined with
# log_slave_updates), so it would skip everything it originated before.
start_node() {
  local node="$1" dir="$state/$1" id="$2"
  rm -rf "${dir:?}"; mkdir -p "$dir"; chmod 0755 "$dir"
  if [[ $(id -u) -eq 0 ]]; then chown mysql:mysql "$dir"; fi
  mariadb-install-db --no-defaults --user="$user" --datadir="$dir/data" --auth-root-authentication-method=normal \
    --skip-test-db --tmpdir="$(private_tmp "$dir")" >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
  echo "$id" > "$state/$node.server_id"
  launch "$(node_port "$node")" "$dir" --server-id="$id" \
    --log-bin=mariadb-bin --relay-log=relay-bin --binlog-format=ROW --log-slave-updates --gtid-strict-mode=1
}

# replicate NODE FROM: the fresh NODE becomes a read-only replica of FROM from the start of FROM's
# binlog (empty gtid_slave_pos), and catches up with FROM's binlog as it is now (30 s at most).
replicate() {
  local node="$1" from="$2" pos r
  sql "$node" "SET GLOBAL gtid_slave_pos = '';
    CHANGE MASTER TO MASTER_HOST='127.0.0.1', MASTER_PORT=$(node_port "$from"), MASTER_USER='$repl_user',
      MASTER_PASSWORD='$repl_password', MASTER_USE_GTID=slave_pos, MASTER_CONNECT_RETRY=1;
    START SLAVE; SET GLOBAL read_only = 1;"
  pos=$(sql "$from" "SELECT @@gtid_binlog_pos")
  r=$(sql "$node" "SELECT MASTER_GTID_WAIT('$pos', 30)")
  if [[ "$r" == 0 && "$(slave_field "$node" Slave_IO_Running)" == Yes && "$(slave_field "$node" Slave_SQL_Running)" == Yes
        && "$(slave_field "$node" Last_SQL_Errno)" == 0 ]]; then
    return 0
  fi
  echo "mariadb.sh: $node did not catch up with $from ($pos) within 30 s:" >&2
  timeout 30 mariadb --socket="$state/$node/mysqld.sock" -uroot -e "SHOW SLAVE STATUS\G" >&2 || true
  exit 1
}

stop_pair() {
  local p; p=$(cat "$state/primary" 2>/dev/null || echo a)
  [[ "$p" == a || "$p" == b ]] || p=a
  stop_server "$state/$(other "$p")"; stop_server "$state/$p"
  rm -f "$state/lagged"
}

case "$cmd" in
  start)
    port="${3:?PORT}"
    stop_server 2>/dev/null || true
    stop_pair 2>/dev/null || true
    rm -rf "$state"; mkdir -p "$state"; chmod 0755 "$state"
    [[ $(id -u) -eq 0 ]] && chown mysql:mysql "$state"
    mariadb-install-db --no-defaults --user="$user" --datadir="$state/data" --auth-root-authentication-method=normal \
      --skip-test-db --tmpdir="$(private_tmp "$state")" >"$state/install.log" 2>&1 || { cat "$state/install.log" >&2; exit 1; }
    echo "$port" > "$state/port"
    launch "$port"
    mariadb --socket="$state/mysqld.sock" -uroot -e "CREATE DATABASE IF NOT EXISTS dblock_test;
      CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
      CREATE USER IF NOT EXISTS 'dblock'@'127.0.0.1' IDENTIFIED BY 'dblock-pw'; GRANT ALL ON dblock_test.* TO 'dblock'@'127.0.0.1';
      GRANT PROCESS, CONNECTION ADMIN ON *.* TO 'dblock'@'127.0.0.1';"
    echo "mariadb started on 127.0.0.1:$port"
    ;;
  stop) stop_server; stop_pair; echo "mariadb stopped" ;;
  restart)
    if [[ "${3:-}" == kill && -s "$state/mysqld.pid" ]]; then
      kill -KILL "$(cat "$state/mysqld.pid")" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$(cat "$state/mysqld.pid")" 2>/dev/null || break; sleep 0.1; done
      rm -f "$state/mysqld.pid" "$state/mysqld.sock"
    else
      stop_server
    fi
    launch "$(cat "$state/port")"
    ;;
  start-pair)
    port_a="${3:?PORT_A}"; port_b="${4:?PORT_B}"
    stop_server 2>/dev/null || true
    stop_pair 2>/dev/null || true
    rm -rf "$state"; mkdir -p "$state"; chmod 0755 "$state"
    echo "$port_a" > "$state/a.port"; echo "$port_b" > "$state/b.port"; echo a > "$state/primary"
    start_node a 1
    # In a's binlog from its first transaction on: b (and any node rebuilt later) replays all of it.
    sql a "CREATE DATABASE IF NOT EXISTS dblock_test;
      CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
      CREATE USER IF NOT EXISTS 'dblock'@'127.0.0.1' IDENTIFIED BY 'dblock-pw'; GRANT ALL ON dblock_test.* TO 'dblock'@'127.0.0.1';
      GRANT PROCESS, CONNECTION ADMIN ON *.* TO 'dblock'@'127.0.0.1';
      CREATE USER IF NOT EXISTS '$repl_user'@'127.0.0.1' IDENTIFIED BY '$repl_password';
      GRANT REPLICATION SLAVE ON *.* TO '$repl_user'@'127.0.0.1';"
    start_node b 2
    replicate b a
    echo "mariadb pair started: primary 127.0.0.1:$port_a (a), replica 127.0.0.1:$port_b (b)"
    ;;
  failover)
    how="${3:-kill}"
    [[ "$how" == kill || "$how" == stop ]] || { echo "mariadb.sh: failover is kill or stop, not '$how'" >&2; exit 64; }
    old=$(primary_node); new=$(other "$old")
    t0=$(now_ms)
    if [[ "$how" == kill ]]; then
      pid=$(cat "$state/$old/mysqld.pid" 2>/dev/null || true)
      # Only while that pid is still this node's mariadbd (a stale pid file never hits a reused pid).
      if [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "--pid-file=$state/$old/mysqld.pid "; then
        kill -KILL "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.05; done
      fi
      rm -f "$state/$old/mysqld.pid" "$state/$old/mysqld.sock"
    else
      stop_server "$state/$old"
    fi
    t1=$(now_ms)
    # As a careful operator: no more from the dead primary, apply what was received (30 s at most),
    # then forget the primary and take writes. The SQL thread goes on before the IO thread stops: a
    # START SLAVE SQL_THREAD with both threads stopped discards the relay log in GTID mode.
    sql "$new" "START SLAVE SQL_THREAD; STOP SLAVE IO_THREAD"
    io_pos=$(slave_field "$new" Gtid_IO_Pos)
    if [[ -n "$io_pos" ]]; then
      r=$(sql "$new" "SELECT MASTER_GTID_WAIT('$io_pos', 30)")
      [[ "$r" == 0 ]] || echo "mariadb.sh: warning: $new did not apply all it received ($io_pos) within 30 s" >&2
    fi
    sql "$new" "STOP SLAVE; RESET SLAVE ALL; SET GLOBAL read_only = 0;"
    echo "$new" > "$state/primary"; rm -f "$state/lagged"
    t2=$(now_ms)
    start_node "$old" $(( $(cat "$state/a.server_id" "$state/b.server_id" | sort -n | tail -1) + 1 ))
    replicate "$old" "$new"
    t3=$(now_ms)
    echo "mariadb failover: primary $new on 127.0.0.1:$(node_port "$new") (old primary stopped ($how) in" \
         "$((t1 - t0)) ms, promoted in $((t2 - t1)) ms; $old rebuilt as its replica on" \
         "127.0.0.1:$(node_port "$old") in $((t3 - t2)) ms)"
    ;;
  lag)
    r=$(other "$(primary_node)"); sql "$r" "STOP SLAVE IO_THREAD"; touch "$state/lagged"
    echo "mariadb lag: replica 127.0.0.1:$(node_port "$r") stopped receiving (STOP SLAVE IO_THREAD)"
    ;;
  unlag)
    r=$(other "$(primary_node)"); sql "$r" "START SLAVE IO_THREAD"; rm -f "$state/lagged"
    echo "mariadb unlag: replica 127.0.0.1:$(node_port "$r") receives again (START SLAVE IO_THREAD)"
    ;;
  primary-port) node_port "$(primary_node)" ;;
  standby-port) node_port "$(other "$(primary_node)")" ;;
  *) sed -n '2,26p' "$0"; exit 64 ;;
esac
