// The PostgreSQL dialect of the lease statements. "{L}", "{R}", "{W}", "{V}" stand for the quoted
// leases, readers, waiters and schema-version tables, "{S}" for the quoted fence sequence name as
// a string literal (for nextval). Times come from clock_timestamp() on the server; microsecond
// values are extracted only for reporting.
//
// Every statement is one round trip; parameters are always bound ($n), never spliced.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_H_

namespace dblock::postgresql::sql {

#define DBLOCK_PG_US(expr) "(extract(epoch from " expr ") * 1000000)::bigint"

// Shared by the acquire statements: nobody who has waited longer (smaller ticket) is still
// queued. $5 is the caller's ticket, NULL before it queued (then any live waiter goes first).
#define DBLOCK_PG_NO_EARLIER_WAITER                                                              \
  " AND NOT EXISTS (SELECT 1 FROM {W} w WHERE w.name = $1 AND w.until_at > now.t"                \
  " AND w.owner_secret <> $2::uuid AND ($5::bigint IS NULL OR w.ticket < $5::bigint))"

// The same check where no "now" CTE is in scope (clock_timestamp() is read again: a few
// microseconds of difference between the checks is harmless).
#define DBLOCK_PG_NO_EARLIER_WAITER_NOW                                                          \
  " AND NOT EXISTS (SELECT 1 FROM {W} w WHERE w.name = $1 AND w.until_at > clock_timestamp()"    \
  " AND w.owner_secret <> $2::uuid AND ($5::bigint IS NULL OR w.ticket < $5::bigint))"

// Exclusive acquire in one round trip. $1 name, $2 secret, $3 holder, $4 ttl_us, $5 ticket.
// Takes a free or expired row, or re-takes a row this secret already holds (so that an attempt
// whose reply was lost can be repeated safely). nextval only runs when the insert is attempted.
inline constexpr const char* kAcquireExclusive =
    "INSERT INTO {L} AS l (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)"
    " SELECT $1, $2::uuid, $3, 'exclusive', nextval({S}), clock_timestamp(),"
    " clock_timestamp() + $4::bigint * interval '1 microsecond', 0"
    " WHERE true" DBLOCK_PG_NO_EARLIER_WAITER_NOW
    " ON CONFLICT (name) DO UPDATE SET owner_secret = EXCLUDED.owner_secret, holder = EXCLUDED.holder,"
    " mode = 'exclusive', fence = EXCLUDED.fence, acquired_at = EXCLUDED.acquired_at,"
    " expires_at = EXCLUDED.expires_at, renewals = 0"
    " WHERE l.expires_at <= EXCLUDED.acquired_at OR l.owner_secret = EXCLUDED.owner_secret"
    " RETURNING fence, " DBLOCK_PG_US("expires_at");

// The same for a queued waiter: also leaves the queue when it succeeds (still one round trip).
inline constexpr const char* kAcquireExclusiveQueued =
    "WITH now AS (SELECT clock_timestamp() AS t),"
    " ins AS (INSERT INTO {L} AS l (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)"
    "  SELECT $1, $2::uuid, $3, 'exclusive', nextval({S}), now.t, now.t + $4::bigint * interval '1 microsecond', 0"
    "  FROM now WHERE true" DBLOCK_PG_NO_EARLIER_WAITER
    "  ON CONFLICT (name) DO UPDATE SET owner_secret = EXCLUDED.owner_secret, holder = EXCLUDED.holder,"
    "  mode = 'exclusive', fence = EXCLUDED.fence, acquired_at = EXCLUDED.acquired_at,"
    "  expires_at = EXCLUDED.expires_at, renewals = 0"
    "  WHERE l.expires_at <= EXCLUDED.acquired_at OR l.owner_secret = EXCLUDED.owner_secret"
    "  RETURNING fence, expires_at),"
    " gone AS (DELETE FROM {W} WHERE name = $1 AND owner_secret = $2::uuid AND EXISTS (SELECT 1 FROM ins))"
    " SELECT fence, " DBLOCK_PG_US("expires_at") " FROM ins";

// Shared acquire: joins live readers or takes a free row, and records the reader, in one
// statement. $1 name, $2 secret, $3 holder, $4 ttl_us, $5 ticket.
inline constexpr const char* kAcquireShared =
    "WITH now AS (SELECT clock_timestamp() AS t),"
    " row AS (INSERT INTO {L} AS l (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)"
    "  SELECT $1, NULL, NULL, 'shared', nextval({S}), now.t, now.t + $4::bigint * interval '1 microsecond', 0"
    "  FROM now WHERE true" DBLOCK_PG_NO_EARLIER_WAITER
    "  ON CONFLICT (name) DO UPDATE SET owner_secret = NULL, holder = NULL, mode = 'shared', fence = EXCLUDED.fence,"
    "  acquired_at = CASE WHEN l.mode = 'shared' AND l.expires_at > EXCLUDED.acquired_at"
    "    THEN l.acquired_at ELSE EXCLUDED.acquired_at END,"
    "  expires_at = GREATEST(CASE WHEN l.mode = 'shared' THEN l.expires_at ELSE '-infinity' END, EXCLUDED.expires_at),"
    "  renewals = 0"
    "  WHERE l.expires_at <= EXCLUDED.acquired_at OR l.mode = 'shared'"
    "  RETURNING fence),"
    " reader AS (INSERT INTO {R} (name, owner_secret, holder, fence, acquired_at, expires_at)"
    "  SELECT $1, $2::uuid, $3, row.fence, now.t, now.t + $4::bigint * interval '1 microsecond' FROM row, now"
    "  ON CONFLICT (name, owner_secret) DO UPDATE SET fence = EXCLUDED.fence, expires_at = EXCLUDED.expires_at"
    "  RETURNING fence, expires_at),"
    " gone AS (DELETE FROM {W} WHERE $5::bigint IS NOT NULL AND name = $1 AND owner_secret = $2::uuid"
    "  AND EXISTS (SELECT 1 FROM reader))"
    " SELECT fence, " DBLOCK_PG_US("expires_at") " FROM reader";

#undef DBLOCK_PG_NO_EARLIER_WAITER
#undef DBLOCK_PG_NO_EARLIER_WAITER_NOW

// Not acquired: join (or stay in) the queue and report the position and the holder's remaining
// time. $1 name, $2 secret, $3 until ttl_us, $4 ticket or NULL.
inline constexpr const char* kQueue =
    "WITH q AS (INSERT INTO {W} (name, owner_secret, ticket, until_at)"
    "  VALUES ($1, $2::uuid, coalesce($4::bigint, " DBLOCK_PG_US("clock_timestamp()") "),"
    "          clock_timestamp() + $3::bigint * interval '1 microsecond')"
    "  ON CONFLICT (name, owner_secret) DO UPDATE SET until_at = EXCLUDED.until_at RETURNING ticket)"
    " SELECT q.ticket,"
    "  (SELECT count(*) FROM {W} w WHERE w.name = $1 AND w.until_at > clock_timestamp()"
    "   AND w.owner_secret <> $2::uuid AND w.ticket < q.ticket),"
    "  (SELECT " DBLOCK_PG_US("l.expires_at - clock_timestamp()") " FROM {L} l WHERE l.name = $1)"
    " FROM q";

// Read-only queue position for a waiter that was woken: $1 name, $2 secret, $3 ticket. Returns
// the number of live waiters ahead and the holder's remaining time (NULL: no row, free).
inline constexpr const char* kQueueStatus =
    "SELECT (SELECT count(*) FROM {W} w WHERE w.name = $1 AND w.until_at > clock_timestamp()"
    "  AND w.owner_secret <> $2::uuid AND w.ticket < $3::bigint),"
    " (SELECT " DBLOCK_PG_US("l.expires_at - clock_timestamp()") " FROM {L} l WHERE l.name = $1)";

// $1 name: the holder's remaining time in microseconds (no row: free).
inline constexpr const char* kRemaining =
    "SELECT " DBLOCK_PG_US("expires_at - clock_timestamp()") " FROM {L} WHERE name = $1";

// $1 name, $2 secret.
inline constexpr const char* kLeaveQueue = "DELETE FROM {W} WHERE name = $1 AND owner_secret = $2::uuid";

// $1 name, $2 secret, $3 ttl_us.
inline constexpr const char* kRenewExclusive =
    "UPDATE {L} SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond', renewals = renewals + 1"
    " WHERE name = $1 AND owner_secret = $2::uuid AND mode = 'exclusive' AND expires_at > clock_timestamp()"
    " RETURNING " DBLOCK_PG_US("expires_at");
// Keeps leases.expires_at >= every live reader's expiry.
inline constexpr const char* kRenewReader =
    "WITH r AS (UPDATE {R} SET expires_at = clock_timestamp() + $3::bigint * interval '1 microsecond',"
    "  renewals = renewals + 1"
    "  WHERE name = $1 AND owner_secret = $2::uuid AND expires_at > clock_timestamp() RETURNING expires_at),"
    " l AS (UPDATE {L} SET expires_at = GREATEST(expires_at, (SELECT expires_at FROM r)), renewals = renewals + 1"
    "  WHERE name = $1 AND mode = 'shared' AND EXISTS (SELECT 1 FROM r))"
    " SELECT " DBLOCK_PG_US("expires_at") " FROM r";

// Release (compare-and-delete). Wakes waiters with NOTIFY only when one is queued, so the
// uncontended path pays nothing for notifications; the payload is the name, chr(31) and the
// ticket of the first waiter in line, so only that waiter attempts (lock names never contain
// control characters). $1 name, $2 secret, $3 channel.
inline constexpr const char* kReleaseExclusive =
    "DELETE FROM {L} WHERE name = $1 AND owner_secret = $2::uuid AND mode = 'exclusive'"
    " RETURNING expires_at > clock_timestamp(),"
    " (SELECT count(*) FROM (SELECT pg_notify($3, $1 || chr(31) || w.ticket) FROM {W} w WHERE w.name = $1"
    "  AND w.until_at > clock_timestamp() ORDER BY w.ticket LIMIT 1) n)";
inline constexpr const char* kReleaseReader =
    "WITH d AS (DELETE FROM {R} WHERE name = $1 AND owner_secret = $2::uuid"
    "  RETURNING expires_at > clock_timestamp() AS live),"
    " l AS (UPDATE {L} SET expires_at = coalesce((SELECT max(r.expires_at) FROM {R} r WHERE r.name = $1"
    "  AND r.owner_secret <> $2::uuid AND r.expires_at > clock_timestamp()), '-infinity')"
    "  WHERE name = $1 AND mode = 'shared' AND EXISTS (SELECT 1 FROM d))"
    " SELECT d.live, (SELECT count(*) FROM (SELECT pg_notify($3, $1 || chr(31) || w.ticket) FROM {W} w"
    "  WHERE w.name = $1 AND w.until_at > clock_timestamp() ORDER BY w.ticket LIMIT 1) n) FROM d";

// Admin eviction: frees the name and bumps its fence; drops its readers; wakes waiters.
// $1 name, $2 channel.
inline constexpr const char* kForceRelease =
    "WITH u AS (UPDATE {L} SET owner_secret = NULL, holder = NULL, expires_at = '-infinity', fence = nextval({S})"
    "  WHERE name = $1 AND expires_at > clock_timestamp() RETURNING name),"
    " r AS (DELETE FROM {R} WHERE name = $1 AND EXISTS (SELECT 1 FROM u))"
    " SELECT count(*) FROM u, LATERAL (SELECT pg_notify($2, u.name)) n";

// $1 name or NULL for all.
inline constexpr const char* kList =
    "SELECT l.name, l.mode, l.holder, l.fence, " DBLOCK_PG_US("l.acquired_at") ", " DBLOCK_PG_US("l.expires_at") ","
    " " DBLOCK_PG_US("l.expires_at - clock_timestamp()") ", l.renewals,"
    " (SELECT count(*) FROM {R} r WHERE r.name = l.name AND r.expires_at > clock_timestamp()),"
    " (SELECT string_agg(r.holder, ',') FROM {R} r WHERE r.name = l.name AND r.expires_at > clock_timestamp())"
    " FROM {L} l WHERE l.expires_at > clock_timestamp() AND ($1::text IS NULL OR l.name = $1) ORDER BY l.name";

// Reaper: at most $1 expired rows, skipping rows another transaction is taking over (never waits
// on them). Notifies only names with a live queued waiter (a million reaped rows must not become
// a million notifications). $2 channel.
inline constexpr const char* kReapLeases =
    "WITH d AS (DELETE FROM {L} WHERE name IN (SELECT name FROM {L} WHERE expires_at <= clock_timestamp()"
    "  LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING name)"
    " SELECT count(*) FROM d LEFT JOIN LATERAL (SELECT pg_notify($2, d.name) FROM {W} w WHERE w.name = d.name"
    "  AND w.until_at > clock_timestamp() LIMIT 1) n ON true";
inline constexpr const char* kReapReaders =
    "WITH d AS (DELETE FROM {R} WHERE (name, owner_secret) IN (SELECT name, owner_secret FROM {R}"
    "  WHERE expires_at <= clock_timestamp() LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING 1)"
    " SELECT count(*) FROM d";
inline constexpr const char* kReapWaiters =
    "WITH d AS (DELETE FROM {W} WHERE (name, owner_secret) IN (SELECT name, owner_secret FROM {W}"
    "  WHERE until_at <= clock_timestamp() LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING 1)"
    " SELECT count(*) FROM d";

// Guard, inside the caller's transaction: FOR SHARE keeps the row from being taken over (that is
// an UPDATE) until the transaction ends, so a commit after a successful check happens while the
// lease is still ours. $1 name, $2 secret, $3 fence.
inline constexpr const char* kGuardExclusive =
    "SELECT 1 FROM {L} WHERE name = $1 AND owner_secret = $2::uuid AND fence = $3::bigint AND mode = 'exclusive'"
    " AND expires_at > clock_timestamp() FOR SHARE";
inline constexpr const char* kGuardReader =
    "SELECT 1 FROM {R} WHERE name = $1 AND owner_secret = $2::uuid AND fence = $3::bigint"
    " AND expires_at > clock_timestamp() FOR SHARE";

// Connection set-up: refuse a standby, remember the backend pid (pooler detection).
inline constexpr const char* kHello = "SELECT pg_is_in_recovery(), pg_backend_pid()";

// Migrations: the advisory transaction lock serialises concurrent first uses. $1 key.
inline constexpr const char* kMigrationLock = "SELECT pg_advisory_xact_lock($1::bigint)";
inline constexpr const char* kSchemaVersionExists = "SELECT to_regclass($1) IS NOT NULL";
inline constexpr const char* kSchemaVersion = "SELECT coalesce(max(version), 0) FROM {V}";
inline constexpr const char* kRecordMigration = "INSERT INTO {V} (version, name) VALUES ($1, $2)";
// UNLOGGED switch (opt-in): the lease tables only; the fence sequence stays logged. $1 regclass.
inline constexpr const char* kIsUnlogged = "SELECT relpersistence = 'u' FROM pg_class WHERE oid = $1::regclass";
// Followed by a validated, quoted table name (DDL cannot take parameters).
inline constexpr const char* kSetUnlogged = "ALTER TABLE ";
inline constexpr const char* kSetUnloggedSuffix = " SET UNLOGGED";
inline constexpr const char* kSetLoggedSuffix = " SET LOGGED";

// Session (advisory) locks. Every statement names the server session it must run on ($2, the
// pid recorded when the connection was opened) and takes or drops the lock only there: behind a
// transaction pooler a statement can land on another client's server session, and a lock taken
// there would be stuck on a pooled session and held by nobody. The pid comes back so the caller
// can refuse loudly. $1 key, $2 expected pid, $3 lock_timeout ('0' = wait forever).
inline constexpr const char* kTrySessionExclusive =
    "SELECT CASE WHEN pg_backend_pid() = $2::int THEN pg_try_advisory_lock($1::bigint) END, pg_backend_pid()";
inline constexpr const char* kTrySessionShared =
    "SELECT CASE WHEN pg_backend_pid() = $2::int THEN pg_try_advisory_lock_shared($1::bigint) END, pg_backend_pid()";
inline constexpr const char* kWaitSessionExclusive =
    "SELECT CASE WHEN pg_backend_pid() = $2::int THEN set_config('lock_timeout', $3, false) END,"
    " CASE WHEN pg_backend_pid() = $2::int THEN (SELECT 1 FROM (SELECT pg_advisory_lock($1::bigint)) l) END,"
    " pg_backend_pid() = $2::int, pg_backend_pid()";
inline constexpr const char* kWaitSessionShared =
    "SELECT CASE WHEN pg_backend_pid() = $2::int THEN set_config('lock_timeout', $3, false) END,"
    " CASE WHEN pg_backend_pid() = $2::int THEN (SELECT 1 FROM (SELECT pg_advisory_lock_shared($1::bigint)) l) END,"
    " pg_backend_pid() = $2::int, pg_backend_pid()";
inline constexpr const char* kUnlockSessionExclusive =
    "SELECT CASE WHEN pg_backend_pid() = $2::int THEN pg_advisory_unlock($1::bigint) END, pg_backend_pid()";
inline constexpr const char* kUnlockSessionShared =
    "SELECT CASE WHEN pg_backend_pid() = $2::int THEN pg_advisory_unlock_shared($1::bigint) END, pg_backend_pid()";
// $1 key, $2 'ExclusiveLock' or 'ShareLock'. Does this session hold it?
inline constexpr const char* kVerifySession =
    "SELECT count(*) > 0 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted"
    " AND mode = $2 AND ((classid::bigint << 32) | objid::bigint) = $1::bigint AND objsubid = 1";

// Bounds lock waits for the rest of the current transaction. $1 lock_timeout ("200ms", "0").
inline constexpr const char* kSetLocalLockTimeout = "SELECT set_config('lock_timeout', $1, true)";

// Transaction-level advisory locks. $1 key, $2 lock_timeout.
inline constexpr const char* kXactTry = "SELECT pg_try_advisory_xact_lock($1::bigint)";
inline constexpr const char* kXactWait =
    "SELECT set_config('lock_timeout', $2, true), pg_advisory_xact_lock($1::bigint), true";

#undef DBLOCK_PG_US

}  // namespace dblock::postgresql::sql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_H_
