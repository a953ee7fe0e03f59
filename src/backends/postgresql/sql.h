// The PostgreSQL dialect of the lease statements. "{L}", "{R}", "{W}", "{V}" stand for the quoted
// leases, readers, waiters and schema-version tables, "{S}" for the quoted fence sequence name as
// a string literal (for nextval). Times come from clock_timestamp() on the server; microsecond
// values are extracted only for reporting.
//
// Every statement is one round trip; parameters are named (":name", statement.h) and always bound, never
// spliced; columns read by name carry their names. Every
// statement dblock runs on PostgreSQL is here: kPrepared lists those prepared by name on each
// connection, kAdHoc those run as text inside transactions dblock opens.
//
// acquire_all (MultiAcquire) runs the unqueued acquire statements (kAcquireExclusive, kAcquireShared
// with no ticket) once per name inside one transaction, names in ascending order: the transaction
// holds the row of every name it has written until it ends, so two of them lock in the same order
// and cannot deadlock each other; one refused name rolls the whole transaction back.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_H_

#include "dblock/service/sql/statement.h"

namespace dblock::postgresql::sql {

using dblock::sql::Statement;

#define DBLOCK_PG_US(expr) "(extract(epoch from " expr ") * 1000000)::bigint"

// What the tables store for the caller's owner secret (:secret, 32 hex digits): its digest, the first
// 128 bits of SHA-256 of its 16 bytes, computed by the server. A role that can read the tables
// learns digests, which no statement accepts in place of a secret. Immutable: an index condition.
#define DBLOCK_PG_OWNER "encode(substr(sha256(uuid_send(:secret::uuid)), 1, 16), 'hex')::uuid"

// A RETURNING item of the release statements: their commit does not wait for the WAL flush
// (synchronous_commit is set for this transaction only, and read at its commit). Why that is safe:
// a release undone by a server crash leaves the lease held by nobody until its expiry, exactly as
// if the holder had crashed; it can never grant a name twice or repeat a fence. And it is rarely
// undone at all: the WAL is sequential, so the next synchronous commit on the server (any acquire
// or renewal, the next holder's first) makes the release durable too; otherwise the WAL writer
// flushes it within 3 x wal_writer_delay (600 ms by default). What this buys: a release returns
// one WAL flush sooner, and on a hand-off the woken waiter's acquire flushes both with one fsync.
// Acquires and renewals always wait for the flush: undoing one of them could grant a lease twice.
#define DBLOCK_PG_NO_FLUSH_WAIT " set_config('synchronous_commit', 'off', true) IS NOT NULL"

// A freed row gets expires_at = the current time, never '-infinity': remaining-time expressions
// subtract it from clock_timestamp(), which infinite timestamps refuse.
//
// The waiter queue stays off the uncontended path. A lease row carries the queue's state:
// queued_until, the latest expiry of the live waiters queued for the name, and queued_ticket, a
// hint naming the first of them. The uncontended acquire and release read only the leases table
// (naming {W} in a statement costs a measurable part of an UNLOGGED acquire: the executor opens and
// locks every table in the plan, also a branch that never runs). A name with live waiters always
// has a row: a release re-creates it as a free row carrying the marker, and the reaper skips marked
// rows, so "no row" means "nobody queued". The queue statements (contended only) keep the marker:
// joining raises it, leaving or acquiring from the queue recomputes it from {W}.
//
// Recomputing reads {W} as of the statement's snapshot, and a waiter joining concurrently is not
// in it. A join writes the row whenever that matters (below), and it has done so when the
// recompute gets the row (the row lock orders them), so a marker or ticket newer than everything
// in the snapshot is kept instead of recomputed. Residual races (they cost waiting time, never
// exclusion): the ticket hint can name a waiter that died, or one that left at the same moment as
// another; a release then wakes only that ticket, and the others' bounded polls take over until
// the next leave recomputes the hint.

// Nobody who has waited longer (smaller ticket) is still queued. :ticket is the caller's ticket, NULL
// before it queued (then any live waiter goes first). Exact: reads {W}.
#define DBLOCK_PG_NO_EARLIER_WAITER                                                              \
  " AND NOT EXISTS (SELECT 1 FROM {W} w WHERE w.name = :name AND w.until_at > now.t"                \
  " AND w.owner_secret <> " DBLOCK_PG_OWNER " AND (:ticket::bigint IS NULL OR w.ticket < :ticket::bigint))"

// A live queue entry of someone other than the caller (:secret).
#define DBLOCK_PG_OTHER_LIVE " FILTER (WHERE w.owner_secret <> " DBLOCK_PG_OWNER " AND w.until_at > clock_timestamp())"
// SET item that recomputes the marker of lease row `row` when the caller (:secret) leaves the queue:
// the latest live expiry and the first live ticket of the others, unless the row holds a value
// newer than every entry in this statement's snapshot (a concurrent join wrote it). One scan of
// {W} (each subquery in a plan has a start-up cost, also when it does not run).
#define DBLOCK_PG_RECOMPUTE(row)                                                                   \
  " (queued_until, queued_ticket) = (SELECT"                                                      \
  " CASE WHEN " row ".queued_until > coalesce(max(w.until_at), '-infinity') THEN " row ".queued_until" \
  " ELSE max(w.until_at)" DBLOCK_PG_OTHER_LIVE " END,"                                            \
  " LEAST(CASE WHEN " row ".queued_ticket > coalesce(max(w.ticket), 0) THEN " row ".queued_ticket END," \
  " min(w.ticket)" DBLOCK_PG_OTHER_LIVE ")"                                                       \
  " FROM {W} w WHERE w.name = :name)"

// The channel a release that names waiter `ticket` notifies. A ticket is the server time of the
// waiter's first attempt in microseconds, times 1024, plus the wake slot (0-1023) of the waiter's
// backend instance; every instance LISTENs on the shared channel (:channel) and on its own
// slot's (:channel || '_' || slot). So a hand-off wakes the one listener whose waiter it names, not every
// instance's (each woken listener is a transaction on the server). Tickets below 2^60 come from
// versions before slots (plain microseconds) and, like "whoever is first" (no ticket), go to the
// shared channel. Two instances that drew the same slot hear each other's wake-ups: a wake-up
// more, never a missed one (the payload names the ticket).
#define DBLOCK_PG_WAKE_CHANNEL(ticket) \
  " CASE WHEN " ticket " >= 1152921504606846976 THEN :channel || '_' || (" ticket " & 1023)::text ELSE :channel END"

#define DBLOCK_PG_LEASE_COLUMNS \
  "(name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals, queued_until, queued_ticket)"

// Exclusive acquire in one round trip, not queued.
// Takes a new name (no row: nobody queued), a free or expired row nobody is queued for, or a row
// this secret holds live (so that an attempt whose reply was lost can be repeated safely). Reads
// only {L}. The NOT EXISTS pre-check (a plain read) refuses a marked row without touching it: ON
// CONFLICT locks the row it refuses, and on a logged table that lock is a WAL record and an fsync
// at commit that the waiter whose turn it is would have to wait out. The DO UPDATE condition stays
// the authoritative check (it sees the row's latest version). nextval runs for every attempt that
// passes the pre-check (a refused one leaves a gap in the fences).
inline constexpr Statement kAcquireExclusive{"acquire_exclusive",
    "INSERT INTO {L} AS l (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)"
    " SELECT :name, " DBLOCK_PG_OWNER ", :holder, 'exclusive', nextval({S}), clock_timestamp(),"
    " clock_timestamp() + :ttl_us::bigint * interval '1 microsecond', 0"
    " WHERE NOT EXISTS (SELECT 1 FROM {L} m WHERE m.name = :name AND m.queued_until > clock_timestamp())"
    " ON CONFLICT (name) DO UPDATE SET owner_secret = EXCLUDED.owner_secret, holder = EXCLUDED.holder,"
    " mode = 'exclusive', fence = EXCLUDED.fence, acquired_at = EXCLUDED.acquired_at,"
    " expires_at = EXCLUDED.expires_at, renewals = 0"
    " WHERE (l.expires_at <= EXCLUDED.acquired_at AND coalesce(l.queued_until, '-infinity') <= EXCLUDED.acquired_at)"
    " OR (l.owner_secret = EXCLUDED.owner_secret AND l.mode = 'exclusive' AND l.expires_at > EXCLUDED.acquired_at)"
    " RETURNING fence, " DBLOCK_PG_US("expires_at") " AS expires_at_us"};

// The same for a queued waiter (:ticket): the queue check is exact (reads {W}); on success
// it leaves the queue and recomputes the row's marker, still in one round trip. The name may have
// no row (woken by a release before the releaser re-created it): the new row is then marked
// from {W} directly.
inline constexpr Statement kAcquireExclusiveQueued{"acquire_exclusive_queued",
    "WITH now AS (SELECT clock_timestamp() AS t),"
    " ins AS (INSERT INTO {L} AS l " DBLOCK_PG_LEASE_COLUMNS
    "  SELECT :name, " DBLOCK_PG_OWNER ", :holder, 'exclusive', nextval({S}), now.t, now.t + :ttl_us::bigint * interval '1 microsecond', 0,"
    "  o.until_at, o.ticket FROM now, (SELECT max(w.until_at)" DBLOCK_PG_OTHER_LIVE " AS until_at,"
    "  min(w.ticket)" DBLOCK_PG_OTHER_LIVE " AS ticket FROM {W} w WHERE w.name = :name) o"
    "  WHERE true" DBLOCK_PG_NO_EARLIER_WAITER
    "  ON CONFLICT (name) DO UPDATE SET owner_secret = EXCLUDED.owner_secret, holder = EXCLUDED.holder,"
    "  mode = 'exclusive', fence = EXCLUDED.fence, acquired_at = EXCLUDED.acquired_at,"
    "  expires_at = EXCLUDED.expires_at, renewals = 0," DBLOCK_PG_RECOMPUTE("l")
    "  WHERE l.expires_at <= EXCLUDED.acquired_at OR l.owner_secret = EXCLUDED.owner_secret"
    "  RETURNING fence, expires_at),"
    " gone AS (DELETE FROM {W} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND EXISTS (SELECT 1 FROM ins))"
    " SELECT fence, " DBLOCK_PG_US("expires_at") " AS expires_at_us FROM ins"};

// Shared acquire: joins live readers or takes a free row, and records the reader, in one
// statement. :ticket NULL: not queued; :permits NULL: not a semaphore. The queue check reads {W} exactly (shared leases are not on the
// uncontended fast path); a queued reader leaves the queue and recomputes the marker. Joins only
// readers granted under the same permits; a semaphore's only while fewer than :permits other readers
// live. That count is exact only after kLockPermitRow in the same transaction: this statement's
// snapshot would otherwise miss a reader committed while it waited for the row.
inline constexpr Statement kAcquireShared{"acquire_shared",
    "WITH now AS (SELECT clock_timestamp() AS t),"
    " row AS (INSERT INTO {L} AS l (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals,"
    "  queued_until, queued_ticket, permits)"
    "  SELECT :name, NULL, NULL, 'shared', nextval({S}), now.t, now.t + :ttl_us::bigint * interval '1 microsecond', 0,"
    "  NULL, NULL, :permits::int FROM now WHERE true" DBLOCK_PG_NO_EARLIER_WAITER
    "  ON CONFLICT (name) DO UPDATE SET owner_secret = NULL, holder = NULL, mode = 'shared', fence = EXCLUDED.fence,"
    "  acquired_at = CASE WHEN l.mode = 'shared' AND l.expires_at > EXCLUDED.acquired_at"
    "    THEN l.acquired_at ELSE EXCLUDED.acquired_at END,"
    "  expires_at = GREATEST(CASE WHEN l.mode = 'shared' THEN l.expires_at ELSE '-infinity' END, EXCLUDED.expires_at),"
    "  renewals = 0, permits = EXCLUDED.permits," DBLOCK_PG_RECOMPUTE("l")
    "  WHERE l.expires_at <= EXCLUDED.acquired_at OR (l.mode = 'shared' AND l.permits IS NOT DISTINCT FROM :permits::int"
    "   AND (:permits::int IS NULL OR (SELECT count(*) FROM {R} r WHERE r.name = :name AND r.expires_at > EXCLUDED.acquired_at"
    "   AND r.owner_secret <> " DBLOCK_PG_OWNER ") < :permits::int))"
    "  RETURNING fence),"
    " reader AS (INSERT INTO {R} (name, owner_secret, holder, fence, acquired_at, expires_at)"
    "  SELECT :name, " DBLOCK_PG_OWNER ", :holder, row.fence, now.t, now.t + :ttl_us::bigint * interval '1 microsecond' FROM row, now"
    "  ON CONFLICT (name, owner_secret) DO UPDATE SET fence = EXCLUDED.fence, expires_at = EXCLUDED.expires_at"
    "  RETURNING fence, expires_at),"
    " gone AS (DELETE FROM {W} WHERE :ticket::bigint IS NOT NULL AND name = :name AND owner_secret = " DBLOCK_PG_OWNER
    "  AND EXISTS (SELECT 1 FROM reader))"
    " SELECT fence, " DBLOCK_PG_US("expires_at") " AS expires_at_us FROM reader"};

#undef DBLOCK_PG_NO_EARLIER_WAITER

// A permit's acquire first locks the name's row for its transaction, creating it free (expired)
// when there is none, so that concurrent permit acquires of a name take turns and each counts the
// readers the earlier ones committed.
inline constexpr Statement kLockPermitRow{"lock_permit_row",
    "INSERT INTO {L} AS l (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)"
    " VALUES (:name, NULL, NULL, 'shared', 0, clock_timestamp(), '-infinity', 0)"
    " ON CONFLICT (name) DO UPDATE SET renewals = l.renewals"};
// The permits of a live shared lease (NULL: plain readers); no row when none is live.
inline constexpr Statement kSharedPermits{"shared_permits",
    "SELECT permits FROM {L} WHERE name = :name AND mode = 'shared' AND expires_at > clock_timestamp()"};

// A waiter's position counts the live waiters ahead of it, but not the entry of the lease's current
// holder: a grantee keeps its queue entry until it releases (see kReleaseExclusiveInPlace), and it
// is not waiting. Counting it would put the next waiter "behind others" (sleeping until a release
// names it) also when the holder's release ran concurrently with that waiter's join and so could
// not see it: nobody would then name it, and it would wait for a poll.
#define DBLOCK_PG_NOT_THE_HOLDER(w)                                                      \
  " AND " w ".owner_secret IS DISTINCT FROM (SELECT h.owner_secret FROM {L} h WHERE h.name = :name)"

// Not acquired: join (or stay in) the queue, mark the name's row (creating a free row if there is
// none), and report the position and the holder's remaining time. A joiner adds only its own
// ticket to the hint (the smaller one wins while the marker is live): the waiters its snapshot
// shows may have left by the time it gets the row (a waiter that just acquired, say), and the
// row is kept right by those who leave. The row is not written (nor locked: the waiter whose turn
// it is may be about to take it) while its marker already covers this waiter, with an earlier
// ticket and at least half a queue entry of life left, and a recompute cannot miss this waiter:
//  * a refresh (:ticket set): the entry predates any recompute's snapshot, with at least two thirds of
//    its life left (entries are refreshed every third), so every recompute counts it;
//  * a first join: only if at least two other live waiters are queued. One of them may be leaving
//    right now with a snapshot that misses this join, but then another keeps the row marked until
//    this waiter's first refresh. With fewer, the join writes the row, and its newer values
//    survive a concurrent recompute (see above).
// Queue entries and markers are bookkeeping, not locks: the commit does not wait for the WAL flush
// (a marker lost in a crash is re-made by the next refresh). The entry also records what a release
// needs to grant the lease to this waiter directly (kReleaseExclusiveInPlace): its holder and TTL
// (NULL: never grant, only wake). A new ticket that another waiter of the name already has fails
// the unique index (23505); the caller joins again, with a later ticket.
// The holder's remaining time is read from the row as the marking wrote it when it did (after
// waiting for a release that held the row, whose commit the statement's snapshot predates and
// whose wake-up could not name this waiter), else from the snapshot.
// :queue_us the entry's life, :ticket NULL on joining, :grant_ttl_us NULL for no grant, :wake_slot
// the wake slot of this backend instance (see DBLOCK_PG_WAKE_CHANNEL).
inline constexpr Statement kQueue{"queue",
    "WITH now AS (SELECT clock_timestamp() AS t),"
    " sc AS (SELECT set_config('synchronous_commit', 'off', true) AS v),"
    " q AS (INSERT INTO {W} (name, owner_secret, ticket, until_at, holder, grant_ttl_us)"
    "  SELECT :name, " DBLOCK_PG_OWNER ", coalesce(:ticket::bigint, " DBLOCK_PG_US("now.t") " * 1024 + :wake_slot::bigint),"
    "         now.t + :queue_us::bigint * interval '1 microsecond', :holder, :grant_ttl_us::bigint FROM now"
    "  ON CONFLICT (name, owner_secret) DO UPDATE SET until_at = EXCLUDED.until_at RETURNING ticket, until_at),"
    " m AS (INSERT INTO {L} AS l " DBLOCK_PG_LEASE_COLUMNS
    "  SELECT :name, NULL, NULL, 'exclusive', 0, now.t, now.t, 0, q.until_at, q.ticket FROM q, now"
    "  WHERE NOT (EXISTS (SELECT 1 FROM {L} c WHERE c.name = :name AND c.queued_ticket <= q.ticket"
    "   AND c.queued_until >= now.t + :queue_us::bigint / 2 * interval '1 microsecond')"
    "   AND (:ticket::bigint IS NOT NULL OR (SELECT count(*) FROM {W} w WHERE w.name = :name"
    "    AND w.owner_secret <> " DBLOCK_PG_OWNER " AND w.until_at > now.t) >= 2))"
    "  ON CONFLICT (name) DO UPDATE SET queued_until = GREATEST(l.queued_until, EXCLUDED.queued_until),"
    "  queued_ticket = CASE WHEN l.queued_until > clock_timestamp() THEN LEAST(l.queued_ticket, EXCLUDED.queued_ticket)"
    "  ELSE EXCLUDED.queued_ticket END"
    "  RETURNING l.expires_at)"
    " SELECT q.ticket,"
    "  (SELECT count(*) FROM {W} w WHERE w.name = :name AND w.until_at > clock_timestamp()"
    "   AND w.owner_secret <> " DBLOCK_PG_OWNER " AND w.ticket < q.ticket" DBLOCK_PG_NOT_THE_HOLDER("w") ") AS ahead,"
    "  " DBLOCK_PG_US("coalesce((SELECT m.expires_at FROM m), (SELECT l.expires_at FROM {L} l WHERE l.name = :name))"
    "   - clock_timestamp()") " AS remaining_us"
    " FROM q, sc"};

// A grant's confirmation (a NOTIFY is a claim anyone who can connect can send): does :secret hold :name
// exclusively and live? Result: fence, expiry in microseconds since the epoch, time left in
// microseconds. A plain read.
inline constexpr Statement kConfirmGrant{"confirm_grant",
    "SELECT fence, " DBLOCK_PG_US("expires_at") " AS expires_at_us,"
    " " DBLOCK_PG_US("expires_at - clock_timestamp()") " AS granted_for_us"
    " FROM {L} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND mode = 'exclusive' AND expires_at > clock_timestamp()"};

// Read-only queue position for a waiter that was woken. Returns
// the number of live waiters ahead and the holder's remaining time (NULL: no row, free; negative:
// a free row).
inline constexpr Statement kQueueStatus{"queue_status",
    "SELECT (SELECT count(*) FROM {W} w WHERE w.name = :name AND w.until_at > clock_timestamp()"
    "  AND w.owner_secret <> " DBLOCK_PG_OWNER " AND w.ticket < :ticket::bigint" DBLOCK_PG_NOT_THE_HOLDER("w") ") AS ahead,"
    " (SELECT " DBLOCK_PG_US("l.expires_at - clock_timestamp()") " FROM {L} l WHERE l.name = :name) AS remaining_us"};


// A waiter gives up: leave the queue and recompute the marker (bookkeeping: no WAL flush wait).
// A release may have granted it the lease meanwhile (kReleaseExclusiveInPlace): the result says
// whether this owner now holds the name live, so that the caller releases it. The row is read as
// the UPDATE leaves it (after waiting for a concurrent grant's commit), not as of the snapshot.
// Result: a row when the name's row was touched; its column: held by :secret.
inline constexpr Statement kLeaveQueue{"leave_queue",
    "WITH sc AS (SELECT set_config('synchronous_commit', 'off', true) AS v),"
    " d AS (DELETE FROM {W} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " RETURNING 1)"
    " UPDATE {L} l SET" DBLOCK_PG_RECOMPUTE("l")
    " FROM sc WHERE l.name = :name AND (EXISTS (SELECT 1 FROM d) OR l.owner_secret = " DBLOCK_PG_OWNER ")"
    " RETURNING l.owner_secret IS NOT DISTINCT FROM " DBLOCK_PG_OWNER " AND l.mode = 'exclusive'"
    " AND l.expires_at > clock_timestamp() AS mine"};

inline constexpr Statement kRenewExclusive{"renew_exclusive",
    "UPDATE {L} SET expires_at = clock_timestamp() + :ttl_us::bigint * interval '1 microsecond', renewals = renewals + 1"
    " WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND mode = 'exclusive' AND expires_at > clock_timestamp()"
    " RETURNING " DBLOCK_PG_US("expires_at") " AS expires_at_us"};
// Keeps leases.expires_at >= every live reader's expiry.
inline constexpr Statement kRenewReader{"renew_reader",
    "WITH r AS (UPDATE {R} SET expires_at = clock_timestamp() + :ttl_us::bigint * interval '1 microsecond',"
    "  renewals = renewals + 1"
    "  WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND expires_at > clock_timestamp() RETURNING expires_at),"
    " l AS (UPDATE {L} SET expires_at = GREATEST(expires_at, (SELECT expires_at FROM r)), renewals = renewals + 1"
    "  WHERE name = :name AND mode = 'shared' AND EXISTS (SELECT 1 FROM r))"
    " SELECT " DBLOCK_PG_US("expires_at") " AS expires_at_us FROM r"};

// Release (compare-and-delete), reading only {L} (see the queue note above): a plain DELETE, because
// any CTE around it (such as re-inserting the row) costs about a tenth of an UNLOGGED release.
// When waiters are queued (the row's marker is live) it wakes the one the ticket hint names, with
// a NOTIFY sent at commit, and reports `queued` so that the caller re-creates the marked row at
// once with kRemarkReleased. The payload is that ticket alone, never the name (any role that can
// connect can LISTEN; NotifyListener maps its own waiters' tickets back to their names); ticket 0
// wakes whoever is first. Its commit does not wait for the
// WAL flush (DBLOCK_PG_NO_FLUSH_WAIT, also in the other releases). Result: live, queued, and the
// flush-wait item (always true).
// A scheduled job's release (AcquireOptions::hold_at_least) while its minimum hold is ahead: the
// row stays until acquired_at + :hold_us, disowned (no secret renews it or writes under it), and
// nobody is woken. A row: released; none: release as usual.
inline constexpr Statement kReleaseHolding{"release_holding",
    "UPDATE {L} SET owner_secret = NULL, expires_at = acquired_at + :hold_us::bigint * interval '1 microsecond'"
    " WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND mode = 'exclusive' AND expires_at > clock_timestamp()"
    " AND acquired_at + :hold_us::bigint * interval '1 microsecond' > clock_timestamp() RETURNING true AS released"};

inline constexpr Statement kReleaseExclusive{"release_exclusive",
    "DELETE FROM {L} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND mode = 'exclusive'"
    " RETURNING expires_at > clock_timestamp() AS was_live, (CASE WHEN queued_until > clock_timestamp()"
    " THEN pg_notify(" DBLOCK_PG_WAKE_CHANNEL("queued_ticket") ", coalesce(queued_ticket, 0)::text) END)::text"
    " IS NOT NULL AS woke," DBLOCK_PG_NO_FLUSH_WAIT " AS no_flush_wait"};

// After a release that found waiters: re-create the free row with the marker, from {W} (exact),
// unless a row exists again (the woken waiter has already taken the name and kept the marker
// itself). Until it commits, an unqueued acquire from elsewhere can take the name ahead of the
// queue (fairness, not exclusion; the releasing manager itself cannot, it runs this first). The
// marker is bookkeeping, not a lock: its commit does not wait for the WAL flush.
// Result: rows written.
inline constexpr Statement kRemarkReleased{"remark_released",
    "WITH sc AS (SELECT set_config('synchronous_commit', 'off', true) AS v),"
    " o AS (SELECT max(w.until_at) AS until_at, min(w.ticket) AS ticket FROM {W} w"
    "  WHERE w.name = :name AND w.until_at > clock_timestamp()),"
    " m AS (INSERT INTO {L} " DBLOCK_PG_LEASE_COLUMNS
    "  SELECT :name, NULL, NULL, 'exclusive', 0, clock_timestamp(), clock_timestamp(), 0, o.until_at, o.ticket"
    "  FROM o, sc WHERE o.until_at IS NOT NULL ON CONFLICT (name) DO NOTHING RETURNING 1)"
    " SELECT count(*) AS written FROM m"};
// Release of a lease that was acquired after queueing (its LeaseKey::tag says so), so
// waiters are probably queued again. One statement hands the lease to the first live waiter in
// ticket order (read from {W}, exact), when that waiter asked for a grant (grant_ttl_us): the row
// gets its owner secret and holder, a new fence, and an expiry of its TTL, but no later than its
// queue entry's (a waiter that died or gave up holds the name no longer than its entry would have
// blocked the queue; a live one renews to its full TTL). The NOTIFY names it and carries the grant
// (payload: ticket, fence, granted microseconds, expiry in microseconds since the epoch, separated
// by chr(31); no name), so the grantee's acquire returns without a statement of its own. The
// grantee's queue entry stays (deleting it here would lock it against the grantee's own queue
// statements, in the opposite order); each holder's release deletes its own, and recomputes the
// row's marker without it (a grantee never ran the queued acquire that would have), so that a
// name nobody waits for any more is not left marked.
// Otherwise (nobody grantable first in line) the row is freed in place and keeps its marker, and
// the NOTIFY wakes the first waiter (ticket; 0: whoever is first, when {W} shows nobody but the
// marker stands), whose queued acquire takes it.
// A grant is an acquisition: its commit waits for the WAL flush; a plain free does not.
// Only a live lease of this owner is released here; no row means "not that" and the caller falls
// back to kReleaseExclusive, which tells expired from not held. A row freed without a live marker
// is an ordinary free row, left to the reaper. Result: one row when released: woke or granted to
// a waiter, granted, and the flush-wait item.
inline constexpr Statement kReleaseExclusiveInPlace{"release_exclusive_in_place",
    "WITH now AS (SELECT clock_timestamp() AS t),"
    " g AS (SELECT w.owner_secret, w.ticket, w.holder,"
    "  CASE WHEN w.grant_ttl_us > 0 THEN LEAST(w.grant_ttl_us, " DBLOCK_PG_US("w.until_at - now.t") ") END AS grant_us"
    "  FROM {W} w, now WHERE w.name = :name AND w.owner_secret <> " DBLOCK_PG_OWNER " AND w.until_at > now.t"
    "  ORDER BY w.ticket LIMIT 1),"
    " u AS (UPDATE {L} l SET owner_secret = gg.owner_secret, holder = gg.holder,"
    "  fence = CASE WHEN gg.owner_secret IS NULL THEN l.fence ELSE nextval({S}) END,"
    "  acquired_at = CASE WHEN gg.owner_secret IS NULL THEN l.acquired_at ELSE now.t END,"
    "  expires_at = now.t + coalesce(gg.grant_us, 0) * interval '1 microsecond', renewals = 0,"
    DBLOCK_PG_RECOMPUTE("l")
    "  FROM now LEFT JOIN (SELECT * FROM g WHERE g.grant_us > 0) gg ON true"
    "  WHERE l.name = :name AND l.owner_secret = " DBLOCK_PG_OWNER " AND l.mode = 'exclusive' AND l.expires_at > now.t"
    "  RETURNING l.fence, l.expires_at, l.queued_until, gg.grant_us),"
    " d AS (DELETE FROM {W} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND EXISTS (SELECT 1 FROM u))"
    " SELECT (CASE WHEN u.grant_us IS NOT NULL THEN pg_notify(" DBLOCK_PG_WAKE_CHANNEL("g.ticket") ","
    "  g.ticket || chr(31) || u.fence"
    "  || chr(31) || u.grant_us || chr(31) || " DBLOCK_PG_US("u.expires_at") ")"
    "  WHEN g.ticket IS NOT NULL OR u.queued_until > now.t"
    "  THEN pg_notify(" DBLOCK_PG_WAKE_CHANNEL("g.ticket") ", coalesce(g.ticket, 0)::text)"
    "  END)::text IS NOT NULL AS woke, u.grant_us IS NOT NULL AS granted,"
    " (CASE WHEN u.grant_us IS NULL THEN set_config('synchronous_commit', 'off', true) END) IS NOT NULL AS no_flush_wait"
    " FROM u CROSS JOIN now LEFT JOIN g ON true"};
// A reader leaves; the row stays (with the expiry of the remaining readers) and keeps its marker.
inline constexpr Statement kReleaseReader{"release_reader",
    "WITH d AS (DELETE FROM {R} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER
    "  RETURNING expires_at > clock_timestamp() AS live, " DBLOCK_PG_NO_FLUSH_WAIT " AS no_flush_wait),"
    " l AS (UPDATE {L} SET expires_at = coalesce((SELECT max(r.expires_at) FROM {R} r WHERE r.name = :name"
    "  AND r.owner_secret <> " DBLOCK_PG_OWNER " AND r.expires_at > clock_timestamp()), clock_timestamp())"
    "  WHERE name = :name AND mode = 'shared' AND EXISTS (SELECT 1 FROM d) RETURNING queued_until, queued_ticket)"
    " SELECT d.live AS was_live, (SELECT count(*) FROM (SELECT pg_notify(" DBLOCK_PG_WAKE_CHANNEL("l.queued_ticket") ","
    "  coalesce(l.queued_ticket, 0)::text)"
    "  FROM l WHERE l.queued_until > clock_timestamp()) n) AS woke, d.no_flush_wait FROM d"};

// Admin eviction: frees the name and bumps its fence; drops its readers; wakes waiters (payload
// '0': every listener's waiters look; no name).
// The same statement records the eviction in {H} (:by, the forcing manager's holder string): the
// holder it evicted (shared: the live readers'), the mode and the fence before and after.
inline constexpr Statement kForceRelease{"force_release",
    "WITH old AS (SELECT l.name, l.mode, l.fence, CASE WHEN l.mode = 'exclusive' THEN l.holder ELSE"
    "   (SELECT string_agg(r.holder, ',' ORDER BY r.holder) FROM {R} r"
    "    WHERE r.name = :name AND r.expires_at > clock_timestamp()) END AS holder"
    "  FROM {L} l WHERE l.name = :name AND l.expires_at > clock_timestamp() FOR UPDATE),"
    " u AS (UPDATE {L} l SET owner_secret = NULL, holder = NULL, expires_at = clock_timestamp(), fence = nextval({S})"
    "  FROM old WHERE l.name = old.name RETURNING l.name, l.fence),"
    " r AS (DELETE FROM {R} WHERE name = :name AND EXISTS (SELECT 1 FROM u)),"
    " a AS (INSERT INTO {H} (name, by_holder, holder, mode, old_fence, new_fence)"
    "  SELECT u.name, :by, old.holder, old.mode, old.fence, u.fence FROM u, old)"
    " SELECT count(*) AS evicted FROM u, LATERAL (SELECT pg_notify(:channel, '0')) n"};

// Recorded force-releases, newest first. :name NULL: all.
inline constexpr Statement kForceReleaseHistory{"force_release_history",
    "SELECT name, " DBLOCK_PG_US("at") " AS at_us, by_holder, by_account, holder, mode, old_fence, new_fence FROM {H}"
    " WHERE :name::text IS NULL OR name = :name ORDER BY id DESC LIMIT :limit::bigint"};

// :name NULL: all.
inline constexpr Statement kList{"list",
    "SELECT l.name, l.mode, l.holder, l.fence, " DBLOCK_PG_US("l.acquired_at") " AS acquired_at_us,"
    " " DBLOCK_PG_US("l.expires_at") " AS expires_at_us,"
    " " DBLOCK_PG_US("l.expires_at - clock_timestamp()") " AS expires_in_us, l.renewals,"
    " (SELECT count(*) FROM {R} r WHERE r.name = l.name AND r.expires_at > clock_timestamp()) AS readers,"
    " (SELECT string_agg(r.holder, ',') FROM {R} r WHERE r.name = l.name AND r.expires_at > clock_timestamp())"
    " AS reader_holders,"
    " l.permits FROM {L} l WHERE l.expires_at > clock_timestamp() AND (:name::text IS NULL OR l.name = :name) ORDER BY l.name"};

// Live waiters per name (list's waiter counts; a role without SELECT on {W} gets none). :name
// or NULL for all.
inline constexpr Statement kListWaiters{"list_waiters",
    "SELECT name, count(*) AS waiters FROM {W} WHERE until_at > clock_timestamp() AND (:name::text IS NULL OR name = :name)"
    " GROUP BY name"};
// Microseconds since the oldest row the reaper would delete expired (NULL: none). Released rows
// (expires_at -infinity) carry no time and are left out.
inline constexpr Statement kOldestUnreaped{"oldest_unreaped",
    "SELECT " DBLOCK_PG_US("clock_timestamp() - min(e)") " AS oldest_us FROM ("
    "SELECT min(expires_at) AS e FROM {L} WHERE expires_at <= clock_timestamp() AND isfinite(expires_at)"
    " AND coalesce(queued_until, '-infinity') <= clock_timestamp()"
    " UNION ALL SELECT min(expires_at) FROM {R} WHERE expires_at <= clock_timestamp()) m"};

// Reaper: at most :batch expired rows nobody is queued for, skipping rows another transaction is
// taking over (never waits on them). A row with live waiters stays (see the queue note above).
// Keyset order: only rows after the cursor (:after_expiry_us, expires_at in microseconds since the epoch, NULL
// for '-infinity', the expiry freed rows got from early versions, and to start; :after_name, '' to
// start), in (expires_at, name) order, so a batch reads its own rows from the expiry index and not
// the entries of rows earlier batches deleted. Rows a pass leaves behind (locked or queued for)
// are expired already and are found by the next pass; rows that expire later get an expiry after
// the cursor. Result: the last deleted row in key order, with the count of deleted rows: count,
// expires_at in microseconds (NULL: '-infinity'), name. No row: nothing deleted.
//
// Planning stays cheap however many rows earlier batches deleted. Their index entries remain
// until vacuum, and a custom plan would estimate the cursor comparison, and a join on name, from
// the indexes' actual lowest values, which the planner finds by walking those dead entries
// (docs/backends/postgresql.md, "Reaper planning"). So the cursor values are sub-selects (run-time values the planner does not estimate), and the rows are
// deleted by the ctid the locking sub-select returns (a TID scan, no join). The ctid is stable: the
// row stays locked by this statement until it commits.
inline constexpr Statement kReapLeases{"reap_leases",
    "WITH d AS (DELETE FROM {L} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {L}"
    "  WHERE (expires_at, name) > ((SELECT coalesce(timestamptz 'epoch' + :after_expiry_us::bigint * interval '1 microsecond',"
    "  '-infinity')), (SELECT :after_name::text)) AND expires_at <= clock_timestamp()"
    "  AND coalesce(queued_until, '-infinity') <= clock_timestamp()"
    "  ORDER BY expires_at, name LIMIT :batch FOR UPDATE SKIP LOCKED)) RETURNING expires_at, name)"
    " SELECT count(*) OVER () AS deleted, CASE WHEN isfinite(expires_at) THEN " DBLOCK_PG_US("expires_at") " END"
    " AS expires_at_us, name"
    " FROM d ORDER BY expires_at DESC, name DESC LIMIT 1"};
inline constexpr Statement kReapReaders{"reap_readers",
    "WITH d AS (DELETE FROM {R} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {R}"
    "  WHERE expires_at <= clock_timestamp() LIMIT :batch FOR UPDATE SKIP LOCKED)) RETURNING 1)"
    " SELECT count(*) AS deleted FROM d"};
inline constexpr Statement kReapWaiters{"reap_waiters",
    "WITH d AS (DELETE FROM {W} WHERE ctid = ANY(ARRAY(SELECT ctid FROM {W}"
    "  WHERE until_at <= clock_timestamp() LIMIT :batch FOR UPDATE SKIP LOCKED)) RETURNING 1)"
    " SELECT count(*) AS deleted FROM d"};

// Guard, inside the caller's transaction: FOR SHARE keeps the row from being taken over (that is
// an UPDATE) until the transaction ends, so a commit after a successful check happens while the
// lease is still ours.
inline constexpr Statement kGuardExclusive{"guard_exclusive",
    "SELECT 1 FROM {L} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND fence = :fence::bigint AND mode = 'exclusive'"
    " AND expires_at > clock_timestamp() FOR SHARE"};
inline constexpr Statement kGuardReader{"guard_reader",
    "SELECT 1 FROM {R} WHERE name = :name AND owner_secret = " DBLOCK_PG_OWNER " AND fence = :fence::bigint"
    " AND expires_at > clock_timestamp() FOR SHARE"};

// Connection set-up: refuse a standby or a server whose transactions are read-only by default
// (default_transaction_read_only, a demoted primary), remember the backend pid (pooler detection).
inline constexpr Statement kHello{"hello",
    "SELECT pg_is_in_recovery() AS in_recovery, pg_backend_pid() AS pid,"
    " current_setting('transaction_read_only') = 'on' AS read_only"};

// Connection set-up on a writable server, before the connection's first statement: floors the
// fence sequence above the server's clock in microseconds and above :carried, the highest fence this
// process was issued (dblock/service/sql/carried_fence.h): a promoted standby that lacks the old primary's
// last fences issues none of them again. setval only moves the sequence up here, and by 2^20
// more than the floor: a concurrent nextval between this statement's nextval and its setval (a
// few at most) stays below the value set, so no fence is issued twice. Result: the sequence's
// value after it.
inline constexpr Statement kFloorFences{"floor_fences",
    "SELECT CASE WHEN f.floor > f.n THEN setval({S}, f.floor + 1048576) ELSE f.n END FROM"
    " (SELECT nextval({S}) AS n, greatest(" DBLOCK_PG_US("clock_timestamp()") ", :carried::bigint) AS floor OFFSET 0) f"};

// Migrations: the advisory transaction lock serialises concurrent first uses. Its two-key form
// (migration_lock_key: :class_id, :object_id) cannot meet a lock name's one-key form.
inline constexpr Statement kMigrationLock{"migration_lock", "SELECT pg_advisory_xact_lock(:class_id::int, :object_id::int)"};
// Who holds the migration lock (:class_id, :object_id), for the error when it did not come free in time: any
// role that can connect can take an advisory lock. pg_stat_activity shows another role's
// session's pid and role to everyone.
inline constexpr Statement kMigrationLockHolder{"migration_lock_holder",
    "SELECT a.pid, a.usename, coalesce(a.application_name, '') AS application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid"
    " WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2"
    " AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())"
    " AND l.classid::bigint = :class_id::bigint AND l.objid::bigint = :object_id::bigint LIMIT 1"};
// Whether the schema-version table is on the search path: read from pg_class under the
// statement's snapshot, so that a table another session committed while this transaction waited
// for the migration lock is seen (to_regclass() answers from the backend's catalog cache, which
// such a commit does not refresh). `table` is the name as pg_class stores it (the prefix is
// lowercase [a-z0-9_]); schemas are compared by name, whatever their spelling.
inline constexpr Statement kSchemaVersionExists{
    "schema_version_exists",
    "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relname = :table AND n.nspname = ANY (current_schemas(false))) AS present"};
// The migration transaction reads what other sessions committed while it waited for the lock:
// READ COMMITTED whatever the server's default_transaction_isolation.
inline constexpr Statement kReadCommitted{"read_committed", "SET TRANSACTION ISOLATION LEVEL READ COMMITTED"};
inline constexpr Statement kSchemaVersion{"schema_version", "SELECT coalesce(max(version), 0) AS version FROM {V}"};
inline constexpr Statement kRecordMigration{"record_migration", "INSERT INTO {V} (version, name) VALUES (:version, :migration)"};
// UNLOGGED switch (opt-in): the lease tables only; the fence sequence stays logged. :table a regclass.
inline constexpr Statement kIsUnlogged{"is_unlogged", "SELECT relpersistence = 'u' AS unlogged FROM pg_class WHERE oid = :table::regclass"};
// {T}: a validated, quoted table name, filled in per call (DDL cannot take parameters).
inline constexpr Statement kSetUnlogged{"set_unlogged", "ALTER TABLE {T} SET UNLOGGED"};
inline constexpr Statement kSetLogged{"set_logged", "ALTER TABLE {T} SET LOGGED"};

// Session (advisory) locks. Every statement names the server session it must run on (:pid, the
// pid recorded when the connection was opened) and takes or drops the lock only there: behind a
// transaction pooler a statement can land on another client's server session, and a lock taken
// there would be stuck on a pooled session and held by nobody. The pid comes back so the caller
// can refuse loudly. :lock_timeout '0' waits forever.
inline constexpr Statement kTrySessionExclusive{"try_session_exclusive",
    "SELECT CASE WHEN pg_backend_pid() = :pid::int THEN pg_try_advisory_lock(:key::bigint) END AS got,"
    " pg_backend_pid() AS pid"};
inline constexpr Statement kTrySessionShared{"try_session_shared",
    "SELECT CASE WHEN pg_backend_pid() = :pid::int THEN pg_try_advisory_lock_shared(:key::bigint) END AS got,"
    " pg_backend_pid() AS pid"};
inline constexpr Statement kWaitSessionExclusive{"wait_session_exclusive",
    "SELECT CASE WHEN pg_backend_pid() = :pid::int THEN set_config('lock_timeout', :lock_timeout, false) END,"
    " CASE WHEN pg_backend_pid() = :pid::int THEN (SELECT 1 FROM (SELECT pg_advisory_lock(:key::bigint)) l) END,"
    " pg_backend_pid() = :pid::int AS on_session, pg_backend_pid() AS pid"};
inline constexpr Statement kWaitSessionShared{"wait_session_shared",
    "SELECT CASE WHEN pg_backend_pid() = :pid::int THEN set_config('lock_timeout', :lock_timeout, false) END,"
    " CASE WHEN pg_backend_pid() = :pid::int THEN (SELECT 1 FROM (SELECT pg_advisory_lock_shared(:key::bigint)) l) END,"
    " pg_backend_pid() = :pid::int AS on_session, pg_backend_pid() AS pid"};
inline constexpr Statement kUnlockSessionExclusive{"unlock_session_exclusive",
    "SELECT CASE WHEN pg_backend_pid() = :pid::int THEN pg_advisory_unlock(:key::bigint) END AS released,"
    " pg_backend_pid() AS pid"};
inline constexpr Statement kUnlockSessionShared{"unlock_session_shared",
    "SELECT CASE WHEN pg_backend_pid() = :pid::int THEN pg_advisory_unlock_shared(:key::bigint) END AS released,"
    " pg_backend_pid() AS pid"};
// :mode 'ExclusiveLock' or 'ShareLock'. Does this session hold it?
inline constexpr Statement kVerifySession{"verify_session",
    "SELECT count(*) > 0 AS held FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted"
    " AND mode = :mode AND ((classid::bigint << 32) | objid::bigint) = :key::bigint AND objsubid = 1"};

// Bounds lock waits for the rest of the current transaction. :lock_timeout "200ms", "0".
inline constexpr Statement kSetLocalLockTimeout{"set_local_lock_timeout", "SELECT set_config('lock_timeout', :lock_timeout, true)"};

// Transaction-level advisory locks.
inline constexpr Statement kXactTry{"xact_try", "SELECT pg_try_advisory_xact_lock(:key::bigint) AS got"};
inline constexpr Statement kXactWait{"xact_wait",
    "SELECT set_config('lock_timeout', :lock_timeout, true), pg_advisory_xact_lock(:key::bigint), true AS got"};

// Transaction-level advisory locks in the application's own transaction (interop.h). The
// waiting forms run after kSetLocalLockTimeout.
inline constexpr Statement kXactTryShared{"xact_try_shared", "SELECT pg_try_advisory_xact_lock_shared(:key::bigint) AS got"};
inline constexpr Statement kXactLock{"xact_lock", "SELECT pg_advisory_xact_lock(:key::bigint)"};
inline constexpr Statement kXactLockShared{"xact_lock_shared", "SELECT pg_advisory_xact_lock_shared(:key::bigint)"};

// Pooler detection on a new session-lock connection: the client port the server sees (NULL on a
// Unix socket), and the server session's pid, read on two connections while a helper transaction
// holds one server session (it ends itself after 2 s idle, so a pool of one cannot deadlock).
inline constexpr Statement kClientPort{"client_port", "SELECT inet_client_port() AS port"};
inline constexpr Statement kBackendPid{"backend_pid", "SELECT pg_backend_pid() AS pid"};
inline constexpr Statement kShortIdleTimeout{"short_idle_timeout",
    "SET LOCAL idle_in_transaction_session_timeout = '2s'"};

// Prepared by name on every connection (libpqxx prepares a statement on its first use).
// Session and transaction locks are prepared like everything else: parsing and planning them on
// every call cost a third of an advisory lock/unlock pair.
inline constexpr const Statement* kPrepared[] = {
    &kAcquireExclusive, &kAcquireExclusiveQueued, &kAcquireShared, &kLockPermitRow, &kSharedPermits, &kQueue, &kLeaveQueue,
    &kRenewExclusive, &kRenewReader, &kReleaseHolding, &kReleaseExclusive, &kRemarkReleased, &kReleaseExclusiveInPlace,
    &kReleaseReader, &kForceRelease, &kForceReleaseHistory, &kList, &kListWaiters, &kOldestUnreaped, &kReapLeases, &kReapReaders, &kReapWaiters, &kQueueStatus, &kConfirmGrant,
    &kTrySessionExclusive, &kTrySessionShared, &kWaitSessionExclusive, &kWaitSessionShared,
    &kUnlockSessionExclusive, &kUnlockSessionShared, &kVerifySession,
};
// Run as text (rendered), mostly inside transactions dblock opens.
inline constexpr const Statement* kAdHoc[] = {
    &kGuardExclusive, &kGuardReader, &kHello, &kFloorFences, &kMigrationLock, &kMigrationLockHolder, &kReadCommitted, &kSchemaVersionExists, &kSchemaVersion,
    &kRecordMigration, &kIsUnlogged, &kSetUnlogged, &kSetLogged, &kSetLocalLockTimeout, &kXactTry, &kXactWait,
    &kXactTryShared, &kXactLock, &kXactLockShared, &kClientPort, &kBackendPid, &kShortIdleTimeout,
};

#undef DBLOCK_PG_NOT_THE_HOLDER
#undef DBLOCK_PG_LEASE_COLUMNS
#undef DBLOCK_PG_WAKE_CHANNEL
#undef DBLOCK_PG_RECOMPUTE
#undef DBLOCK_PG_OTHER_LIVE
#undef DBLOCK_PG_NO_FLUSH_WAIT
#undef DBLOCK_PG_OWNER
#undef DBLOCK_PG_US

}  // namespace dblock::postgresql::sql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_H_
