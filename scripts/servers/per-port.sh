# Sourced by the server scripts that run one server process per port in STATE_DIR/<port>/
# (redis.sh, zookeeper.sh): finding a port's server by its pid file, stopping it by pid, checking
# ports. The sourcing script sets, before using these:
#   server_name   its name for messages ("redis.sh")
#   pid_name      the pid file's name in STATE_DIR/<port>/ ("redis.pid")
#   state         the absolute STATE_DIR
# and defines `is_server PORT CMDLINE`: true when a process with that command line is PORT's server
# (so a stale pid file never hits a reused pid). Nothing is ever stopped by name.

check_port() {
  [[ "$1" =~ ^[0-9]+$ ]] && ((10#$1 >= 1 && 10#$1 < 32768)) || { echo "$server_name: bad port '$1' (1..32767)" >&2; exit 64; }
}

alive() {  # PID: exists and is not a zombie (pid 1 here may not reap the detached servers)
  local st; st=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [[ -n "$st" && "$st" != Z && "$st" != X ]]
}

# The pid in PORT's pid file if that process is alive and is_server says it is PORT's server.
server_pid() {
  local port="$1" pidfile="$state/$1/$pid_name" pid title
  [[ -s "$pidfile" ]] || return 1
  pid=$(head -1 "$pidfile"); [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  alive "$pid" || return 1
  title=$(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null) || return 1
  is_server "$port" "$title" || return 1
  echo "$pid"
}

ports() { [[ -s "$state/ports" ]] && cat "$state/ports" || true; }

configured() {  # PORT belongs to STATE_DIR
  grep -qx "$1" "$state/ports" 2>/dev/null || { echo "$server_name: port $1 is not one of $state/ports" >&2; exit 64; }
}

# SIGTERM, up to 10 s, then SIGKILL (up to 5 s more); the pid file goes.
stop_one() {
  local port="$1" pid
  if pid=$(server_pid "$port"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
    if alive "$pid"; then echo "$server_name: port $port's server (pid $pid) did not exit after SIGKILL" >&2; fi
  fi
  rm -f "$state/$port/$pid_name"
}

# SIGKILL (a crash, for the fault tests), up to 10 s for it to go; the pid file goes.
kill_one() {
  local port="$1" pid
  if pid=$(server_pid "$port"); then
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do alive "$pid" || break; sleep 0.1; done
  fi
  rm -f "$state/$port/$pid_name"
}
