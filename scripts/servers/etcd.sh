#!/usr/bin/env bash
# Throwaway etcd members for tests and benchmarks, on 127.0.0.1 only: one standalone member per
# port, or one cluster of them.
#
#   etcd.sh start STATE_DIR PORT [PORT...]    a standalone member per client PORT (peer port PORT+1)
#   etcd.sh start-tls STATE_DIR PORT          a standalone member serving clients over TLS only,
#                                             with client certificates required: a CA, the
#                                             member's certificate (IP 127.0.0.1) and a client's
#                                             are made in STATE_DIR/tls/ (ca.pem, client.pem,
#                                             client-key.pem; other-ca.pem, a CA nobody uses)
#   etcd.sh cluster STATE_DIR PORT PORT PORT  one cluster of three members (peer ports PORT+1)
#   etcd.sh stop STATE_DIR                    stop every member of STATE_DIR by the pid in its pid file
#   etcd.sh restart STATE_DIR [PORT]          stop + start one member (or all), keeping its data
#   etcd.sh kill STATE_DIR PORT               SIGKILL one member by its pid (fault tests)
#   etcd.sh start-one STATE_DIR PORT          start an already configured member again
#   etcd.sh leader STATE_DIR                  print the client port of the member that leads
#
# Each member keeps its data in STATE_DIR/<port>/data and its command line in STATE_DIR/<port>/cmd.
# Short heartbeat and election timeouts (10 ms, 100 ms), so that etcd's shortest lease is 1 s (its
# minimum TTL is 1.5 election timeouts, in whole seconds) and an election takes a fraction of a
# second. Nothing is ever stopped by name, and the default ports 2379/2380 are never assumed.
set -euo pipefail

cmd="${1:-}"; state="${2:-}"
[[ -n "$cmd" && -n "$state" ]] || { sed -n '2,21p' "$0"; exit 64; }
state=$(realpath -m "$state")
server=$(command -v etcd || true)
[[ -n "$server" ]] || { echo "etcd.sh: etcd not found (apt-get install etcd-server)" >&2; exit 1; }
command -v etcdctl >/dev/null || { echo "etcd.sh: etcdctl not found (apt-get install etcd-client)" >&2; exit 1; }

server_name=etcd.sh pid_name=etcd.pid
is_server() { [[ "$2" == *etcd*"--listen-client-urls http"*"://127.0.0.1:$1 "* ]]; }
source "$(dirname "$0")/per-port.sh"

# The command line of member PORT, named NAME, in a cluster given as CLUSTER ("name=url,...").
configure() {
  local port="$1" name="$2" cluster="$3" dir="$state/$1"
  mkdir -p "$dir"
  cat > "$dir/cmd" <<CMD
--name $name --data-dir $dir/data --listen-client-urls http://127.0.0.1:$port --advertise-client-urls http://127.0.0.1:$port --listen-peer-urls http://127.0.0.1:$(($port + 1)) --initial-advertise-peer-urls http://127.0.0.1:$(($port + 1)) --initial-cluster $cluster --initial-cluster-state new --initial-cluster-token dblock-$(basename "$state") --heartbeat-interval 10 --election-timeout 100 --logger zap --log-outputs $dir/etcd.log
CMD
}

# The certificates of a TLS member in $state/tls: a CA, the member's (for IP 127.0.0.1), a client's
# signed by the CA, and a second CA that signed nothing here. Each key is made here, at start, and
# lives in the state directory until the next start wipes it.
make_certs() {
  local dir="$state/tls"
  mkdir -p "$dir"
  ( cd "$dir"
    for ca in ca other-ca; do
      openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=dblock test $ca" -keyout "$ca-key.pem" -out "$ca.pem"
    done
    openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server-key.pem -out server.csr
    printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile server.ext -out server.pem
    openssl req -newkey rsa:2048 -nodes -subj "/CN=dblock-test-client" -keyout client-key.pem -out client.csr
    printf 'extendedKeyUsage=clientAuth\n' > client.ext
    openssl x509 -req -in client.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 2 -extfile client.ext -out client.pem
  ) > "$dir/openssl.log" 2>&1 || { echo "etcd.sh: making the test certificates failed:" >&2; tail -5 "$dir/openssl.log" >&2; exit 1; }
}

# etcdctl's flags for the state's members: TLS ones where the state has certificates.
etcdctl_flags() {
  if [[ -f "$state/tls/ca.pem" ]]; then
    echo "--cacert $state/tls/ca.pem --cert $state/tls/client.pem --key $state/tls/client-key.pem"
  fi
}

launch() {
  local port="$1" dir="$state/$1" pid
  [[ -f "$dir/cmd" ]] || { echo "etcd.sh: $dir/cmd missing (not started with this STATE_DIR?)" >&2; exit 1; }
  if pid=$(server_pid "$port"); then echo "etcd.sh: etcd on port $port already running (pid $pid)" >&2; return 1; fi
  # A member just SIGKILLed may still hold its port for a moment: its main thread is a zombie (which
  # alive() counts as gone) while its other threads are torn down with its sockets. Up to 3 s.
  local tries=0
  while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
    if ((++tries >= 30)); then echo "etcd.sh: 127.0.0.1:$port is already in use by another process" >&2; return 1; fi
    sleep 0.1
  done
  # shellcheck disable=SC2046
  setsid "$server" $(cat "$dir/cmd") < /dev/null > "$dir/stdout.log" 2>&1 &
  echo $! > "$dir/$pid_name"
  # Until the forked shell has exec'd etcd, the pid's command line is not etcd's yet: ready()
  # would take it for an exit (it did, on a loaded machine) and stop the member.
  for _ in $(seq 1 50); do server_pid "$port" > /dev/null && return 0; sleep 0.1; done
}

# Waits (bounded) until member PORT answers; with a cluster, until it has a leader.
ready() {
  local port="$1"
  for _ in $(seq 1 150); do
    if ! server_pid "$port" > /dev/null; then
      echo "etcd on 127.0.0.1:$port exited:" >&2; tail -20 "$state/$port/stdout.log" "$state/$port/etcd.log" >&2 2>/dev/null || true
      return 1
    fi
    # shellcheck disable=SC2046
    if timeout 2 etcdctl --endpoints "127.0.0.1:$port" $(etcdctl_flags) --command-timeout 1s endpoint health > /dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "etcd on 127.0.0.1:$port did not become healthy:" >&2; tail -20 "$state/$port/etcd.log" >&2 || true; return 1
}

# The client port of the member that leads: the one whose `endpoint status` names itself as leader.
leader_port() {
  local p fields
  for p in $(ports); do
    fields=$(timeout 3 etcdctl --endpoints "127.0.0.1:$p" --command-timeout 2s endpoint status -w fields 2>/dev/null) || continue
    local member leader
    member=$(sed -n 's/^"MemberID" : //p' <<< "$fields")
    leader=$(sed -n 's/^"Leader" : //p' <<< "$fields")
    if [[ -n "$member" && "$member" == "$leader" ]]; then echo "$p"; return 0; fi
  done
  return 1
}

fresh_state() {
  for p in "$@"; do check_port "$p"; check_port "$(($p + 1))"; done
  [[ $(printf '%s\n' "$@" | sort | uniq -d) == "" ]] || { echo "etcd.sh: duplicate port" >&2; exit 64; }
  for p in $(ports); do stop_one "$p"; done
  rm -rf "$state"; mkdir -p "$state"
  printf '%s\n' "$@" > "$state/ports"
}

case "$cmd" in
  start)
    shift 2
    (($# >= 1)) || { echo "etcd.sh: start needs at least one PORT" >&2; exit 64; }
    fresh_state "$@"
    for port in "$@"; do configure "$port" "m$port" "m$port=http://127.0.0.1:$(($port + 1))"; done
    for port in "$@"; do launch "$port" || { for p in "$@"; do stop_one "$p"; done; exit 1; }; done
    for port in "$@"; do ready "$port" || { for p in "$@"; do stop_one "$p"; done; exit 1; }; done
    echo "etcd started on 127.0.0.1, port(s) $*"
    ;;
  start-tls)
    (($# == 3)) || { echo "etcd.sh: start-tls needs one PORT" >&2; exit 64; }
    port="$3"
    fresh_state "$port"
    make_certs
    configure "$port" "m$port" "m$port=http://127.0.0.1:$(($port + 1))"
    tls="$state/tls"
    sed -i "s|--listen-client-urls http://127.0.0.1:$port --advertise-client-urls http://|--listen-client-urls https://127.0.0.1:$port --advertise-client-urls https://|" "$state/$port/cmd"
    sed -i "1s|\$| --cert-file $tls/server.pem --key-file $tls/server-key.pem --trusted-ca-file $tls/ca.pem --client-cert-auth|" "$state/$port/cmd"
    launch "$port" || { stop_one "$port"; exit 1; }
    ready "$port" || { stop_one "$port"; exit 1; }
    echo "etcd started on 127.0.0.1, port $port, TLS with client certificates ($tls)"
    ;;
  cluster)
    shift 2
    (($# == 3)) || { echo "etcd.sh: a cluster is three PORTs" >&2; exit 64; }
    fresh_state "$@"
    cluster=""
    for port in "$@"; do cluster+="${cluster:+,}m$port=http://127.0.0.1:$(($port + 1))"; done
    for port in "$@"; do configure "$port" "m$port" "$cluster"; done
    for port in "$@"; do launch "$port" || { for p in "$@"; do stop_one "$p"; done; exit 1; }; done
    for port in "$@"; do ready "$port" || { for p in "$@"; do stop_one "$p"; done; exit 1; }; done
    echo "etcd cluster started on 127.0.0.1, ports $*"
    ;;
  stop)
    for p in $(ports); do stop_one "$p"; done
    echo "etcd stopped"
    ;;
  restart)
    if [[ -n "${3:-}" ]]; then check_port "$3"; configured "$3"; targets=("$3"); else mapfile -t targets < <(ports); fi
    ((${#targets[@]} > 0)) || { echo "etcd.sh: no members in $state" >&2; exit 1; }
    for p in "${targets[@]}"; do stop_one "$p"; done
    for p in "${targets[@]}"; do sed -i 's/--initial-cluster-state new/--initial-cluster-state existing/' "$state/$p/cmd"; launch "$p" || exit 1; done
    for p in "${targets[@]}"; do ready "$p" || exit 1; done
    ;;
  kill)
    port="${3:?PORT}"; check_port "$port"; configured "$port"
    kill_one "$port"
    ;;
  start-one)
    port="${3:?PORT}"; check_port "$port"; configured "$port"
    sed -i 's/--initial-cluster-state new/--initial-cluster-state existing/' "$state/$port/cmd"
    launch "$port" && ready "$port" || exit 1
    ;;
  leader)
    leader_port || { echo "etcd.sh: no leader in $state" >&2; exit 1; }
    ;;
  *) sed -n '2,21p' "$0"; exit 64 ;;
esac
