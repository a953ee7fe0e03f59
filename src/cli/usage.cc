#include "usage.h"

namespace dblock::cli {
namespace {

// Keep in step with exit_codes.h.
constexpr std::string_view kTopLevel = R"(Usage: dblock [--url URL] COMMAND [OPTIONS]

A distributed lock on the database you already have.

Commands:
  run       hold a lock while a command runs:   dblock run --key NAME [OPTIONS] -- COMMAND [ARGS...]
  elect     run a command while leader:         dblock elect --key NAME [--forever] -- COMMAND [ARGS...]
  leader    show the leader of an election:     dblock leader NAME [--json]
  list      show the live leases:               dblock list [--history] [--json]
  inspect   show one lock:                      dblock inspect NAME [--json]
  release   evict a holder (admin):             dblock release --force NAME
  migrate   create or upgrade the lock tables:  dblock migrate
  reap      delete expired lease rows now:      dblock reap
  exporter  serve /metrics for Prometheus:      dblock exporter --listen 127.0.0.1:9464
  version   print the version and the backends: dblock version

Global options:
  --url URL   backend URL, e.g. sqlite:///var/lib/app/locks.db, postgresql://user@host/db,
              mysql://user@host/db. Default: $DBLOCK_URL, else
              sqlite://${XDG_STATE_HOME:-$HOME/.local/state}/dblock/locks.db (created on first use).
              --url may also follow the command name.
  -h, --help  show this help; `dblock COMMAND --help` shows help for one command.

Exit status:
  0    success (run: COMMAND's own exit status is passed through)
  1    other error (busy database, outcome in doubt, ...); inspect: the lock is not held;
       leader: there is no leader
  64   usage error: bad option, duration, lock name or URL
  69   backend unreachable or cannot be opened
  70   run: the lease was lost while COMMAND was running
  73   run: --metrics-textfile's directory cannot take the file
  75   run: the lock was not acquired within --wait (also when the service failed meanwhile)
  77   permission denied: the database role may not do this (see docs/security.md)
  78   lock tables missing or newer than this dblock
  126  run: COMMAND could not be executed; 127: COMMAND not found
  128+N  run: COMMAND was killed by signal N (or dblock was, while waiting for the lock)

Passwords in URLs are never printed.
)";

constexpr std::string_view kRun = R"(Usage: dblock [--url URL] run --key NAME [--key NAME...] [--ttl 30s] [--wait 0|DURATION|forever]
                  [--mode lease|session|shared] [--permits N] [--hold-at-least DURATION]
                  [--skipped-exit N] [--on-lost term|kill|ignore] [--on-dblock-death kill|keep]
                  [--metrics-textfile PATH] -- COMMAND [ARGS...]

Acquires the lock NAME, runs COMMAND while holding it, renews the lease in the background, and
releases it when COMMAND exits. COMMAND runs with these variables added to its environment:
  DBLOCK_FENCE  the fencing token: strictly greater than any token issued before for NAME
  DBLOCK_KEY    the lock name
  DBLOCK_SESSION_KEY  with --mode session: the backend's key for the lock (PostgreSQL: the
                advisory lock key, as in pg_locks; not set where the lock has no numeric key,
                as on MariaDB); DBLOCK_FENCE is then not set
With several --key options, all the names are held or none (taken in sorted order; what was
taken is given back when one is not acquired within --wait), and instead of DBLOCK_KEY and
DBLOCK_FENCE COMMAND gets DBLOCK_KEY_COUNT=N and DBLOCK_KEY_i, DBLOCK_FENCE_i for i = 1..N in
sorted order. Losing any of them is losing the lock (--on-lost).
COMMAND runs in a process group of its own (given the terminal when dblock had it) and inherits
none of dblock's open files or database connections, only stdin, stdout and stderr.
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 sent to dblock are forwarded to COMMAND's
process group, as are the signals of --on-lost. If dblock itself is killed (SIGKILL), COMMAND gets
SIGKILL at once (see --on-dblock-death); the lease then expires after its TTL.
A signal that arrives while dblock is still waiting for the lock ends dblock (128+N), holding nothing.

Options:
  --key NAME        lock name (required; repeat it to hold several names, not with --mode
                    session): 1-255 bytes of UTF-8, no control characters
  --ttl DURATION    lease time-to-live; renewed every TTL/3 while COMMAND runs. Default 30s (with
                    --hold-at-least, at least that); 1s to 7d
  --wait WAIT       how long to wait for the lock: 0 (default) tries once, a DURATION waits that
                    long, `forever` waits without limit
  --mode MODE       lease (default): exclusive lease with TTL and fencing token
                    shared: a shared lease: many shared holders at once, no exclusive one
                    session: a lock held by dblock's database session (PostgreSQL advisory lock,
                      MySQL GET_LOCK): freed at once when dblock dies; no TTL, no fencing token
                      (DBLOCK_FENCE is not set), not shown by list/inspect. Not available on
                      SQLite (exits 64)
  --permits N       a semaphore: hold one of N permits of NAME (1 to 10000), a lease with its own
                    TTL, renewal and DBLOCK_FENCE; at most N holders at once, granted in the order
                    they asked. Every holder of NAME must give the same N (another N exits 64).
                    Not with --mode session or shared
  --hold-at-least DURATION  a scheduled job: the lock stays held (by nobody) until DURATION
                    after it was acquired, on the backend's clock, even when COMMAND ends
                    sooner, so that a host whose timer fires a little later skips the run
                    (exit 75, or --skipped-exit) instead of repeating it. If dblock dies, the
                    lock is free after --ttl, which is at least DURATION (the default grows to
                    it; a shorter --ttl exits 64). Up to 7d; not with --mode session or shared,
                    or --permits (exits 64)
  --skipped-exit N  the exit status when the lock is not acquired (default 75); 0 for cron
                    setups where a skipped run is not an error: it then prints nothing (a
                    service that failed while waiting is still reported). 0 to 255
  --on-lost POLICY  what to do if the lock is lost while COMMAND runs (renewal refused, expired,
                    evicted with `dblock release --force`, database session gone):
                      term (default): SIGTERM to COMMAND, SIGKILL 5 s later if still running
                      kill: SIGKILL to COMMAND
                      ignore: let COMMAND run on (a warning is printed)
                    With term and kill, dblock exits 70 after COMMAND has ended.
  --on-dblock-death WHAT  if dblock dies while COMMAND runs:
                      kill (default): SIGKILL to COMMAND (not to what it started in the background)
                      keep: COMMAND runs on, unsupervised, and without the lock once the TTL passes
  --metrics-textfile PATH  when dblock is done (COMMAND ended, or the lock was not acquired),
                    writes the run's figures to PATH for node_exporter's textfile collector:
                    dblock_run_acquired, _wait_seconds, _hold_seconds, _exit_status, _lost,
                    _fence, _end_time_seconds, labelled lock="NAME". Written whole (a temporary
                    file in PATH's directory, then renamed); a failed write is a warning. A
                    directory that cannot take the file exits 73 before the lock is taken
  -h, --help        show this help

Durations: a whole number with a unit: 500ms, 30s, 5m, 1h. A bare number means seconds.

Exit status:
  COMMAND's exit status, or 128+N if COMMAND was killed by signal N
  64   usage error (bad option, duration, lock name or URL; --mode session where unsupported)
  69   backend unreachable or cannot be opened
  70   the lock was lost while COMMAND was running (and --on-lost is not ignore), also when
       COMMAND finished before the loss was noticed
  73   --metrics-textfile: PATH's directory is missing or cannot take a file
  75   the lock was not acquired within --wait (also when the service failed meanwhile);
       --skipped-exit N replaces it
  77   permission denied: the database role may not do this (see docs/security.md)
  78   lock tables missing or newer than this dblock
  126  COMMAND could not be executed; 127: COMMAND not found
  1    other backend error
)";

constexpr std::string_view kElect = R"(Usage: dblock [--url URL] elect --key NAME [--forever] [--ttl 30s] [--on-lost term|kill|ignore]
                  [--on-dblock-death kill|keep] -- COMMAND [ARGS...]

Leader election: campaigns for NAME (waiting in line, as `run --wait forever` does), and once
elected runs COMMAND while it is the leader. The leadership is a lease on NAME: renewed every
TTL/3, lost when a renewal is refused or its TTL passes without one (then COMMAND is stopped per
--on-lost, as with run), and taken over by the next candidate within the TTL when this dblock
dies. The term is the lease's fencing token: COMMAND gets it as DBLOCK_FENCE (strictly greater
than every earlier term of NAME), and `dblock leader NAME` shows the leader and its term.
Without --forever, dblock exits when COMMAND ends (its exit status; 70 when the leadership was
lost meanwhile). With --forever, it gives up the leadership when COMMAND ends or the leadership
is lost, waits 1s and campaigns again, until a signal (forwarded to COMMAND if it runs) ends it
with status 128+N.
COMMAND's environment, process group and signals are as with `dblock run` (dblock run --help).

Options:
  --key NAME        the election's name (required, once)
  --forever         campaign again after each leadership ends
  --ttl, --on-lost, --on-dblock-death   as for run: how fast a dead leader is replaced (default
                    30s), and what happens to COMMAND when the leadership is lost or dblock dies
  -h, --help        show this help

Exit status: as for run (without 75: elect waits until elected); with --forever, 128+N after
signal N.
)";

constexpr std::string_view kLeader = R"(Usage: dblock [--url URL] leader NAME [--json]

Shows the current leader of the election NAME (`dblock elect`, dblock::Election) as the service
sees it: the leader's holder string and its term (the lease's fencing token). Prints
"NAME: no leader" (with --json: null) and exits 1 when nobody leads.

Options:
  --json      print {"name": ..., "leader": ..., "term": ...}, or null
  -h, --help  show this help

Exit status: 0 there is a leader; 1 none (or other error); 64 usage error; 69 backend unreachable;
78 schema problem.
)";

constexpr std::string_view kList = R"(Usage: dblock [--url URL] list [--history] [--json]

Shows every live lease: name, mode, holder, fence, time until expiry (backend clock), holders.
Session locks (run --mode session) live in the database server's own lock table and are not shown.

Options:
  --history   show the last 100 force-releases instead, newest first: when (backend clock), by
              whom (holder string and database account), whom they evicted, mode, fence before
              and after
  --json      print a JSON array of objects with the fields name, mode, holder, fence,
              acquired_at_us, expires_at_us, expires_in_us, renewals, holders, permits,
              waiters (live waiters in line; left out where unknown), bound ("ttl"; "session":
              the holders' sessions end it, ZooKeeper's, and the expiry times are 0) (times in
              microseconds on the backend's clock); with --history: name, at_us, by,
              by_account, evicted, mode, old_fence, new_fence
  -h, --help  show this help

Exit status: 0; 64 usage error; 69 backend unreachable; 77 permission denied; 78 schema problem;
1 other error.
)";

constexpr std::string_view kInspect = R"(Usage: dblock [--url URL] inspect NAME [--json]

Shows the lease on NAME and the last 5 force-releases of NAME. If NAME is not held, prints
"NAME: not held" (with --json: null, and no force-releases) and exits 1.

Options:
  --json      print one JSON object (fields as for `dblock list --json`), or null
  -h, --help  show this help

Exit status: 0 held; 1 not held (or other error); 64 usage error; 69 backend unreachable;
78 schema problem.
)";

constexpr std::string_view kRelease = R"(Usage: dblock [--url URL] release --force NAME

Administrative eviction: frees NAME whoever holds it and bumps its fencing token, so the evicted
holder's renewals and guarded writes fail (a `dblock run` holding it sees its lease lost). The
eviction is recorded with it: when, by whom (user@host:pid of this command, and the database
account), whom it evicted and the fences (`dblock inspect NAME`, `dblock list --history`).
--force is required, as a reminder that the holder is not asked. Prints whether a lease was
evicted; exits 0 either way.

Options:
  --force     required
  -h, --help  show this help

Exit status: 0; 64 usage error; 69 backend unreachable; 78 schema problem; 1 other error.
)";

constexpr std::string_view kMigrate = R"(Usage: dblock [--url URL] migrate

Creates the lock tables or applies pending migrations (under the backend's migration lock), then
prints the schema version.

Options:
  -h, --help  show this help

Exit status: 0; 64 usage error; 69 backend unreachable; 78 schema newer than this dblock;
1 other error.
)";

constexpr std::string_view kReap = R"(Usage: dblock [--url URL] reap

Deletes every expired lease row now (a running dblock does this in the background) and prints
how many were deleted. Never touches a live lease.

Options:
  -h, --help  show this help

Exit status: 0; 64 usage error; 69 backend unreachable; 78 schema problem; 1 other error.
)";

constexpr std::string_view kExporter = R"(Usage: dblock [--url URL] exporter --listen HOST:PORT

Serves Prometheus metrics at http://HOST:PORT/metrics until SIGTERM or SIGINT (then exits 0):
the lock table as the backend sees it at each scrape, and the exporter's own figures.
  dblock_lock_holders{name,mode}       holders of each held lock
  dblock_lock_age_seconds{name}        how long it has been held (backend clock)
  dblock_lock_expires_in_seconds{name} time left until it expires unless renewed
  dblock_lock_fence{name}              its fencing token
  dblock_lock_waiters{name}            live waiters in its line (not on Redlock; not for a
                                       database role without SELECT on the waiters table)
  dblock_oldest_unreaped_seconds       how long ago the oldest expired row still waiting for the
                                       reaper expired (0: none; always 0 on Redis and ZooKeeper)
  dblock_lock_table_up                 1 if the scrape read the lock table; 0 if not, and a comment
                                       line says why (the rest of the page is served as usual)
  dblock_exporter_scrapes_total, dblock_exporter_lock_table_errors_total, and the dblock_*
  figures of its own LockManager (see docs/operations.md)
Each scrape reads the backend with a 5 s deadline. Only GET (and HEAD) of /metrics is served:
other methods get 405, other paths 404. No password is ever printed or served. Give it a
database role that may only read (see docs/security.md); it deletes and writes nothing.

Options:
  --listen HOST:PORT  where to listen: 127.0.0.1:9464, [::1]:9464, 0.0.0.0:9464 (every
                      interface: the page names every lock; mind who can reach it)
  -h, --help          show this help

Exit status: 0 after SIGTERM or SIGINT; 64 usage error (a --listen that is not HOST:PORT with a
port from 1 to 65535); 69 backend unreachable at start, or the address cannot be listened on (in
use, not local); 78 schema problem.
)";

constexpr std::string_view kVersion = R"(Usage: dblock version

Prints the dblock version and the URL schemes (backends) this build supports. Opens no backend.

Options:
  -h, --help  show this help
)";

}  // namespace

std::string_view usage_text(std::string_view command) {
  if (command == "run") return kRun;
  if (command == "elect") return kElect;
  if (command == "exporter") return kExporter;
  if (command == "leader") return kLeader;
  if (command == "list") return kList;
  if (command == "inspect") return kInspect;
  if (command == "release") return kRelease;
  if (command == "migrate") return kMigrate;
  if (command == "reap") return kReap;
  if (command == "version") return kVersion;
  return kTopLevel;
}

}  // namespace dblock::cli
