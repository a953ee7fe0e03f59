// The SQLite dialect of the lease statements. "{L}", "{R}", "{W}", "{F}", "{C}", "{V}" and "{H}"
// stand for the quoted leases, readers, waiters, fence-counter, clock, schema-version and
// force-release tables (prefix validated, then quoted); "{N}" for the lock file's clock,
// dblock_now(): microseconds on a clock that wall-clock steps do not move (file_clock.h), on which
// every expiry, ticket and acquired_at_us is. Fences are floored at dblock_fence_floor(), the
// system clock in microseconds (see kAcquireExclusive); what people read is converted to the
// system clock (dblock_wall_now()).
//
// Parameters are named (":name", statement.h) and always bound, never spliced; columns read by
// name carry their names. Every statement dblock
// runs on SQLite is here; kAll lists those prepared once per connection.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_SQL_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_SQL_H_

#include "dblock/service/sql/statement.h"

namespace dblock::sqlite::sql {

using dblock::sql::Statement;

inline constexpr const char* kNow = "dblock_now()";

// Queue check shared by both acquire statements: nobody who has waited longer (smaller ticket) is
// still waiting. :ticket is the caller's ticket, NULL when it has not queued yet (then any live waiter
// comes first).
#define DBLOCK_SQLITE_NO_EARLIER_WAITER                                                      \
  " AND NOT EXISTS (SELECT 1 FROM {W} AS w WHERE w.name = :name AND w.until_us > {N}"            \
  " AND w.owner_secret <> :secret AND (:ticket IS NULL OR w.ticket < :ticket))"

// One statement: the fence comes from the
// counter row, floored at the system clock in microseconds (so that a file that replaces another
// at the same path issues fences above the old file's: every write transaction takes longer than a
// microsecond, so the old file's last fence is below the clock when the new file issues its first;
// a millisecond floor would repeat a fence issued within the same millisecond), and the trigger
// writes it back. Takes over an expired row; refuses a live one.
// Acquired iff sqlite3_changes() == 1; the issued fence and expiry are handed to the connection by
// dblock_issued_fence()/dblock_issued_expiry() (application functions that return their argument
// unchanged). Not RETURNING: SQLite buffers RETURNING rows in an ephemeral b-tree whose page cache
// is allocated and freed per statement, which costs more than the statement itself on this path.
inline constexpr Statement kAcquireExclusive{"acquire_exclusive",
    "INSERT INTO {L} AS L (name, owner_secret, holder, mode, fence, acquired_at_us, expires_at_us, renewals)"
    " SELECT :name, :secret, :holder, 'exclusive', dblock_issued_fence(max(value + 1, dblock_fence_floor())), {N}, dblock_issued_expiry({N} + :ttl_us), 0"
    " FROM {F} WHERE id = 1"
    DBLOCK_SQLITE_NO_EARLIER_WAITER
    " ON CONFLICT (name) DO UPDATE SET owner_secret = excluded.owner_secret, holder = excluded.holder,"
    " mode = 'exclusive', fence = excluded.fence, acquired_at_us = excluded.acquired_at_us,"
    " expires_at_us = excluded.expires_at_us, renewals = 0"
    " WHERE L.expires_at_us <= excluded.acquired_at_us"};

// Shared: joins live readers or takes a free row. :permits NULL: not a semaphore. Joins only readers granted under the same permits, and a
// semaphore's only while fewer than :permits other readers live (the write transaction makes the count
// exact). Followed by kInsertReader in the same transaction.
inline constexpr Statement kAcquireSharedRow{"acquire_shared_row",
    "INSERT INTO {L} AS L (name, owner_secret, holder, mode, fence, acquired_at_us, expires_at_us, renewals, permits)"
    " SELECT :name, NULL, NULL, 'shared', max(value + 1, dblock_fence_floor()), {N}, {N} + :ttl_us, 0, :permits FROM {F} WHERE id = 1"
    DBLOCK_SQLITE_NO_EARLIER_WAITER
    " ON CONFLICT (name) DO UPDATE SET owner_secret = NULL, holder = NULL, mode = 'shared',"
    " fence = excluded.fence,"
    " acquired_at_us = CASE WHEN L.mode = 'shared' AND L.expires_at_us > excluded.acquired_at_us"
    "   THEN L.acquired_at_us ELSE excluded.acquired_at_us END,"
    " expires_at_us = max(CASE WHEN L.mode = 'shared' THEN L.expires_at_us ELSE 0 END, excluded.expires_at_us),"
    " renewals = 0, permits = excluded.permits"
    " WHERE L.expires_at_us <= excluded.acquired_at_us OR (L.mode = 'shared' AND L.permits IS :permits"
    "   AND (:permits IS NULL OR (SELECT count(*) FROM {R} WHERE name = :name AND expires_at_us > {N} AND owner_secret <> :secret) < :permits))"
    " RETURNING fence, expires_at_us"};
// The permits of a live shared lease (NULL: plain readers); no row when none is live.
inline constexpr Statement kSharedPermits{"shared_permits",
    "SELECT permits FROM {L} WHERE name = :name AND mode = 'shared' AND expires_at_us > {N}"};

#undef DBLOCK_SQLITE_NO_EARLIER_WAITER

inline constexpr Statement kInsertReader{"insert_reader",
    "INSERT OR REPLACE INTO {R} (name, owner_secret, holder, fence, acquired_at_us, expires_at_us, renewals)"
    " VALUES (:name, :secret, :holder, :fence, {N}, {N} + :ttl_us, 0) RETURNING expires_at_us"};

// Not acquired: join (or stay in) the queue until :queue_us from now. :ticket NULL: "now".
// Returns the ticket.
inline constexpr Statement kQueue{"queue",
    "INSERT INTO {W} (name, owner_secret, ticket, until_us) VALUES (:name, :secret, coalesce(:ticket, {N}), {N} + :queue_us)"
    " ON CONFLICT (name, owner_secret) DO UPDATE SET until_us = excluded.until_us RETURNING ticket"};
// Live waiters ahead of the caller, and the holder's remaining time.
inline constexpr Statement kQueuePosition{"queue_position",
    "SELECT (SELECT count(*) FROM {W} WHERE name = :name AND until_us > {N} AND owner_secret <> :secret AND ticket < :ticket)"
    " AS ahead, (SELECT expires_at_us - {N} FROM {L} WHERE name = :name) AS remaining_us"};
inline constexpr Statement kLeaveQueue{"leave_queue", "DELETE FROM {W} WHERE name = :name AND owner_secret = :secret"};

// Holder's remaining time (read-only: what the first waiter polls).
inline constexpr Statement kRemaining{"remaining", "SELECT expires_at_us - {N} AS remaining_us FROM {L} WHERE name = :name"};

inline constexpr Statement kRenewExclusive{"renew_exclusive",
    "UPDATE {L} SET expires_at_us = {N} + :ttl_us, renewals = renewals + 1"
    " WHERE name = :name AND owner_secret = :secret AND mode = 'exclusive' AND expires_at_us > {N}"
    " RETURNING expires_at_us"};
inline constexpr Statement kRenewReader{"renew_reader",
    "UPDATE {R} SET expires_at_us = {N} + :ttl_us, renewals = renewals + 1"
    " WHERE name = :name AND owner_secret = :secret AND expires_at_us > {N} RETURNING expires_at_us"};
// :expires_at_us, the reader's new expiry. Keeps leases.expires_at_us >= every live reader's expiry.
inline constexpr Statement kExtendSharedRow{"extend_shared_row",
    "UPDATE {L} SET expires_at_us = max(expires_at_us, :expires_at_us), renewals = renewals + 1"
    " WHERE name = :name AND mode = 'shared'"};

// Release (compare-and-delete). The first statement deletes a live lease
// (sqlite3_changes() == 1: released); if it deleted nothing, the second removes this owner's
// expired row, if any (the lease was already lost). No RETURNING, see kAcquireExclusive.
inline constexpr Statement kReleaseExclusive{"release_exclusive",
    "DELETE FROM {L} WHERE name = :name AND owner_secret = :secret AND mode = 'exclusive' AND expires_at_us > {N}"};
// A scheduled job's release (AcquireOptions::hold_at_least) while its minimum hold is ahead: the
// row stays until acquired_at + :hold_us, disowned (no secret renews it or writes under it).
// Released iff sqlite3_changes() == 1; else release as usual.
inline constexpr Statement kReleaseHolding{"release_holding",
    "UPDATE {L} SET owner_secret = NULL, expires_at_us = acquired_at_us + :hold_us"
    " WHERE name = :name AND owner_secret = :secret AND mode = 'exclusive' AND expires_at_us > {N}"
    " AND acquired_at_us + :hold_us > {N}"};
inline constexpr Statement kReleaseExpired{"release_expired",
    "DELETE FROM {L} WHERE name = :name AND owner_secret = :secret AND mode = 'exclusive'"};
inline constexpr Statement kReleaseReader{"release_reader",
    "DELETE FROM {R} WHERE name = :name AND owner_secret = :secret RETURNING expires_at_us > {N} AS was_live"};
// Shrinks the shared row's expiry to the remaining live readers (0 = free).
inline constexpr Statement kShrinkSharedRow{"shrink_shared_row",
    "UPDATE {L} SET expires_at_us = coalesce("
    " (SELECT max(expires_at_us) FROM {R} WHERE name = :name AND expires_at_us > {N}), 0)"
    " WHERE name = :name AND mode = 'shared'"};

// Admin eviction, in one write transaction: read what is evicted, free the row with a new fence,
// drop the readers, record it in {H}.
// The live lease: mode, fence, holder (shared: the live readers' holders, sorted).
inline constexpr Statement kForceReleaseTarget{"force_release_target",
    "SELECT mode, fence, CASE WHEN mode = 'exclusive' THEN holder ELSE (SELECT group_concat(holder, ',') FROM"
    " (SELECT holder FROM {R} WHERE name = :name AND expires_at_us > {N} ORDER BY holder)) END AS holder"
    " FROM {L} WHERE name = :name AND expires_at_us > {N}"};
inline constexpr Statement kForceRelease{"force_release",
    "UPDATE {L} SET owner_secret = NULL, holder = NULL, expires_at_us = 0,"
    " fence = (SELECT max(value + 1, dblock_fence_floor()) FROM {F} WHERE id = 1)"
    " WHERE name = :name AND expires_at_us > {N} RETURNING fence"};
inline constexpr Statement kForceReleaseReaders{"force_release_readers", "DELETE FROM {R} WHERE name = :name"};
// :by is the forcing manager's holder string, :holder the evicted holder.
inline constexpr Statement kRecordForceRelease{"record_force_release",
    "INSERT INTO {H} (at_us, name, by_holder, holder, mode, old_fence, new_fence)"
    " VALUES (dblock_wall_now(), :name, :by, :holder, :mode, :old_fence, :new_fence)"};
// Recorded force-releases, newest first. :name NULL: all.
inline constexpr Statement kForceReleaseHistory{"force_release_history",
    "SELECT name, at_us, by_holder, NULL AS by_account, holder, mode, old_fence, new_fence FROM {H}"
    " WHERE :name IS NULL OR name = :name ORDER BY id DESC LIMIT :limit"};

// :name NULL: all.
inline constexpr Statement kList{"list",
    "SELECT name, mode, holder, fence, acquired_at_us - {N} + dblock_wall_now() AS acquired_at_us,"
    " expires_at_us - {N} + dblock_wall_now() AS expires_at_us, expires_at_us - {N} AS expires_in_us, renewals,"
    " (SELECT count(*) FROM {R} AS R WHERE R.name = L.name AND R.expires_at_us > {N}) AS readers,"
    " (SELECT group_concat(holder, ',') FROM {R} AS R WHERE R.name = L.name AND R.expires_at_us > {N}) AS reader_holders,"
    " permits"
    " FROM {L} AS L WHERE expires_at_us > {N} AND (:name IS NULL OR name = :name) ORDER BY name"};

// Live waiters per name (list's waiter counts). :name NULL: all.
inline constexpr Statement kListWaiters{"list_waiters",
    "SELECT name, count(*) AS waiters FROM {W} WHERE until_us > {N} AND (:name IS NULL OR name = :name) GROUP BY name"};
// Microseconds since the oldest expired lease or reader row expired (NULL: none).
inline constexpr Statement kOldestUnreaped{"oldest_unreaped",
    "SELECT {N} - min(e) AS oldest_us FROM (SELECT min(expires_at_us) AS e FROM {L} WHERE expires_at_us <= {N}"
    " UNION ALL SELECT min(expires_at_us) FROM {R} WHERE expires_at_us <= {N})"};

// 1 when any of the reap statements below would delete a row (read-only: what the reaper checks
// before taking the write lock).
inline constexpr Statement kReapDue{"reap_due",
    "SELECT EXISTS (SELECT 1 FROM {L} WHERE expires_at_us <= {N})"
    " OR EXISTS (SELECT 1 FROM {W} WHERE until_us <= {N})"
    " OR EXISTS (SELECT 1 FROM {R} WHERE expires_at_us <= {N}) AS due"};
// At most :batch rows each. Deletes only expired rows (the expiry index keeps this a range scan).
inline constexpr Statement kReapLeases{"reap_leases",
    "DELETE FROM {L} WHERE name IN (SELECT name FROM {L} WHERE expires_at_us <= {N} LIMIT :batch)"};
inline constexpr Statement kReapWaiters{"reap_waiters",
    "DELETE FROM {W} WHERE (name, owner_secret) IN"
    " (SELECT name, owner_secret FROM {W} WHERE until_us <= {N} LIMIT :batch)"};
inline constexpr Statement kReapReaders{"reap_readers",
    "DELETE FROM {R} WHERE (name, owner_secret) IN"
    " (SELECT name, owner_secret FROM {R} WHERE expires_at_us <= {N} LIMIT :batch)"};

// Guard checks, inside the caller's BEGIN IMMEDIATE transaction.
inline constexpr Statement kGuardExclusive{"guard_exclusive",
    "SELECT 1 FROM {L} WHERE name = :name AND owner_secret = :secret AND fence = :fence AND mode = 'exclusive'"
    " AND expires_at_us > {N}"};
inline constexpr Statement kGuardReader{"guard_reader",
    "SELECT 1 FROM {R} WHERE name = :name AND owner_secret = :secret AND fence = :fence AND expires_at_us > {N}"};

// Run before anything is written to a file: its tables, and how many of them are a dblock schema
// version table (under any prefix: "<prefix>schema_version" beside "<prefix>leases"; 14 is the
// length of "schema_version"). Unregistered (it runs before the connection is set up).
inline constexpr Statement kFileTables{"file_tables",
    "SELECT count(*) AS table_count, count(*) FILTER (WHERE name LIKE '%schema\\_version' ESCAPE '\\' AND EXISTS ("
    "SELECT 1 FROM sqlite_master l WHERE l.type = 'table' AND l.name = substr(m.name, 1, length(m.name) - 14) || 'leases'))"
    " AS schema_tables FROM sqlite_master m WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"};
inline constexpr Statement kTableExists{"table_exists",
    "SELECT count(*) AS table_count FROM sqlite_master WHERE type = 'table' AND name = :table"};
inline constexpr Statement kSchemaVersion{"schema_version", "SELECT coalesce(max(version), 0) AS version FROM {V}"};
inline constexpr Statement kRecordMigration{"record_migration",
    "INSERT INTO {V} (version, name, applied_at_us) VALUES (:version, :migration, dblock_wall_now())"};

// The lock file's clock (file_clock.h): the boot its base belongs to, and the base.
inline constexpr Statement kClockRead{"clock_read", "SELECT boot_id, base_us FROM {C} WHERE id = 1"};
// The latest time stored in the file: a new boot's clock starts above it.
inline constexpr Statement kClockLatest{"clock_latest",
    "SELECT max(coalesce((SELECT max(expires_at_us) FROM {L}), 0), coalesce((SELECT max(acquired_at_us) FROM {L}), 0),"
    " coalesce((SELECT max(expires_at_us) FROM {R}), 0), coalesce((SELECT max(until_us) FROM {W}), 0),"
    " coalesce((SELECT max(ticket) FROM {W}), 0)) AS latest_us"};
inline constexpr Statement kClockSet{"clock_set", "UPDATE {C} SET boot_id = :boot_id, base_us = :base_us WHERE id = 1"};

// Connection set-up. WAL lets readers (list, inspect) proceed during writes; NORMAL sync is durable
// against process crashes (the failure a lock must survive); see docs/backends/sqlite.md for power
// loss.
inline constexpr Statement kJournalWal{"journal_wal", "PRAGMA journal_mode=WAL"};
inline constexpr Statement kSyncNormal{"sync_normal", "PRAGMA synchronous=NORMAL"};
inline constexpr Statement kForeignKeys{"foreign_keys", "PRAGMA foreign_keys=ON"};

// Transactions. BEGIN IMMEDIATE takes the database's write lock at once: the migration lock, the
// guard's hold on the lease row until commit, and the transaction lock.
inline constexpr Statement kBeginImmediate{"begin_immediate", "BEGIN IMMEDIATE"};
inline constexpr Statement kCommit{"commit", "COMMIT"};
inline constexpr Statement kRollback{"rollback", "ROLLBACK"};

// Prepared once per connection (SQLITE_PREPARE_PERSISTENT), in this order.
inline constexpr const Statement* kAll[] = {
    &kAcquireExclusive, &kAcquireSharedRow, &kSharedPermits, &kInsertReader, &kQueue, &kQueuePosition, &kLeaveQueue,
    &kRemaining, &kRenewExclusive, &kRenewReader, &kExtendSharedRow, &kReleaseExclusive, &kReleaseHolding, &kReleaseExpired,
    &kReleaseReader, &kShrinkSharedRow, &kForceReleaseTarget, &kForceRelease, &kForceReleaseReaders, &kRecordForceRelease,
    &kForceReleaseHistory, &kList, &kListWaiters, &kOldestUnreaped, &kReapDue, &kReapLeases,
    &kReapWaiters, &kReapReaders, &kGuardExclusive, &kGuardReader, &kTableExists,
    &kSchemaVersion, &kRecordMigration, &kClockRead, &kClockLatest, &kClockSet,
};

}  // namespace dblock::sqlite::sql

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_SQL_H_
