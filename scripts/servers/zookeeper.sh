#!/usr/bin/env bash
# Throwaway ZooKeeper servers for tests and benchmarks: standalone or an ensemble, on 127.0.0.1 only.
#
#   zookeeper.sh start STATE_DIR PORT          one standalone server, in STATE_DIR/<port>/
#   zookeeper.sh start STATE_DIR P1 P2 P3      a 3-node ensemble (5 ports: 5 nodes), one dir per node
#   zookeeper.sh stop STATE_DIR                stop every server of STATE_DIR by the pid in its pid file
#   zookeeper.sh restart STATE_DIR [PORT]      clean stop + start of one server (or all), keeping data
#   zookeeper.sh kill STATE_DIR PORT           SIGKILL one server by its pid (fault tests; start-one brings it back)
#   zookeeper.sh start-one STATE_DIR PORT      start an already configured server again (waits until it
#                                              serves: in an ensemble that needs a quorum)
#   zookeeper.sh leader STATE_DIR              print the client port of the leader (standalone: its port)
#
# PORT is the client port. An ensemble node's quorum port is PORT+1000 and its election port PORT+2000;
# every port must be < 32768 and distinct. Session timeouts: tickTime 200 ms, minSessionTimeout 1000,
# maxSessionTimeout 60000, so a client asking for 1 s .. 60 s is granted exactly that. As root the
# servers run as the `zookeeper` system user that Debian's package creates. Nothing is ever stopped by
# name, and the default port 2181 is never assumed.
set -euo pipefail

cmd="${1:-}"; state="${2:-}"
[[ -n "$cmd" && -n "$state" ]] || { sed -n '2,18p' "$0"; exit 64; }
state=$(realpath -m "$state")  # zoo.cfg paths must be absolute

# The classpath, from what Debian's packages install: libzookeeper-java's zookeeper.jar names its
# dependencies (jute, netty, jackson, commons-*, slf4j-api, ...) in /usr/share/java through its
# manifest's Class-Path, so the jar alone is enough; slf4j-simple (libslf4j-java, a dependency of
# it) is the logging binding, writing to STATE_DIR/<port>/zookeeper.log. Debian's zkServer.sh is not
# used: it reads /etc/zookeeper and /var/log/zookeeper, shared with a system server.
zk_jar=/usr/share/java/zookeeper.jar
log_jar=/usr/share/java/slf4j-simple.jar
java=$(command -v java || true)
[[ -n "$java" ]] || { echo "zookeeper.sh: java not found (apt-get install default-jdk-headless)" >&2; exit 1; }
for j in "$zk_jar" "$log_jar"; do
  [[ -r "$j" ]] || { echo "zookeeper.sh: $j not found (apt-get install zookeeper)" >&2; exit 1; }
done
if [[ $(id -u) -eq 0 ]]; then
  getent passwd zookeeper >/dev/null || { echo "zookeeper.sh: no \`zookeeper\` user (apt-get install zookeeper)" >&2; exit 1; }
fi

run_as=()  # the command prefix that runs a command as the server user (setpriv execs: no extra process)
if [[ $(id -u) -eq 0 ]]; then run_as=(setpriv --reuid=zookeeper --regid=zookeeper --init-groups --); fi

# srvr PORT: the server's answer to the `srvr` four-letter word, within 2 s (empty when none).
srvr() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && printf srvr >&3 && cat <&3' _ "$1" 2>/dev/null || true
}

mode() { srvr "$1" | sed -n 's/^Mode: //p'; }  # standalone, leader, follower, or empty

server_name=zookeeper.sh pid_name=zookeeper.pid
is_server() { [[ "$2" == *QuorumPeerMain*" $state/$1/zoo.cfg"* ]]; }  # the java running PORT's zoo.cfg
source "$(dirname "$0")/per-port.sh"

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# port_free PORT: waits (10 s) for PORT to stop answering: a stopped server's JVM can outlive its
# pid check by a moment on a loaded machine. Says who listens when it stays busy.
port_free() {
  for _ in $(seq 1 100); do port_busy "$1" || return 0; sleep 0.1; done
  echo "zookeeper.sh: 127.0.0.1:$1 is already in use by another process:" \
    "$(ss -Hltnp "sport = :$1" 2>/dev/null || echo '(ss not installed)')" >&2
  return 1
}

# launch PORT: starts the node detached (own session, stdio to files), without waiting for it. The
# inner bash writes its own pid and execs java, so the pid file holds the JVM's pid; every step
# execs, so no shell of this script stays behind holding its caller's stdout/stderr.
launch() {
  local port="$1" dir="$state/$1" pid p
  [[ -f "$dir/zoo.cfg" ]] || { echo "zookeeper.sh: $dir/zoo.cfg missing (not started with this STATE_DIR?)" >&2; exit 1; }
  if pid=$(server_pid "$port"); then echo "zookeeper.sh: zookeeper on port $port already running (pid $pid)" >&2; return 1; fi
  for p in $(node_ports "$port"); do port_free "$p" || return 1; done
  rm -f "$dir/zookeeper.pid"
  # -Xmx96m and the serial collector: a test server holds a few thousand znodes at most.
  # No JMX agent, no admin server (also off in zoo.cfg), IPv4 only.
  (cd "$dir" && exec setsid "${run_as[@]}" bash -c 'echo $$ > "$1/zookeeper.pid"; shift; exec "$@"' _ "$dir" \
    "$java" -Xms32m -Xmx96m -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true \
    -Dzookeeper.admin.enableServer=false -Dzookeeper.jmx.log4j.disable=true \
    -Dorg.slf4j.simpleLogger.logFile="$dir/zookeeper.log" -Dorg.slf4j.simpleLogger.showDateTime=true \
    -Dorg.slf4j.simpleLogger.dateTimeFormat="yyyy-MM-dd'T'HH:mm:ss.SSS" \
    -cp "$zk_jar:$log_jar" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg") \
    </dev/null >>"$dir/zookeeper.out" 2>&1 &
  for _ in $(seq 1 50); do server_pid "$port" >/dev/null && return 0; sleep 0.1; done
  echo "zookeeper on 127.0.0.1:$port did not start:" >&2; tail -n 30 "$dir/zookeeper.out" >&2 || true; return 1
}

# node_ports PORT: the ports one node listens on (client; in an ensemble also quorum and election).
node_ports() {
  if (($(ports | wc -l) > 1)); then echo "$1 $(($1 + 1000)) $(($1 + 2000))"; else echo "$1"; fi
}

# await PORT...: bounded (30 s) wait until every PORT answers `srvr` with a Mode, and in an ensemble
# one node of STATE_DIR is the leader. Returns 1 (after printing the logs' tails) when not.
await() {
  local end=$((SECONDS + 30)) p ok
  while ((SECONDS < end)); do
    ok=1
    for p in "$@"; do
      server_pid "$p" >/dev/null || { echo "zookeeper on 127.0.0.1:$p exited:" >&2; tail -n 30 "$state/$p/zookeeper.log" "$state/$p/zookeeper.out" >&2 || true; return 1; }
      [[ -n $(mode "$p") ]] || { ok=0; break; }
    done
    if ((ok)) && leader_port >/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "zookeeper on 127.0.0.1, port(s) $* not serving after 30 s:" >&2
  for p in "$@"; do tail -n 20 "$state/$p/zookeeper.log" >&2 || true; done
  return 1
}

leader_port() {  # the port whose node reports Mode: leader (or standalone)
  local p m
  for p in $(ports); do
    m=$(mode "$p")
    if [[ "$m" == leader || "$m" == standalone ]]; then echo "$p"; return 0; fi
  done
  return 1
}

# write_cfg PORT ID PORT...: the node's zoo.cfg and myid. tickTime 200 ms: session expiry is checked
# every tick, heartbeats and leader checks run at tick granularity; min/maxSessionTimeout widen the
# default 2..20 ticks to 1..60 s. initLimit 10 s, syncLimit 2 s: a stopped leader is left after 2 s.
# No autopurge (purgeInterval 0), small preallocated txn logs (4 MiB), no connection cap per client IP.
# forceSync=no: the txn log is written but not fsync'd. A test server must survive its process being
# killed (the page cache keeps every write), never a power loss; an fsync beside a build's writes
# took longer than a 2 s session's call deadline (a create on the ensemble in CI).
write_cfg() {
  local port="$1" id="$2" dir="$state/$1"; shift 2
  mkdir -p "$dir/data"; chmod 0755 "$dir"
  cat > "$dir/zoo.cfg" <<CONF
tickTime=200
initLimit=50
syncLimit=10
minSessionTimeout=1000
maxSessionTimeout=60000
dataDir=$dir/data
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=srvr,mntr,ruok,stat
autopurge.purgeInterval=0
preAllocSize=4096
forceSync=no
CONF
  if (($# > 1)); then
    local i=1 p
    for p in "$@"; do echo "server.$i=127.0.0.1:$((p + 1000)):$((p + 2000))" >> "$dir/zoo.cfg"; i=$((i + 1)); done
    echo "$id" > "$dir/data/myid"
  fi
  if [[ $(id -u) -eq 0 ]]; then chown -R zookeeper:zookeeper "$dir"; fi
}

case "$cmd" in
  start)
    shift 2
    (($# == 1 || $# == 3 || $# == 5)) || { echo "zookeeper.sh: start needs 1 PORT (standalone) or 3 or 5 (ensemble)" >&2; exit 64; }
    all=()
    for p in "$@"; do
      check_port "$p"; all+=("$p")
      if (($# > 1)); then check_port $((p + 2000)); all+=($((p + 1000)) $((p + 2000))); fi
    done
    [[ $(printf '%s\n' "${all[@]}" | sort | uniq -d) == "" ]] ||
      { echo "zookeeper.sh: duplicate port (client ports and their +1000/+2000 must be distinct)" >&2; exit 64; }
    for p in $(ports); do stop_one "$p"; done
    rm -rf "$state"; mkdir -p "$state"; chmod 0755 "$state"
    printf '%s\n' "$@" > "$state/ports"
    id=1
    for port in "$@"; do write_cfg "$port" "$id" "$@"; id=$((id + 1)); done
    for port in "$@"; do
      launch "$port" || { for p in "$@"; do stop_one "$p"; done; exit 1; }
    done
    await "$@" || { for p in "$@"; do stop_one "$p"; done; exit 1; }
    if (($# == 1)); then
      echo "zookeeper started on 127.0.0.1, port $1 (standalone)"
    else
      echo "zookeeper started on 127.0.0.1, port(s) $* (ensemble, leader $(leader_port))"
    fi
    ;;
  stop)
    for p in $(ports); do stop_one "$p"; done
    echo "zookeeper stopped"
    ;;
  restart)
    if [[ -n "${3:-}" ]]; then check_port "$3"; configured "$3"; targets=("$3"); else mapfile -t targets < <(ports); fi
    ((${#targets[@]} > 0)) || { echo "zookeeper.sh: no servers in $state" >&2; exit 1; }
    for p in "${targets[@]}"; do stop_one "$p"; done
    for p in "${targets[@]}"; do launch "$p" || exit 1; done
    await "${targets[@]}" || exit 1
    ;;
  kill)
    port="${3:?PORT}"; check_port "$port"; configured "$port"
    kill_one "$port"
    ;;
  start-one)
    port="${3:?PORT}"; check_port "$port"; configured "$port"
    launch "$port" || exit 1
    await "$port" || exit 1
    ;;
  leader)
    leader_port || { echo "zookeeper.sh: no leader in $state" >&2; exit 1; }
    ;;
  *) sed -n '2,18p' "$0"; exit 64 ;;
esac
