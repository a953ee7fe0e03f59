#!/usr/bin/env bash
# Throwaway MariaDB for tests and benchmarks, on 127.0.0.1 only.
#
#   mariadb.sh start STATE_DIR PORT     mariadb-install-db + mariadbd (pid file in STATE_DIR)
#   mariadb.sh stop STATE_DIR           stop by the pid in the pid file
#   mariadb.sh restart STATE_DIR [kill] restart keeping the data (kill: SIGKILL instead of a clean stop)
#
# As root the server runs as the `mysql` system user that Debian's package creates. The test user
# is root over TCP without a password (auth by socket is disabled for it). Nothing is ever stopped
# by name.
set -euo pipefail

cmd="${1:-}"; state="${2:-}"
[[ -n "$cmd" && -n "$state" ]] || { sed -n '2,10p' "$0"; exit 64; }
server=$(command -v mariadbd || command -v mysqld || ls /usr/sbin/mariadbd 2>/dev/null || true)
[[ -n "$server" ]] || { echo "mariadb.sh: mariadbd not found (apt-get install mariadb-server)" >&2; exit 1; }
user=$([[ $(id -u) -eq 0 ]] && echo mysql || id -un)

source "$(dirname "$0")/clock.sh"  # clock_preload: a server whose clock a test steps

launch() {
  local port="$1"
  "${clock_preload[@]}" "$server" --no-defaults --user="$user" --datadir="$state/data" --socket="$state/mysqld.sock" \
    --pid-file="$state/mysqld.pid" --port="$port" --bind-address=127.0.0.1 --skip-name-resolve \
    --log-error="$state/error.log" --max-connections=400 --innodb-buffer-pool-size=256M \
    --innodb-log-file-size=256M >/dev/null 2>&1 &
  local server_pid=$!
  for _ in $(seq 1 300); do
    kill -0 "$server_pid" 2>/dev/null || break  # exited (bind failure, bad datadir): no point waiting
    if [[ -S "$state/mysqld.sock" ]] && mariadb-admin --socket="$state/mysqld.sock" -uroot ping >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  echo "mariadbd did not start:" >&2; tail -20 "$state/error.log" >&2 || true; exit 1
}

stop_server() {
  if [[ -s "$state/mysqld.pid" ]]; then
    local pid; pid=$(cat "$state/mysqld.pid")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    rm -f "$state/mysqld.pid"
  fi
}

case "$cmd" in
  start)
    port="${3:?PORT}"
    stop_server 2>/dev/null || true
    rm -rf "$state"; mkdir -p "$state"; chmod 0755 "$state"
    [[ $(id -u) -eq 0 ]] && chown mysql:mysql "$state"
    mariadb-install-db --no-defaults --user="$user" --datadir="$state/data" --auth-root-authentication-method=normal \
      --skip-test-db >"$state/install.log" 2>&1 || { cat "$state/install.log" >&2; exit 1; }
    echo "$port" > "$state/port"
    launch "$port"
    mariadb --socket="$state/mysqld.sock" -uroot -e "CREATE DATABASE IF NOT EXISTS dblock_test;
      CREATE USER IF NOT EXISTS 'root'@'127.0.0.1' IDENTIFIED BY ''; GRANT ALL ON *.* TO 'root'@'127.0.0.1' WITH GRANT OPTION;
      CREATE USER IF NOT EXISTS 'dblock'@'127.0.0.1' IDENTIFIED BY 'dblock-pw'; GRANT ALL ON dblock_test.* TO 'dblock'@'127.0.0.1';
      GRANT PROCESS, CONNECTION ADMIN ON *.* TO 'dblock'@'127.0.0.1';"
    echo "mariadb started on 127.0.0.1:$port"
    ;;
  stop) stop_server; echo "mariadb stopped" ;;
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
  *) sed -n '2,10p' "$0"; exit 64 ;;
esac
