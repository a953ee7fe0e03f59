// The MariaDB dialect of the lease statements. "{L}", "{R}", "{W}", "{V}", "{F}" stand for the
// backtick-quoted leases, readers, waiters and schema-version tables and the fence sequence;
// ":name" marks a bound parameter (rendered as `?`, bound by name, repeated as often as it
// appears). Times come from UTC_TIMESTAMP(6) on the server; microsecond values are computed only
// for reporting.
//
// Every lease operation is one round trip (acquire_all: one per name, in one transaction, plus
// START TRANSACTION and COMMIT or ROLLBACK). Two MariaDB features make that possible where MySQL
// needs two or more:
//  * INSERT ... RETURNING hands back the row a statement wrote (the fence, the expiry) without a
//    second SELECT.
//  * Compound statements (BEGIN NOT ATOMIC ... END) can be prepared with parameters. Operations that
//    touch two tables (shared leases, queued attempts, force-release) run as one prepared compound
//    statement: its transaction's row locks are held only while the server executes it, never
//    across a network round trip. Stored procedures would do the same but add schema objects, a
//    DEFINER and EXECUTE grants, for no gain in speed.
// A compound statement produces at most one result set, at its end, after all statements that can
// fail; its failures roll its transaction back (EXIT HANDLER) and reach the client unchanged.
// Statements that report by changed-row count (release, reap) rely on MySQL's default "changed
// rows" semantics (CLIENT_FOUND_ROWS off); every UPDATE here changes the rows it matches anyway.
//
// The waiter queue stays off the uncontended path. Merely naming a second table in a statement
// costs a table open and lock (docs/backends/mysql.md has the figures), so the hot statements
// (acquire, release) read only the leases table: a lock's row carries `queued_until`, the latest
// expiry of the live waiters queued for it, kept by the (contended) queue statements. A released
// row with live waiters is marked free rather than deleted, the reaper skips rows with live
// waiters, and a waiter joining a name without a row inserts a free marked one, so "no row"
// implies "nobody queued" and a new row can be inserted without looking at the queue.
//
// Durability of grants: InnoDB makes a commit visible to other statements before its redo log is
// flushed, and a waiter that merely reads a grant (kWaitTurn) commits nothing that would flush it.
// So a granting release holds the name's grant gate (a GET_LOCK key) from before its commit until
// its COMMIT has returned, which with innodb_flush_log_at_trx_commit=1 is after the flush, and
// the grantee passes the gate before it takes the lease: it never acts on a grant a crash could
// undo (nor on a fence a restarted sequence could hand out again). Every other way a waiter finds
// the lease its own is a commit of its own, which flushes the log past the grant.
//
// Fences come from NEXTVAL of the cached sequence {F}: no row lock, so acquires of different names
// do not queue behind each other's commits (schema 1 advanced a counter row in the lease table
// instead; see migrations/mysql/0002_fence_sequence.sql). Every attempt takes a value, taken or
// not: gaps are expected, values never repeat.
//
// Lock order: a lock's row before its readers' and waiters' rows; across names (acquire_all's one
// transaction, which holds every name's row until it ends), names in ascending order.
// Autocommit statements inside a compound statement commit one by one and hold no lock across
// each other. No two dblock statements deadlock on dblock's own rows; 1213 is still retried
// (application transactions share the tables' pages).
//
// Every statement dblock runs on MariaDB is here; kAll lists those prepared once per connection.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_SQL_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_SQL_H_

#include <string_view>

#include "dblock/service/sql/statement.h"

namespace dblock::mysql::sql {

using dblock::sql::Statement;

#define DBLOCK_MY_US(expr) "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " expr ")"
#define DBLOCK_MY_REMAINING(expr) "TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), " expr ")"
// What the tables store for the caller's owner secret (:secret, 32 hex digits): its digest, the
// first 128 bits of SHA-256 of its 16 bytes, computed by the server. An account that can read the
// tables learns digests, which no statement accepts in place of a secret.
#define DBLOCK_MY_OWNER "UNHEX(LEFT(SHA2(UNHEX(:secret), 256), 32))"
// The expiry given to freed rows.
#define DBLOCK_MY_EXPIRED "'1970-01-01 00:00:01'"
#define DBLOCK_MY_COLUMNS "(name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)"
#define DBLOCK_MY_COLUMNS_QUEUED "(name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals, queued_until)"
// On a lock's row: nobody is queued for it (its marker has passed or was never set).
#define DBLOCK_MY_NOBODY_QUEUED "COALESCE(queued_until, " DBLOCK_MY_EXPIRED ") <= UTC_TIMESTAMP(6)"
// Inside a compound statement with v_name: raise the row's queue marker to `until`, or recompute it
// from the live waiters (after one left the queue).
#define DBLOCK_MY_MARK_QUEUED(until) \
  "UPDATE {L} SET queued_until = GREATEST(COALESCE(queued_until, " until "), " until ") WHERE name = v_name;"
#define DBLOCK_MY_RECOMPUTE_QUEUED                                                                    \
  "UPDATE {L} SET queued_until = (SELECT MAX(w.until_at) FROM {W} w WHERE w.name = v_name"             \
  " AND w.until_at > UTC_TIMESTAMP(6)) WHERE name = v_name;"

// Exclusive acquire, one round trip. :name, :secret (hex), :holder, :ttl_us.
//
// The row for the name is taken when it is free (expired) and nobody is queued for it, or when
// this very secret holds it live (so that an attempt whose reply was lost can be repeated safely;
// unlike the free path that re-take ignores the queue: the lease is ours already). A new name is
// inserted (no row: nobody queued, see above). `@dblock_take` carries the decision, made once on
// the row's old values in the first assignment, to the later ones; expires_at is assigned last
// because the decision reads it. A take (re-takes included) stores the statement's new fence.
// RETURNING reports the row: acquired when it carries this secret and is live.
inline constexpr Statement kAcquireExclusive{"acquire_exclusive",
    "INSERT INTO {L} " DBLOCK_MY_COLUMNS " VALUES"
    " (:name, " DBLOCK_MY_OWNER ", :holder, 'exclusive', NEXTVAL({F}), UTC_TIMESTAMP(6),"
    "  UTC_TIMESTAMP(6) + INTERVAL :ttl_us MICROSECOND, 0)"
    " ON DUPLICATE KEY UPDATE"
    "  fence = IF(@dblock_take := ((expires_at > UTC_TIMESTAMP(6) AND owner_secret = VALUES(owner_secret) AND mode = 'exclusive')"
    "     OR (expires_at <= UTC_TIMESTAMP(6) AND " DBLOCK_MY_NOBODY_QUEUED ")), VALUES(fence), fence),"
    "  owner_secret = IF(@dblock_take, VALUES(owner_secret), owner_secret),"
    "  holder = IF(@dblock_take, VALUES(holder), holder),"
    "  mode = IF(@dblock_take, 'exclusive', mode),"
    "  acquired_at = IF(@dblock_take, VALUES(acquired_at), acquired_at),"
    "  renewals = IF(@dblock_take, 0, renewals),"
    "  expires_at = IF(@dblock_take, VALUES(expires_at), expires_at)"
    " RETURNING owner_secret = " DBLOCK_MY_OWNER " AND expires_at > UTC_TIMESTAMP(6) AS acquired, fence,"
    "  " DBLOCK_MY_US("expires_at") " AS expires_at_us, " DBLOCK_MY_REMAINING("expires_at") " AS remaining_us"};

// Not acquired on a first attempt: join the queue and mark the lock's row (inserting a free one
// when the holder's release deleted it meanwhile, so that an unqueued acquire cannot slip in ahead
// of this waiter), report the ticket,
// the number of live waiters ahead and the holder's remaining time. The entry records what a
// release needs to grant this waiter the lease (kReleaseExclusive): its holder and TTL.
// :name, :secret, :queue_us, :holder, :ttl_us.
inline constexpr Statement kQueue{"queue",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_until DATETIME(6) DEFAULT UTC_TIMESTAMP(6) + INTERVAL :queue_us MICROSECOND;"
    " DECLARE v_ticket BIGINT DEFAULT NULL;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
    " START TRANSACTION;"
    " INSERT INTO {L} " DBLOCK_MY_COLUMNS_QUEUED " VALUES"
    "  (v_name, NULL, NULL, 'exclusive', 0, UTC_TIMESTAMP(6), " DBLOCK_MY_EXPIRED ", 0, v_until)"
    "  ON DUPLICATE KEY UPDATE queued_until = GREATEST(COALESCE(queued_until, v_until), v_until);"
    " INSERT INTO {W} (name, owner_secret, ticket, until_at, holder, grant_ttl_us)"
    "  VALUES (v_name, v_secret, " DBLOCK_MY_US("UTC_TIMESTAMP(6)") ", v_until, :holder, :ttl_us)"
    "  ON DUPLICATE KEY UPDATE until_at = VALUES(until_at);"
    // Read before the commit: once it is in, a release may grant this waiter the lease and delete
    // the entry.
    " SET v_ticket = (SELECT q.ticket FROM {W} q WHERE q.name = v_name AND q.owner_secret = v_secret);"
    " COMMIT;"
    " SELECT v_ticket AS ticket,"
    "  (SELECT COUNT(*) FROM {W} w WHERE w.name = v_name AND w.until_at > UTC_TIMESTAMP(6)"
    "   AND w.owner_secret <> v_secret AND w.ticket < v_ticket) AS ahead,"
    "  (SELECT " DBLOCK_MY_REMAINING("l.expires_at") " FROM {L} l WHERE l.name = v_name) AS remaining_us;"
    " END"};

// A queued exclusive attempt (the caller has a ticket): the acquire above, then in the same round
// trip and transaction (one commit) either leave the queue (acquired) or refresh the queue entry
// and report the position. The queue check is exact here: nobody with a smaller ticket is queued.
// A lease a release granted to this secret meanwhile is found live and ours, and re-taken.
// Result: acquired, fence, expires_us, remaining_us, ticket, ahead.
// :name, :secret, :holder, :ttl_us, :ticket, :queue_us.
inline constexpr Statement kAcquireExclusiveQueued{"acquire_exclusive_queued",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_holder VARCHAR(255) DEFAULT :holder;"
    " DECLARE v_ttl_us BIGINT DEFAULT :ttl_us;"
    " DECLARE v_ticket BIGINT DEFAULT :ticket;"
    " DECLARE v_queue_us BIGINT DEFAULT :queue_us;"
    " DECLARE v_free INT DEFAULT 0;"
    " DECLARE v_ok INT DEFAULT 0;"
    " DECLARE v_fence BIGINT DEFAULT 0;"
    " DECLARE v_expires_us BIGINT DEFAULT 0;"
    " DECLARE v_remaining_us BIGINT DEFAULT 0;"
    " DECLARE v_until DATETIME(6) DEFAULT NULL;"
    " DECLARE v_ahead BIGINT DEFAULT 0;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
    " DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_ok = 0;"
    " SET v_free = NOT EXISTS (SELECT 1 FROM {W} w WHERE w.name = v_name AND w.until_at > UTC_TIMESTAMP(6)"
    "  AND w.owner_secret <> v_secret AND w.ticket < v_ticket);"
    " START TRANSACTION;"
    " INSERT INTO {L} " DBLOCK_MY_COLUMNS " VALUES"
    "  (v_name, v_secret, v_holder, 'exclusive', NEXTVAL({F}), UTC_TIMESTAMP(6),"
    "   IF(v_free, UTC_TIMESTAMP(6) + INTERVAL v_ttl_us MICROSECOND, " DBLOCK_MY_EXPIRED "), 0)"
    "  ON DUPLICATE KEY UPDATE"
    "  fence = IF(@dblock_take := ((expires_at > UTC_TIMESTAMP(6) AND owner_secret = v_secret AND mode = 'exclusive')"
    "     OR (expires_at <= UTC_TIMESTAMP(6) AND v_free)), VALUES(fence), fence),"
    "  owner_secret = IF(@dblock_take, v_secret, owner_secret),"
    "  holder = IF(@dblock_take, v_holder, holder),"
    "  mode = IF(@dblock_take, 'exclusive', mode),"
    "  acquired_at = IF(@dblock_take, UTC_TIMESTAMP(6), acquired_at),"
    "  renewals = IF(@dblock_take, 0, renewals),"
    "  expires_at = IF(@dblock_take, UTC_TIMESTAMP(6) + INTERVAL v_ttl_us MICROSECOND, expires_at);"
    " SELECT owner_secret = v_secret AND expires_at > UTC_TIMESTAMP(6), fence, " DBLOCK_MY_US("expires_at") ","
    "  " DBLOCK_MY_REMAINING("expires_at")
    "  INTO v_ok, v_fence, v_expires_us, v_remaining_us FROM {L} WHERE name = v_name;"
    " IF v_ok THEN"
    "  DELETE FROM {W} WHERE name = v_name AND owner_secret = v_secret;"
    "  " DBLOCK_MY_RECOMPUTE_QUEUED
    " ELSE"
    "  SET v_until = UTC_TIMESTAMP(6) + INTERVAL v_queue_us MICROSECOND;"
    "  " DBLOCK_MY_MARK_QUEUED("v_until")
    "  INSERT INTO {W} (name, owner_secret, ticket, until_at, holder, grant_ttl_us)"
    "   VALUES (v_name, v_secret, v_ticket, v_until, v_holder, v_ttl_us)"
    "   ON DUPLICATE KEY UPDATE until_at = VALUES(until_at);"
    "  SET v_ahead = (SELECT COUNT(*) FROM {W} w WHERE w.name = v_name AND w.until_at > UTC_TIMESTAMP(6)"
    "   AND w.owner_secret <> v_secret AND w.ticket < v_ticket);"
    " END IF;"
    " COMMIT;"
    " IF v_ok THEN SELECT 1 AS acquired, v_fence AS fence, v_expires_us AS expires_at_us, 0 AS remaining_us,"
    "  v_ticket AS ticket, 0 AS ahead;"
    " ELSE SELECT 0 AS acquired, 0 AS fence, 0 AS expires_at_us, v_remaining_us AS remaining_us, v_ticket AS ticket,"
    "  v_ahead AS ahead;"
    " END IF;"
    " END"};

// Shared acquire: join live readers or take a free row, record the reader, and queue or leave the
// queue, in one transaction inside one compound statement. A reader does not join while a writer
// queued before it waits (no writer starvation). Result as kAcquireExclusiveQueued; ahead is -1
// when not queued; then the permits the live readers hold (0: plain readers; -1: no live reader).
// :name, :secret, :holder, :ttl_us, :ticket (NULL before queueing), :queue_us (0: do not queue),
// :permits (NULL: not a semaphore). Joins only readers granted under the same permits; a
// semaphore's only while fewer than :permits other readers live, counted by a locking read after
// the name's row is locked (created free when missing), so that concurrent permit acquires of a
// name take turns and each sees the readers the earlier ones committed.
// Written once for two statements: `begin` and `commit` open and end the statement's own
// transaction, `on_error` is its error handler (empty where the caller's transaction is open).
#define DBLOCK_MY_ACQUIRE_SHARED(on_error, begin, commit) \
    "BEGIN NOT ATOMIC"                                                                                          \
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"                                                             \
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"                                                 \
    " DECLARE v_holder VARCHAR(255) DEFAULT :holder;"                                                           \
    " DECLARE v_ttl_us BIGINT DEFAULT :ttl_us;"                                                                 \
    " DECLARE v_ticket BIGINT DEFAULT :ticket;"                                                                 \
    " DECLARE v_queue_us BIGINT DEFAULT :queue_us;"                                                             \
    " DECLARE v_now DATETIME(6) DEFAULT UTC_TIMESTAMP(6);"                                                      \
    " DECLARE v_expires DATETIME(6) DEFAULT v_now + INTERVAL v_ttl_us MICROSECOND;"                             \
    " DECLARE v_until DATETIME(6) DEFAULT v_now + INTERVAL v_queue_us MICROSECOND;"                             \
    " DECLARE v_free INT DEFAULT 0;"                                                                            \
    " DECLARE v_ok INT DEFAULT 0;"                                                                              \
    " DECLARE v_fence BIGINT DEFAULT 0;"                                                                        \
    " DECLARE v_remaining_us BIGINT DEFAULT 0;"                                                                 \
    " DECLARE v_ahead BIGINT DEFAULT -1;"                                                                       \
    " DECLARE v_permits INT DEFAULT :permits;"                                                                  \
    " DECLARE v_held BIGINT DEFAULT -1;"                                                                        \
    " DECLARE v_count BIGINT DEFAULT 0;"                                                                        \
    on_error                                                                                                    \
    " DECLARE CONTINUE HANDLER FOR NOT FOUND SET v_ok = 0;"                                                     \
    " SET v_free = NOT EXISTS (SELECT 1 FROM {W} w WHERE w.name = v_name AND w.until_at > v_now"                \
    "  AND w.owner_secret <> v_secret AND (v_ticket IS NULL OR w.ticket < v_ticket));"                          \
    " SET v_fence = NEXTVAL({F});"                                                                              \
    begin                                                                                                       \
    " IF v_permits IS NOT NULL THEN"                                                                            \
    "  INSERT INTO {L} " DBLOCK_MY_COLUMNS " VALUES"                                                           \
    "   (v_name, NULL, NULL, 'shared', 0, v_now, " DBLOCK_MY_EXPIRED ", 0) ON DUPLICATE KEY UPDATE renewals = renewals;" \
    "  SELECT COUNT(*) INTO v_count FROM {R} WHERE name = v_name AND expires_at > v_now"                        \
    "   AND owner_secret <> v_secret LOCK IN SHARE MODE;"                                                       \
    "  SET v_free = v_free AND v_count < v_permits;"                                                            \
    " END IF;"                                                                                                  \
    " INSERT INTO {L} (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals, permits) VALUES" \
    "  (v_name, NULL, NULL, 'shared', v_fence, v_now, IF(v_free, v_expires, " DBLOCK_MY_EXPIRED "), 0, v_permits)" \
    "  ON DUPLICATE KEY UPDATE"                                                                                 \
    "  fence = IF(@dblock_join := ((expires_at <= v_now OR (mode = 'shared' AND permits <=> v_permits)) AND v_free)," \
    "   v_fence, fence),"                                                                                       \
    "  permits = IF(@dblock_join, v_permits, permits),"                                                         \
    "  owner_secret = IF(@dblock_join, NULL, owner_secret),"                                                    \
    "  holder = IF(@dblock_join, NULL, holder),"                                                                \
    "  acquired_at = IF(@dblock_join AND (mode <> 'shared' OR expires_at <= v_now), v_now, acquired_at),"       \
    "  renewals = IF(@dblock_join AND (mode <> 'shared' OR expires_at <= v_now), 0, renewals),"                 \
    "  expires_at = IF(@dblock_join,"                                                                           \
    "    IF(mode = 'shared' AND expires_at > v_now, GREATEST(expires_at, v_expires), v_expires), expires_at),"  \
    "  mode = IF(@dblock_join, 'shared', mode);"                                                                \
    " SELECT fence = v_fence AND expires_at > v_now, TIMESTAMPDIFF(MICROSECOND, v_now, expires_at),"            \
    "  IF(mode = 'shared' AND expires_at > v_now, COALESCE(permits, 0), -1)"                                    \
    "  INTO v_ok, v_remaining_us, v_held FROM {L} WHERE name = v_name;"                                         \
    " IF v_ok THEN"                                                                                             \
    "  INSERT INTO {R} (name, owner_secret, holder, fence, acquired_at, expires_at, renewals)"                  \
    "   VALUES (v_name, v_secret, v_holder, v_fence, v_now, v_expires, 0)"                                      \
    "   ON DUPLICATE KEY UPDATE holder = VALUES(holder), fence = VALUES(fence),"                                \
    "   acquired_at = VALUES(acquired_at), expires_at = VALUES(expires_at), renewals = 0;"                      \
    "  IF v_ticket IS NOT NULL THEN"                                                                            \
    "   DELETE FROM {W} WHERE name = v_name AND owner_secret = v_secret;"                                       \
    "   " DBLOCK_MY_RECOMPUTE_QUEUED                                                                            \
    "  END IF;"                                                                                                 \
    " ELSEIF v_queue_us > 0 THEN"                                                                               \
    "  " DBLOCK_MY_MARK_QUEUED("v_until")                                                                       \
    "  INSERT INTO {W} (name, owner_secret, ticket, until_at)"                                                  \
    "   VALUES (v_name, v_secret, COALESCE(v_ticket, " DBLOCK_MY_US("v_now") "), v_until)"                      \
    "   ON DUPLICATE KEY UPDATE until_at = VALUES(until_at);"                                                   \
    "  SELECT ticket INTO v_ticket FROM {W} WHERE name = v_name AND owner_secret = v_secret;"                   \
    "  SET v_ahead = (SELECT COUNT(*) FROM {W} w WHERE w.name = v_name AND w.until_at > v_now"                  \
    "   AND w.owner_secret <> v_secret AND w.ticket < v_ticket);"                                               \
    " END IF;"                                                                                                  \
    commit                                                                                                      \
    " IF v_ok THEN SELECT 1 AS acquired, v_fence AS fence, " DBLOCK_MY_US("v_expires") " AS expires_at_us,"       \
    "  0 AS remaining_us, COALESCE(v_ticket, 0) AS ticket, 0 AS ahead, v_held AS held_permits;"                  \
    " ELSE SELECT 0 AS acquired, 0 AS fence, 0 AS expires_at_us, v_remaining_us AS remaining_us,"                \
    "  COALESCE(v_ticket, 0) AS ticket, v_ahead AS ahead, v_held AS held_permits;"                               \
    " END IF;"                                                                                                  \
    " END"
inline constexpr Statement kAcquireShared{"acquire_shared", DBLOCK_MY_ACQUIRE_SHARED(
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;", " START TRANSACTION;", " COMMIT;")};
// The same inside a transaction the caller has open (acquire_all's): no transaction of its own and
// no handler (an error fails the statement; the caller rolls its whole transaction back). Called
// with :ticket NULL and :queue_us 0 (never queues).
inline constexpr Statement kAcquireSharedInTransaction{"acquire_shared_in_transaction",
    DBLOCK_MY_ACQUIRE_SHARED("", "", "")};
#undef DBLOCK_MY_ACQUIRE_SHARED

// Read-only: live waiters ahead of :ticket (other than :secret) and the holder's remaining time
// in microseconds (NULL: no row, free). :name, :secret, :ticket.
inline constexpr Statement kQueueStatus{"queue_status",
    "SELECT (SELECT COUNT(*) FROM {W} w WHERE w.name = :name AND w.until_at > UTC_TIMESTAMP(6)"
    "  AND w.owner_secret <> " DBLOCK_MY_OWNER " AND w.ticket < :ticket) AS ahead,"
    " (SELECT " DBLOCK_MY_REMAINING("l.expires_at") " FROM {L} l WHERE l.name = :name) AS remaining_us"};

// The holder's remaining time in microseconds (no row: free; 0 when :secret holds it, granted by a
// release). :name, :secret.
inline constexpr Statement kRemaining{"remaining",
    "SELECT IF(owner_secret <=> " DBLOCK_MY_OWNER ", 0, " DBLOCK_MY_REMAINING("expires_at") ") AS remaining_us"
    " FROM {L} WHERE name = :name"};

// A waiter gives up: leave the queue and lower the lock's queue marker. The lock's row is locked
// first, so a release granting this waiter the lease (kReleaseExclusive) commits before or after,
// never half-seen: the result says whether this secret now holds the name live (granted), so that
// the caller releases it and hands it on. :name, :secret.
inline constexpr Statement kLeaveQueue{"leave_queue",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_mine INT DEFAULT 0;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
    " DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;"
    " START TRANSACTION;"
    " SELECT owner_secret <=> v_secret AND mode = 'exclusive' AND expires_at > UTC_TIMESTAMP(6) INTO v_mine"
    "  FROM {L} WHERE name = v_name FOR UPDATE;"
    " DELETE FROM {W} WHERE name = v_name AND owner_secret = v_secret;"
    " " DBLOCK_MY_RECOMPUTE_QUEUED
    " COMMIT;"
    " SELECT v_mine AS mine;"
    " END"};

// Renew: UPDATE has no RETURNING in MariaDB, so the new expiry is computed first and reported with
// the changed-row count (CLIENT_FOUND_ROWS is off: renewals + 1 always changes the row).
// Result: renewed, expires_us. :name, :secret, :ttl_us.
inline constexpr Statement kRenewExclusive{"renew_exclusive",
    "BEGIN NOT ATOMIC"
    " DECLARE v_until DATETIME(6) DEFAULT UTC_TIMESTAMP(6) + INTERVAL :ttl_us MICROSECOND;"
    " UPDATE {L} SET expires_at = v_until, renewals = renewals + 1"
    "  WHERE name = :name AND owner_secret = " DBLOCK_MY_OWNER " AND mode = 'exclusive' AND expires_at > UTC_TIMESTAMP(6);"
    " SELECT ROW_COUNT() > 0 AS renewed, " DBLOCK_MY_US("v_until") " AS expires_at_us;"
    " END"};
// Keeps leases.expires_at >= every live reader's expiry; the lock's row first (lock order).
inline constexpr Statement kRenewReader{"renew_reader",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_now DATETIME(6) DEFAULT UTC_TIMESTAMP(6);"
    " DECLARE v_until DATETIME(6) DEFAULT v_now + INTERVAL :ttl_us MICROSECOND;"
    " DECLARE v_ok INT DEFAULT 0;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
    " START TRANSACTION;"
    " UPDATE {L} SET expires_at = GREATEST(expires_at, v_until), renewals = renewals + 1"
    "  WHERE name = v_name AND mode = 'shared' AND expires_at > v_now"
    "  AND EXISTS (SELECT 1 FROM {R} r WHERE r.name = v_name AND r.owner_secret = v_secret AND r.expires_at > v_now);"
    " IF ROW_COUNT() > 0 THEN"
    "  UPDATE {R} SET expires_at = v_until, renewals = renewals + 1 WHERE name = v_name AND owner_secret = v_secret;"
    "  SET v_ok = 1;"
    " END IF;"
    " COMMIT;"
    " SELECT v_ok AS renewed, " DBLOCK_MY_US("v_until") " AS expires_at_us;"
    " END"};

// Release, uncontended (compare-and-delete): deletes the row when this owner still holds the
// lease live and nobody is queued for it. InnoDB evaluates the condition on the latest version
// under the row lock, so a waiter that marked the row first is seen. Deleting is cheaper than
// marking free (docs/backends/mysql.md), and the acquire after it takes the plain insert path.
// No row changed: kReleaseExclusive decides. :name, :secret.
// A scheduled job's release (AcquireOptions::hold_at_least) while its minimum hold is ahead: the
// row stays until acquired_at + :hold_us, disowned (no secret renews it or writes under it), and
// nobody is handed it. One row changed: released; none: release as usual. :name, :secret, :hold_us.
inline constexpr Statement kReleaseHolding{"release_holding",
    "UPDATE {L} SET owner_secret = NULL, expires_at = acquired_at + INTERVAL :hold_us MICROSECOND"
    " WHERE name = :name AND owner_secret = " DBLOCK_MY_OWNER " AND mode = 'exclusive'"
    " AND expires_at > UTC_TIMESTAMP(6) AND acquired_at + INTERVAL :hold_us MICROSECOND > UTC_TIMESTAMP(6)"};

inline constexpr Statement kReleaseExclusiveUnqueued{"release_exclusive_unqueued",
    "DELETE FROM {L} WHERE name = :name AND owner_secret = " DBLOCK_MY_OWNER " AND mode = 'exclusive'"
    " AND expires_at > UTC_TIMESTAMP(6) AND " DBLOCK_MY_NOBODY_QUEUED};

// Release when the delete above changed nothing, or first for a lease acquired after queueing
// (waiters are probably queued again). Only a live lease of this owner is released (its row is
// locked first: lock order). The first live waiter in ticket order that recorded a grant TTL
// (exclusive waiters do) becomes the holder in the same transaction: its secret and holder, a new
// fence, and its TTL but no longer than its queue entry had left (a waiter that died or gave up
// holds the name no longer than its entry would have blocked the line; a live one renews to its
// full TTL). Its entry goes and the row's marker is recomputed without it. The grantee needs no
// statement of its own: its wait (kWaitTurn) or next attempt finds the lease its own. A grant is
// an acquisition: one durable commit, as the acquire it replaces, with the grant gate :gate held
// across it (see the file comment; a gate that cannot be taken at once means no grant). With
// nobody grantable first in line, the row is marked free and keeps its marker. Result: released
// (0: not held live by this owner: expired, taken over, force-released; our own expired row is
// harmless and reaped). :name, :secret, :gate.
inline constexpr Statement kReleaseExclusive{"release_exclusive",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_now DATETIME(6) DEFAULT UTC_TIMESTAMP(6);"
    " DECLARE v_held INT DEFAULT 0;"
    " DECLARE v_to BINARY(16) DEFAULT NULL;"
    " DECLARE v_to_holder VARCHAR(255) DEFAULT NULL;"
    " DECLARE v_grant_us BIGINT DEFAULT NULL;"
    " DECLARE v_gate VARCHAR(255) DEFAULT :gate;"
    " DECLARE v_gated INT DEFAULT 0;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; IF v_gated THEN DO RELEASE_LOCK(v_gate); END IF; RESIGNAL; END;"
    " DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;"
    " START TRANSACTION;"
    " SELECT 1 INTO v_held FROM {L} WHERE name = v_name AND owner_secret = v_secret AND mode = 'exclusive'"
    "  AND expires_at > v_now FOR UPDATE;"
    " IF v_held THEN"
    "  SELECT w.owner_secret, w.holder, LEAST(w.grant_ttl_us, TIMESTAMPDIFF(MICROSECOND, v_now, w.until_at))"
    "   INTO v_to, v_to_holder, v_grant_us FROM {W} w"
    "   WHERE w.name = v_name AND w.owner_secret <> v_secret AND w.until_at > v_now ORDER BY w.ticket LIMIT 1;"
    "  IF v_grant_us > 0 THEN SET v_gated = COALESCE(GET_LOCK(v_gate, 0), 0); END IF;"
    "  IF v_gated THEN"
    "   UPDATE {L} SET owner_secret = v_to, holder = v_to_holder, fence = NEXTVAL({F}), acquired_at = v_now,"
    "    expires_at = v_now + INTERVAL v_grant_us MICROSECOND, renewals = 0 WHERE name = v_name;"
    "   DELETE FROM {W} WHERE name = v_name AND owner_secret = v_to;"
    "   " DBLOCK_MY_RECOMPUTE_QUEUED
    "  ELSE"
    "   UPDATE {L} SET owner_secret = NULL, holder = NULL, expires_at = " DBLOCK_MY_EXPIRED " WHERE name = v_name;"
    "  END IF;"
    " END IF;"
    " COMMIT;"
    " IF v_gated THEN DO RELEASE_LOCK(v_gate); END IF;"
    " SELECT v_held AS released;"
    " END"};
// The lock's row is locked first, so no reader joins or renews while the lease's expiry is
// recomputed from the remaining live readers. One row: NULL when this reader was not found.
inline constexpr Statement kReleaseReader{"release_reader",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_now DATETIME(6) DEFAULT UTC_TIMESTAMP(6);"
    " DECLARE v_row INT DEFAULT 0;"
    " DECLARE v_live INT DEFAULT NULL;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
    " DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;"
    " START TRANSACTION;"
    " SELECT 1 INTO v_row FROM {L} WHERE name = v_name FOR UPDATE;"
    " SELECT expires_at > v_now INTO v_live FROM {R} WHERE name = v_name AND owner_secret = v_secret;"
    " IF v_live IS NOT NULL THEN"
    "  DELETE FROM {R} WHERE name = v_name AND owner_secret = v_secret;"
    "  UPDATE {L} SET expires_at = COALESCE((SELECT MAX(r.expires_at) FROM {R} r WHERE r.name = v_name"
    "   AND r.expires_at > v_now), " DBLOCK_MY_EXPIRED ") WHERE name = v_name AND mode = 'shared';"
    " END IF;"
    " COMMIT;"
    " SELECT v_live AS was_live;"
    " END"};

// Admin eviction: frees the name, gives its row a new fence (so the evicted holder's guarded
// writes and renewals fail), drops its readers and records the eviction in {H} in the same
// transaction: the holder it evicted (shared: the live readers'), the mode, the fence before and
// after, :by (the forcing manager's holder string) and the account. Result: rows evicted (0 or 1).
inline constexpr Statement kForceRelease{"force_release",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_now DATETIME(6) DEFAULT UTC_TIMESTAMP(6);"
    " DECLARE v_mode VARCHAR(16);"
    " DECLARE v_holder TEXT;"
    " DECLARE v_old BIGINT;"
    " DECLARE v_new BIGINT;"
    " DECLARE v_evicted INT DEFAULT 0;"
    " DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;"
    " START TRANSACTION;"
    " SELECT mode, fence, holder INTO v_mode, v_old, v_holder FROM {L}"
    "  WHERE name = v_name AND expires_at > v_now FOR UPDATE;"
    " IF v_mode IS NOT NULL THEN"
    "  IF v_mode = 'shared' THEN"
    "   SET v_holder = (SELECT GROUP_CONCAT(holder ORDER BY holder SEPARATOR ',') FROM {R}"
    "    WHERE name = v_name AND expires_at > v_now);"
    "  END IF;"
    "  SET v_new = NEXTVAL({F});"
    "  UPDATE {L} SET owner_secret = NULL, holder = NULL, expires_at = " DBLOCK_MY_EXPIRED ", fence = v_new"
    "   WHERE name = v_name;"
    "  DELETE FROM {R} WHERE name = v_name;"
    "  INSERT INTO {H} (at, name, by_holder, by_account, holder, mode, old_fence, new_fence)"
    "   VALUES (v_now, v_name, :by, CURRENT_USER(), v_holder, v_mode, v_old, v_new);"
    "  SET v_evicted = 1;"
    "  COMMIT;"
    " ELSE"
    // Nothing to evict: an account that may not record an eviction is still told so (as on
    // PostgreSQL), by an insert of no row, which checks the privilege and writes nothing.
    "  INSERT INTO {H} (at, name, by_holder, by_account, holder, mode, old_fence, new_fence)"
    "   SELECT v_now, v_name, :by, CURRENT_USER(), NULL, 'exclusive', 0, 0 FROM DUAL WHERE FALSE;"
    "  ROLLBACK;"
    " END IF;"
    " SELECT v_evicted AS evicted;"
    " END"};

// Recorded force-releases, newest first. :name ("" for every name), :limit.
inline constexpr Statement kForceReleaseHistory{"force_release_history",
    "SELECT name, " DBLOCK_MY_US("at") " AS at_us, by_holder, by_account, holder, mode, old_fence, new_fence FROM {H}"
    " WHERE :name = '' OR name = :name ORDER BY id DESC LIMIT :limit"};

// The same reads through the schema's definer-rights routines (schema 6), which is all a read-only
// account may run: EXECUTE on them, no SELECT on the tables (whose rows it could lock). An account
// without EXECUTE (the run-time grants of schema 5) reads the tables (the statements below).
// :name ("" for every name), :limit.
inline constexpr Statement kListCall{"list_call", "CALL {M}(:name)"};
// The columns of the routines' results, named as the list statements name theirs: the routines
// (migrations 0006, 0007) leave theirs unnamed, and a deployed routine is not changed to rename
// them.
inline constexpr const char* kListColumns[] = {"name",          "mode",          "holder",  "fence",
                                               "acquired_at_us", "expires_at_us", "expires_in_us",
                                               "renewals",      "readers",       "reader_holders", "permits"};
inline constexpr const char* kForceReleaseHistoryColumns[] = {"name", "at_us", "by_holder", "by_account",
                                                              "holder", "mode", "old_fence", "new_fence"};
inline constexpr Statement kForceReleaseHistoryCall{"force_release_history_call", "CALL {Y}(:name, :limit)"};

// Live leases.
#define DBLOCK_MY_LIST                                                                                       \
  "SELECT l.name, l.mode, l.holder, l.fence, " DBLOCK_MY_US("l.acquired_at") " AS acquired_at_us,"            \
  " " DBLOCK_MY_US("l.expires_at") " AS expires_at_us, " DBLOCK_MY_REMAINING("l.expires_at") " AS expires_in_us," \
  " l.renewals, (SELECT COUNT(*) FROM {R} r WHERE r.name = l.name AND r.expires_at > UTC_TIMESTAMP(6)) AS readers," \
  " (SELECT GROUP_CONCAT(r.holder ORDER BY r.acquired_at SEPARATOR ',') FROM {R} r WHERE r.name = l.name"      \
  "  AND r.expires_at > UTC_TIMESTAMP(6)) AS reader_holders, l.permits"                                       \
  " FROM {L} l WHERE l.expires_at > UTC_TIMESTAMP(6)"
// Live waiters per name (list's waiter counts; an account without SELECT on {W} gets none).
// :name ("" for every name).
inline constexpr Statement kListWaiters{"list_waiters",
    "SELECT name, COUNT(*) AS waiters FROM {W} WHERE until_at > UTC_TIMESTAMP(6) AND (:name = '' OR name = :name) GROUP BY name"};
// Microseconds since the oldest row the reaper would delete expired (NULL: none). Released rows
// (expires_at DBLOCK_MY_EXPIRED) carry no time and are left out.
inline constexpr Statement kOldestUnreaped{"oldest_unreaped",
    "SELECT TIMESTAMPDIFF(MICROSECOND, MIN(e), UTC_TIMESTAMP(6)) AS oldest_us FROM ("
    "SELECT MIN(expires_at) AS e FROM {L} WHERE expires_at <= UTC_TIMESTAMP(6)"
    " AND expires_at > " DBLOCK_MY_EXPIRED " AND " DBLOCK_MY_NOBODY_QUEUED
    " UNION ALL SELECT MIN(expires_at) FROM {R} WHERE expires_at <= UTC_TIMESTAMP(6)) m"};
inline constexpr Statement kListAll{"list_all", DBLOCK_MY_LIST " ORDER BY l.name"};
inline constexpr Statement kListOne{"list_one", DBLOCK_MY_LIST " AND l.name = :name"};
#undef DBLOCK_MY_LIST

// Reaper: at most :batch expired rows per statement, oldest first, along the expiry index. Under
// READ COMMITTED a row another statement has locked is checked against its last committed version
// and skipped when that no longer matches. Rows with live waiters stay (their queue marker must not
// vanish with them).
inline constexpr Statement kReapLeases{"reap_leases",
    "DELETE FROM {L} WHERE expires_at <= UTC_TIMESTAMP(6) AND " DBLOCK_MY_NOBODY_QUEUED
    " ORDER BY expires_at LIMIT :batch"};
inline constexpr Statement kReapReaders{"reap_readers",
    "DELETE FROM {R} WHERE expires_at <= UTC_TIMESTAMP(6) ORDER BY expires_at LIMIT :batch"};
inline constexpr Statement kReapWaiters{"reap_waiters",
    "DELETE FROM {W} WHERE until_at <= UTC_TIMESTAMP(6) ORDER BY until_at LIMIT :batch"};

// Guard: opens the caller's transaction and checks, inside it, that the lease is still held with
// that fence. LOCK IN SHARE MODE on the lock's row keeps it from being taken over, released or
// force-released (all of which write it) until the transaction ends, so a commit after a successful
// check happens while the lease is still ours. A reader's check locks the lock's row too, so no
// writer can take it over after the reader's expiry while the transaction is open. The transaction
// stays open after the statement. Result: held (0/1). :name, :secret, :fence.
inline constexpr Statement kGuardBegin{"guard_begin",
    "BEGIN NOT ATOMIC"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_fence BIGINT DEFAULT :fence;"
    " DECLARE v_held INT DEFAULT 0;"
    " DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;"
    " START TRANSACTION;"
    " SELECT 1 INTO v_held FROM {L} WHERE name = v_name AND owner_secret = v_secret AND fence = v_fence"
    "  AND mode = 'exclusive' AND expires_at > UTC_TIMESTAMP(6) LOCK IN SHARE MODE;"
    " IF v_held = 0 THEN"
    "  SELECT 1 INTO v_held FROM {L} l JOIN {R} r ON r.name = l.name WHERE l.name = v_name AND l.mode = 'shared'"
    "   AND r.owner_secret = v_secret AND r.fence = v_fence AND r.expires_at > UTC_TIMESTAMP(6) LOCK IN SHARE MODE;"
    " END IF;"
    " SELECT v_held AS held;"
    " END"};

// Release beacons (see mysql.h). The holder's beacon thread takes and drops them on its own
// connection; waiters block on one. :key.
inline constexpr Statement kTakeBeacon{"take_beacon", "SELECT GET_LOCK(:key, 0) AS got"};
inline constexpr Statement kDropBeacon{"drop_beacon", "SELECT RELEASE_LOCK(:key) AS released"};
// A waiter's wait for its turn, server-side so that waking costs no round trip. Loops until a
// release granted this secret the lease (kReleaseExclusive; the wait then passes the grant gate
// :gate, which the release holds until its commit is durable), or the name is free (no live row)
// and no live waiter queued before :ticket (0: not queued) remains, which is exactly when the
// queued acquire may take it.
// Only the first in line watches the holder. A queued waiter holds its own waiting key
// (DBLOCK_MY_WAITING_KEY) for the duration, and one behind others blocks in GET_LOCK on the key of
// the live waiter just ahead of it, which is let go when that waiter's wait ends (it was granted
// the lease, may attempt, gave up, or died): the line costs the server one poller, not one per
// waiter. A waiter ahead that is not blocked here (polling, between attempts) is looked at again
// in 0.5 ms. The first in line, while another holds the row live:
//  - a beacon is held: block in GET_LOCK on it, bounded by the row's expiry (a paused holder keeps
//    its beacon connection alive), and give a granted beacon back at once;
//  - no beacon and the lease is younger than :grace_us: the holder's manager takes its beacon only
//    after a beacon delay (a short acquire/release pair never pays for one), so look again in
//    0.5 ms (a few index reads; this is the bounded poll for short holds);
//  - no beacon and older: nothing to block on, return -1 and let the client poll.
// Every GET_LOCK is bounded by :timeout_us. Result: outcome, fence, expires_us, granted_us.
// Outcome 2: granted (the other columns describe the lease: granted_us is its length from the
// grant); 1: attempt now; 0: :timeout_us passed; -1: nothing to block on (or the gate could not
// be passed). :key, :gate, :name, :secret, :ticket, :grace_us, :timeout_us.
// A waiter's key: the beacon key (keys.h: "<database>:\x1f<digest>") with its digest replaced by
// one of the beacon key and the waiter's secret digest, so it stays in dblock's own key space.
// (The variables holding keys are utf8mb4 whatever the database's default, so that the CONCAT of
// a key and a digest never mixes collations.)
#define DBLOCK_MY_WAITING_KEY(secret) \
  "CONCAT(LEFT(v_key, CHAR_LENGTH(v_key) - 40), LEFT(SHA2(CONCAT(v_key, HEX(" secret ")), 256), 40))"
#define DBLOCK_MY_LOCK_FOR(until) "TIMESTAMPDIFF(MICROSECOND, v_now, " until ") / 1e6"
inline constexpr Statement kWaitTurn{"wait_turn",
    "BEGIN NOT ATOMIC"
    " DECLARE v_key VARCHAR(255) CHARACTER SET utf8mb4 DEFAULT :key;"
    " DECLARE v_gate VARCHAR(255) DEFAULT :gate;"
    " DECLARE v_name VARBINARY(255) DEFAULT :name;"
    " DECLARE v_secret BINARY(16) DEFAULT " DBLOCK_MY_OWNER ";"
    " DECLARE v_ticket BIGINT DEFAULT :ticket;"
    " DECLARE v_grace_us BIGINT DEFAULT :grace_us;"
    " DECLARE v_until DATETIME(6) DEFAULT UTC_TIMESTAMP(6) + INTERVAL :timeout_us MICROSECOND;"
    " DECLARE v_mykey VARCHAR(64) CHARACTER SET utf8mb4 DEFAULT NULL;"
    " DECLARE v_ahead VARCHAR(64) CHARACTER SET utf8mb4;"
    " DECLARE v_now DATETIME(6);"
    " DECLARE v_acquired DATETIME(6);"
    " DECLARE v_expires DATETIME(6);"
    " DECLARE v_mine INT;"
    " DECLARE v_fence BIGINT;"
    " DECLARE v_got INT;"
    " DECLARE v_result INT DEFAULT NULL;"
    " DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN DO RELEASE_LOCK(v_mykey); RESIGNAL; END;"
    " DECLARE CONTINUE HANDLER FOR NOT FOUND BEGIN END;"
    " IF v_ticket <> 0 THEN"
    "  SET v_mykey = " DBLOCK_MY_WAITING_KEY("v_secret") ";"
    "  DO GET_LOCK(v_mykey, 0.005);"  // a successor may hold it for an instant
    " END IF;"
    " WHILE v_result IS NULL DO"
    "  SET v_acquired = NULL, v_expires = NULL, v_mine = 0, v_ahead = NULL, v_now = UTC_TIMESTAMP(6);"
    "  SELECT acquired_at, expires_at, owner_secret <=> v_secret AND mode = 'exclusive', fence"
    "   INTO v_acquired, v_expires, v_mine, v_fence FROM {L} WHERE name = v_name AND expires_at > v_now;"
    "  IF v_ticket <> 0 AND NOT v_mine THEN"
    "   SET v_ahead = (SELECT " DBLOCK_MY_WAITING_KEY("w.owner_secret") " FROM {W} w WHERE w.name = v_name"
    "    AND w.until_at > v_now AND w.owner_secret <> v_secret AND w.ticket < v_ticket ORDER BY w.ticket DESC LIMIT 1);"
    "  END IF;"
    "  IF v_mine THEN"
    "   SET v_got = GET_LOCK(v_gate, " DBLOCK_MY_LOCK_FOR("v_expires") ");"
    "   IF v_got = 1 THEN DO RELEASE_LOCK(v_gate); SET v_result = 2; ELSE SET v_result = -1; END IF;"
    "  ELSEIF v_now >= v_until THEN SET v_result = 0;"
    "  ELSEIF v_ahead IS NOT NULL THEN"
    "   IF IS_USED_LOCK(v_ahead) IS NOT NULL THEN"
    "    IF GET_LOCK(v_ahead, " DBLOCK_MY_LOCK_FOR("v_until") ") = 1 THEN DO RELEASE_LOCK(v_ahead); END IF;"
    "   ELSE DO SLEEP(0.0005);"
    "   END IF;"
    "  ELSEIF v_expires IS NULL THEN SET v_result = 1;"
    "  ELSEIF IS_USED_LOCK(v_key) IS NOT NULL THEN"
    "   SET v_got = GET_LOCK(v_key, " DBLOCK_MY_LOCK_FOR("LEAST(v_until, v_expires)") " + 0.001);"
    "   IF v_got = 1 THEN DO RELEASE_LOCK(v_key); ELSEIF v_got IS NULL THEN SET v_result = -1; END IF;"
    "  ELSEIF v_acquired + INTERVAL v_grace_us MICROSECOND > v_now THEN DO SLEEP(0.0005);"
    "  ELSE SET v_result = -1;"
    "  END IF;"
    " END WHILE;"
    " IF v_mykey IS NOT NULL THEN DO RELEASE_LOCK(v_mykey); END IF;"
    " SELECT v_result AS turn, v_fence AS fence, " DBLOCK_MY_US("v_expires") " AS expires_at_us,"
    "  TIMESTAMPDIFF(MICROSECOND, v_acquired, v_expires) AS granted_for_us;"
    " END"};
#undef DBLOCK_MY_LOCK_FOR
#undef DBLOCK_MY_WAITING_KEY

// Session locks, on a dedicated connection each. CONNECTION_ID() comes back with every call: a
// change means the client reconnected underneath and the lock is gone. :key, :timeout_s.
inline constexpr Statement kSessionLock{"session_lock", "SELECT GET_LOCK(:key, :timeout_s) AS got, CONNECTION_ID() AS connection_id"};
inline constexpr Statement kSessionVerify{"session_verify", "SELECT IS_USED_LOCK(:key) = CONNECTION_ID() AS held, CONNECTION_ID() AS connection_id"};
inline constexpr Statement kSessionUnlock{"session_unlock", "SELECT RELEASE_LOCK(:key) AS released, CONNECTION_ID() AS connection_id"};

// Transaction locks: GET_LOCK and START TRANSACTION in one round trip, COMMIT/ROLLBACK and
// RELEASE_LOCK in another. Result of the first: GET_LOCK's (1 granted, 0 timed out, NULL error).
// :key, :timeout_s.
inline constexpr Statement kXactBegin{"xact_begin",
    "BEGIN NOT ATOMIC"
    " DECLARE v_got INT DEFAULT GET_LOCK(:key, :timeout_s);"
    " IF v_got = 1 THEN START TRANSACTION; END IF;"
    " SELECT v_got AS got;"
    " END"};
inline constexpr Statement kXactCommit{"xact_commit", "BEGIN NOT ATOMIC COMMIT; DO RELEASE_LOCK(:key); END"};
inline constexpr Statement kXactRollback{"xact_rollback", "BEGIN NOT ATOMIC ROLLBACK; DO RELEASE_LOCK(:key); END"};

// Connection set-up. The first statement is plain SQL that any MySQL-protocol server answers, so
// that a server we cannot use is refused with a clear message rather than a syntax error.
inline constexpr Statement kHello{"hello", "SELECT VERSION() AS version, CONNECTION_ID() AS connection_id, DATABASE() AS db, @@read_only AS is_read_only"};
inline constexpr Statement kSessionSetup{"session_setup",
    "BEGIN NOT ATOMIC SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED; SET SESSION time_zone = '+00:00'; END"};
// Connection set-up on a writable server, before the connection's first lease statement: floors
// the fence sequence above the server's clock in microseconds and above :carried, the highest
// fence this process was issued (dblock/service/sql/carried_fence.h): a replica made primary that lacks the
// old primary's last fences issues none of them again. SETVAL takes literals only (hence the
// dynamic statement, {Q} the sequence's quoted name as a string literal, the value the BIGINT
// just computed) and never moves a sequence down, so
// concurrent floors and NEXTVALs cannot make it issue a value twice.
inline constexpr Statement kFloorFences{"floor_fences",
    "BEGIN NOT ATOMIC"
    " DECLARE v_floor BIGINT DEFAULT GREATEST(" DBLOCK_MY_US("UTC_TIMESTAMP(6)") ", :carried);"
    " IF v_floor > NEXTVAL({F}) THEN EXECUTE IMMEDIATE CONCAT('DO SETVAL(', {Q}, ', ', v_floor, ')'); END IF;"
    " SELECT v_floor AS fence_floor;"
    " END"};

// Migrations, serialised by a server-wide GET_LOCK (MySQL DDL is not transactional). :key.
inline constexpr Statement kMigrationLock{"migration_lock", "SELECT GET_LOCK(:key, :timeout_s) AS got"};
// Who holds the migration lock, for the error when it did not come free in time (any account that
// can connect can take a GET_LOCK name): its connection id, and its user and host where this
// account may see them (PROCESS privilege, or the same user).
inline constexpr Statement kMigrationLockHolder{"migration_lock_holder",
    "SELECT l.id AS id, p.USER AS user, p.HOST AS host FROM (SELECT IS_USED_LOCK(:key) AS id) l"
    " LEFT JOIN information_schema.PROCESSLIST p ON p.ID = l.id"};
inline constexpr Statement kMigrationUnlock{"migration_unlock", "SELECT RELEASE_LOCK(:key) AS released"};
// :table.
inline constexpr Statement kTableExists{"table_exists",
    "SELECT COUNT(*) AS table_count FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = :table"};
inline constexpr Statement kSchemaVersion{"schema_version", "SELECT COALESCE(MAX(version), 0) AS version FROM {V}"};
// :version, :name.
inline constexpr Statement kRecordMigration{"record_migration",
    "INSERT IGNORE INTO {V} (version, name, applied_at) VALUES (:version, :name, UTC_TIMESTAMP(6))"};

// Transaction control on the plain (unprepared) statement of a connection.
inline constexpr Statement kStartTransaction{"start_transaction", "START TRANSACTION"};
inline constexpr Statement kCommit{"commit", "COMMIT"};
inline constexpr Statement kRollback{"rollback", "ROLLBACK"};

// The prefix bounding a row lock's wait (RowLockRequest::wait_timeout): max_statement_time in
// seconds with millisecond digits, and innodb_lock_wait_timeout (whole seconds) as the backstop.
// printf arguments: seconds, milliseconds, whole seconds rounded up. Literals, because SET
// STATEMENT takes no parameters.
inline constexpr const char* kWaitBoundFormat =
    "SET STATEMENT max_statement_time = %lld.%03lld, innodb_lock_wait_timeout = %lld FOR ";

// The lease statements that lock rows of dblock's tables run under this prefix, so that on the
// server too their lock waits are bounded: a row lock (or table metadata lock) that another
// transaction holds past a second fails the statement with 1205, which rolls it back, instead of
// InnoDB's default 50 s, which would outlive the call (its socket cut at the deadline, the
// statement still waiting on the server). The client repeats it while the call's deadline leaves
// room for another wait (Context::query). A literal, because SET STATEMENT takes no parameters.
inline constexpr const char* kLockWaitBound = "SET STATEMENT innodb_lock_wait_timeout = 1, lock_wait_timeout = 1 FOR ";
inline constexpr int kLockWaitBoundSeconds = 1;
static_assert(std::string_view(kLockWaitBound).find("innodb_lock_wait_timeout = 1,") != std::string_view::npos &&
                  kLockWaitBoundSeconds == 1,
              "kLockWaitBound and kLockWaitBoundSeconds must name the same bound");

// Prepared once per connection (server-side), in this order.
inline constexpr const Statement* kAll[] = {
    &kAcquireExclusive, &kAcquireExclusiveQueued, &kAcquireShared, &kAcquireSharedInTransaction, &kQueue, &kRemaining,
    &kLeaveQueue, &kRenewExclusive, &kRenewReader, &kReleaseHolding, &kReleaseExclusiveUnqueued, &kReleaseExclusive, &kReleaseReader,
    &kForceRelease, &kForceReleaseHistory, &kListAll, &kListOne, &kListCall, &kListWaiters, &kOldestUnreaped, &kForceReleaseHistoryCall, &kReapLeases, &kReapReaders, &kReapWaiters, &kGuardBegin,
    &kTakeBeacon, &kDropBeacon, &kWaitTurn, &kSessionLock, &kSessionVerify, &kSessionUnlock, &kXactBegin,
    &kXactCommit, &kXactRollback, &kFloorFences, &kMigrationLock, &kMigrationLockHolder, &kMigrationUnlock, &kTableExists, &kSchemaVersion,
    &kRecordMigration, &kQueueStatus,
};

// The statements that run under kLockWaitBound.
inline constexpr const Statement* kLockBounded[] = {
    &kAcquireExclusive, &kAcquireExclusiveQueued, &kAcquireShared, &kAcquireSharedInTransaction, &kQueue, &kLeaveQueue,
    &kRenewExclusive, &kRenewReader, &kReleaseHolding, &kReleaseExclusiveUnqueued, &kReleaseExclusive, &kReleaseReader, &kForceRelease,
    &kReapLeases, &kReapReaders, &kReapWaiters, &kGuardBegin,
};

#undef DBLOCK_MY_RECOMPUTE_QUEUED
#undef DBLOCK_MY_MARK_QUEUED
#undef DBLOCK_MY_NOBODY_QUEUED
#undef DBLOCK_MY_COLUMNS_QUEUED
#undef DBLOCK_MY_COLUMNS
#undef DBLOCK_MY_EXPIRED
#undef DBLOCK_MY_REMAINING
#undef DBLOCK_MY_OWNER
#undef DBLOCK_MY_US

}  // namespace dblock::mysql::sql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_SQL_H_
