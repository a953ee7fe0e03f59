#!/usr/bin/env bash
# Throwaway PostgreSQL (and pgbouncer) for tests and benchmarks, on 127.0.0.1 only.
#
#   postgresql.sh start STATE_DIR PORT [PGBOUNCER_PORT [STANDBY_PORT]]
#                                  initdb + pg_ctl start (+ pgbouncer, pool_mode=transaction)
#                                  (+ a streaming standby made with pg_basebackup, in recovery)
#   postgresql.sh stop STATE_DIR                          stop both by the pids in their pid files
#   postgresql.sh restart STATE_DIR [fast|immediate]      restart PostgreSQL keeping its data
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
[[ -n "$cmd" && -n "$state" ]] || { sed -n '2,10p' "$0"; exit 64; }

source "$(dirname "$0")/clock.sh"  # clock_preload: a server whose clock a test steps

start_postgres() {
  local port="$1"
  as_server_user "${clock_preload[@]}" "$bindir/pg_ctl" -D "$state/data" -l "$state/postgresql.log" -w -t 60 \
    -o "-p $port -k $state -c listen_addresses=127.0.0.1" start >/dev/null
}

case "$cmd" in
  start)
    port="${3:?PORT}"; bouncer_port="${4:-}"; standby_port="${5:-}"
    if [[ -f "$state/data/postmaster.pid" ]]; then "$0" stop "$state" || true; fi
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
    echo "postgresql stopped"
    ;;
  restart)
    mode="${3:-fast}"
    as_server_user "$bindir/pg_ctl" -D "$state/data" -m "$mode" -w -t 30 stop >/dev/null 2>&1 || true
    start_postgres "$(cat "$state/port")"
    ;;
  *) sed -n '2,10p' "$0"; exit 64 ;;
esac
