#!/usr/bin/env bash
# Throwaway Redis servers for tests and benchmarks (1, 3 or 5 of them for Redlock), on 127.0.0.1 only.
#
#   redis.sh start STATE_DIR PORT [PORT...]  one redis-server per port, in STATE_DIR/<port>/ with its own redis.conf
#   redis.sh stop STATE_DIR                  stop every server of STATE_DIR by the pid in its pid file
#   redis.sh restart STATE_DIR [PORT]        clean stop + start of one server (or all), keeping data and AOF mode
#   redis.sh kill STATE_DIR PORT             SIGKILL one server by its pid (fault tests; start-one brings it back)
#   redis.sh start-one STATE_DIR PORT        start an already configured server again
#
# DBLOCK_REDIS_AOF at `start`: always (appendonly, appendfsync always), everysec, or no/unset (no AOF);
# recorded in STATE_DIR/aof-mode and in each redis.conf, so restarts keep it. No RDB snapshots, no
# eviction, no unix socket. As root the servers run as the `redis` system user that Debian's package
# creates. Nothing is ever stopped by name, and the default port 6379 is never assumed.
set -euo pipefail

cmd="${1:-}"; state="${2:-}"
[[ -n "$cmd" && -n "$state" ]] || { sed -n '2,12p' "$0"; exit 64; }
state=$(realpath -m "$state")  # redis.conf paths must be absolute
server=$(command -v redis-server || ls /usr/bin/redis-server 2>/dev/null || true)
[[ -n "$server" ]] || { echo "redis.sh: redis-server not found (apt-get install redis-server)" >&2; exit 1; }
command -v redis-cli >/dev/null || { echo "redis.sh: redis-cli not found (apt-get install redis-tools)" >&2; exit 1; }
if [[ $(id -u) -eq 0 ]]; then
  getent passwd redis >/dev/null || { echo "redis.sh: no \`redis\` user (apt-get install redis-server)" >&2; exit 1; }
fi

run_as=()  # the command prefix that runs a command as the server user
if [[ $(id -u) -eq 0 ]]; then run_as=(runuser -u redis --); fi

# DBLOCK_SERVER_CLOCK_FILE=FILE in the environment of start/restart/start-one: the server's wall
# clock is offset by what FILE says ("+2", "-1.5"; s/m/h/d suffixes allowed), re-read at every
# reading of the clock, monotonic clocks untouched: the contract of clock.sh. clock.sh's libfaketime
# cannot do it here: Debian's redis-server is linked with jemalloc, which calls clock_gettime()
# while libfaketime initializes, and the server hangs at startup (libfaketime issue #130, unfixed).
# So a small preload of our own is compiled into STATE_DIR: it gets the real time by syscall until
# it has resolved the libc functions, and reads FILE without allocating.
clock_preload=()
clock_shim() {
  [[ -n "${DBLOCK_SERVER_CLOCK_FILE:-}" ]] || return 0
  local so="$state/clock-offset.so"
  if [[ ! -f "$so" ]]; then
    command -v cc >/dev/null || { echo "redis.sh: cc not found (apt-get install build-essential)" >&2; exit 1; }
    cc -shared -fPIC -O2 -Wall -o "$so" -x c - <<'C' || { echo "redis.sh: cannot build $so" >&2; exit 1; }
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

typedef int (*clock_gettime_fn)(clockid_t, struct timespec*);
static clock_gettime_fn real_clock_gettime;  /* set once, by the constructor */
static char path[4096];
static int have_path;

__attribute__((constructor)) static void init(void) {
  const char* p = getenv("DBLOCK_CLOCK_OFFSET_FILE");  /* copied: redis rewrites environ */
  if (p && strlen(p) < sizeof path) { strcpy(path, p); have_path = 1; }
  real_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
}

static int raw_clock_gettime(clockid_t c, struct timespec* ts) {
  if (real_clock_gettime) return real_clock_gettime(c, ts);
  return (int)syscall(SYS_clock_gettime, c, ts);
}

/* The offset in FILE, in nanoseconds; 0 when FILE is missing or unreadable. */
static long long offset_ns(void) {
  const char* p = have_path ? path : getenv("DBLOCK_CLOCK_OFFSET_FILE");
  if (!p) return 0;
  int fd = open(p, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[64];
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* s = buf;
  while (*s == ' ' || *s == '\t') ++s;
  int neg = 0;
  if (*s == '+' || *s == '-') neg = *s++ == '-';
  long long sec = 0, frac = 0, scale = 1000000000LL;
  while (*s >= '0' && *s <= '9') sec = sec * 10 + (*s++ - '0');
  if (*s == '.') {
    ++s;
    while (*s >= '0' && *s <= '9') {
      if (scale > 1) { scale /= 10; frac += (*s - '0') * scale; }
      ++s;
    }
  }
  long long unit = *s == 'm' ? 60 : *s == 'h' ? 3600 : *s == 'd' ? 86400 : 1;
  long long ns = (sec * 1000000000LL + frac) * unit;
  return neg ? -ns : ns;
}

static void shift(struct timespec* ts) {
  long long t = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + offset_ns();
  ts->tv_sec = (time_t)(t / 1000000000LL);
  ts->tv_nsec = (long)(t % 1000000000LL);
  if (ts->tv_nsec < 0) { ts->tv_nsec += 1000000000L; ts->tv_sec -= 1; }
}

int clock_gettime(clockid_t c, struct timespec* ts) {
  int r = raw_clock_gettime(c, ts);
  if (r == 0 && (c == CLOCK_REALTIME || c == CLOCK_REALTIME_COARSE)) shift(ts);
  return r;
}

int gettimeofday(struct timeval* restrict tv, void* restrict tz) {
  struct timespec ts;
  if (raw_clock_gettime(CLOCK_REALTIME, &ts) != 0) return -1;
  shift(&ts);
  tv->tv_sec = ts.tv_sec;  /* glibc declares tv nonnull */
  tv->tv_usec = ts.tv_nsec / 1000;
  if (tz) memset(tz, 0, sizeof(struct timezone));
  return 0;
}

time_t time(time_t* t) {
  struct timespec ts;
  if (raw_clock_gettime(CLOCK_REALTIME, &ts) != 0) return (time_t)-1;
  shift(&ts);
  if (t) *t = ts.tv_sec;
  return ts.tv_sec;
}
C
    chmod 0755 "$so"
  fi
  "${run_as[@]}" test -r "$DBLOCK_SERVER_CLOCK_FILE" ||
    echo "redis.sh: warning: $DBLOCK_SERVER_CLOCK_FILE is not readable by the server (offset 0 until it is)" >&2
  clock_preload=(env LD_PRELOAD="$so" DBLOCK_CLOCK_OFFSET_FILE="$DBLOCK_SERVER_CLOCK_FILE")
}

server_name=redis.sh pid_name=redis.pid
is_server() { [[ "$2" == *redis-server*"127.0.0.1:$1"* ]]; }  # its process title: "redis-server 127.0.0.1:PORT"
source "$(dirname "$0")/per-port.sh"

launch() {
  local port="$1" dir="$state/$1" pid
  [[ -f "$dir/redis.conf" ]] || { echo "redis.sh: $dir/redis.conf missing (not started with this STATE_DIR?)" >&2; exit 1; }
  if pid=$(server_pid "$port"); then echo "redis.sh: redis on port $port already running (pid $pid)" >&2; return 1; fi
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
    echo "redis.sh: 127.0.0.1:$port is already in use by another process" >&2; return 1
  fi
  rm -f "$dir/redis.pid"
  clock_shim
  # Bounded: a server that hangs before it daemonizes (as under libfaketime) is killed, with the
  # runuser that started it, by timeout.
  (cd "$dir" && timeout -k 5 30 "${run_as[@]}" "${clock_preload[@]}" "$server" "$dir/redis.conf") || true
  for _ in $(seq 1 100); do
    if pid=$(server_pid "$port") && [[ $(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
      return 0
    fi
    sleep 0.1
  done
  echo "redis-server on 127.0.0.1:$port did not start:" >&2; tail -30 "$dir/redis.log" >&2 || true; return 1
}

case "$cmd" in
  start)
    shift 2
    (($# >= 1)) || { echo "redis.sh: start needs at least one PORT" >&2; exit 64; }
    for p in "$@"; do check_port "$p"; done
    [[ $(printf '%s\n' "$@" | sort | uniq -d) == "" ]] || { echo "redis.sh: duplicate port" >&2; exit 64; }
    case "${DBLOCK_REDIS_AOF:-no}" in
      always) aof_conf=$'appendonly yes\nappendfsync always' ;;
      everysec) aof_conf=$'appendonly yes\nappendfsync everysec' ;;
      no|"") aof_conf='appendonly no' ;;
      *) echo "redis.sh: DBLOCK_REDIS_AOF must be always, everysec or no" >&2; exit 64 ;;
    esac
    aof_mode="${DBLOCK_REDIS_AOF:-no}"
    for p in $(ports); do stop_one "$p"; done
    rm -rf "$state"; mkdir -p "$state"; chmod 0755 "$state"
    printf '%s\n' "$@" > "$state/ports"
    echo "$aof_mode" > "$state/aof-mode"
    for port in "$@"; do
      dir="$state/$port"; mkdir -p "$dir"; chmod 0755 "$dir"
      # Test-server settings. No `unixsocket` line: TCP on 127.0.0.1 only. `save ""`: no RDB
      # snapshots, so durability is exactly what the AOF mode gives. DEBUG (e.g. DEBUG SLEEP, to
      # stall a server in fault tests) is allowed from loopback connections.
      cat > "$dir/redis.conf" <<CONF
bind 127.0.0.1
port $port
protected-mode yes
daemonize yes
pidfile $dir/redis.pid
logfile $dir/redis.log
loglevel notice
always-show-logo no
dir $dir
save ""
maxmemory-policy noeviction
tcp-keepalive 5
enable-debug-command local
$aof_conf
CONF
      if [[ $(id -u) -eq 0 ]]; then chown -R redis:redis "$dir"; fi
    done
    for port in "$@"; do
      launch "$port" || { for p in "$@"; do stop_one "$p"; done; exit 1; }
    done
    echo "redis started on 127.0.0.1, port(s) $* (aof: $aof_mode)"
    ;;
  stop)
    for p in $(ports); do stop_one "$p"; done
    echo "redis stopped"
    ;;
  restart)
    if [[ -n "${3:-}" ]]; then check_port "$3"; configured "$3"; targets=("$3"); else mapfile -t targets < <(ports); fi
    ((${#targets[@]} > 0)) || { echo "redis.sh: no servers in $state" >&2; exit 1; }
    for p in "${targets[@]}"; do stop_one "$p"; done
    for p in "${targets[@]}"; do launch "$p" || exit 1; done
    ;;
  kill)
    port="${3:?PORT}"; check_port "$port"; configured "$port"
    kill_one "$port"
    ;;
  start-one)
    port="${3:?PORT}"; check_port "$port"; configured "$port"
    launch "$port" || exit 1
    ;;
  *) sed -n '2,12p' "$0"; exit 64 ;;
esac
