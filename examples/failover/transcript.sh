#!/bin/bash
# transcript.sh DBLOCK STATE_DIR PG_PORT_A PG_PORT_B: `dblock run --ttl 10s` across a PostgreSQL
# failover, as a user types it (docs/failover.md shows its output):
#   1. synchronous standby: the holder keeps its lease through kill -9 of the primary and the
#      promotion, its command finishes, exit 0; the next holder's fence is greater;
#   2. asynchronous standby that stopped receiving before the lease was taken: the promoted
#      standby never saw the lease; the holder learns it at its next renewal and stops its
#      command, exit 70; the next holder's fence is greater than the lost one.
# Starts and stops the pairs itself (scripts/servers/postgresql.sh start-pair, by pid). Exits 1
# when an outcome differs from the above.
set -euo pipefail
dblock="$1"; state="$2"; port_a="$3"; port_b="$4"
servers="$(cd "$(dirname "$0")/../../scripts/servers" && pwd)"
url="postgresql://postgres@127.0.0.1:$port_a,127.0.0.1:$port_b/postgres"
work="$(mktemp -d)"
trap '"$servers/postgresql.sh" stop "$state" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
status=0
say() { printf '%s\n' "$*"; }
expect() { if [[ "$1" != "$2" ]]; then say "!! expected $3 $2, got $1"; status=1; fi; }

# A holder whose command prints its fence, then works for 8 s (several renewals, TTL 10 s).
holder() {
  "$dblock" --url "$url" run --key report --ttl 10s -- \
    sh -c 'echo "holder: fence $DBLOCK_FENCE"; sleep 8; echo "holder: done"' > "$work/holder.out" 2>&1 &
  holder_pid=$!
  for _ in $(seq 1 100); do grep -q fence "$work/holder.out" && return 0; sleep 0.1; done
  say "!! the holder did not start"; exit 1
}
next_fence() {
  "$dblock" --url "$url" run --key report --wait 30s -- sh -c 'echo "$DBLOCK_FENCE"'
}
fence_of() { sed -n 's/^holder: fence //p' "$work/holder.out"; }

for mode in sync async; do
  say "=== $mode standby ==="
  "$servers/postgresql.sh" start-pair "$state" "$port_a" "$port_b" "$mode" | sed 's/^/$ /'
  say "\$ dblock --url '$url' migrate"
  "$dblock" --url "$url" migrate
  if [[ $mode == async ]]; then
    say "\$ postgresql.sh lag   # the standby stops receiving WAL"
    "$servers/postgresql.sh" lag "$state"
  fi
  say "\$ dblock --url '$url' run --key report --ttl 10s -- sh -c '...sleep 8...' &"
  holder
  say "$(cat "$work/holder.out")"
  say "\$ postgresql.sh failover   # kill -9 of the primary (pg_ctl -m immediate), pg_ctl promote"
  "$servers/postgresql.sh" failover "$state" | sed 's/^/  /'
  set +e; wait "$holder_pid"; code=$?; set -e
  sed 1d "$work/holder.out"
  say "holder exit status: $code"
  held=$(fence_of)
  next=$(next_fence)
  say "\$ dblock --url '$url' run --key report --wait 30s -- sh -c 'echo \$DBLOCK_FENCE'"
  say "$next"
  if [[ $mode == sync ]]; then expect "$code" 0 "exit status"; else expect "$code" 70 "exit status"; fi
  if (( next <= held )); then say "!! the next fence $next is not above $held"; status=1; fi
  "$servers/postgresql.sh" stop "$state" >/dev/null
done
exit "$status"
