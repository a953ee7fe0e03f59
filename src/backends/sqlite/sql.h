// The SQLite dialect of the lease statements. "{L}", "{R}" and "{F}" stand for the quoted leases,
// readers and fence-counter tables (prefix validated, then quoted); "{N}" for the current time in
// microseconds since the Unix epoch on SQLite's clock. SQLite evaluates 'now' once per statement,
// so every {N} in one statement is the same instant.
//
// Parameters are numbered (?1, ?2, ...) and always bound, never spliced.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_SQL_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_SQL_H_

namespace dblock::sqlite::sql {

inline constexpr const char* kNow = "CAST((julianday('now') - 2440587.5) * 86400000000.0 AS INTEGER)";

// ?1 name, ?2 secret, ?3 holder, ?4 ttl_us. One statement: the fence comes from the counter row
// and the trigger writes it back. Takes over an expired row; refuses a live or reserved one.
inline constexpr const char* kAcquireExclusive =
    "INSERT INTO {L} AS L (name, owner_secret, holder, mode, fence, acquired_at_us, expires_at_us,"
    " renewals, next_waiter, next_waiter_until_us)"
    " SELECT ?1, ?2, ?3, 'exclusive', value + 1, {N}, {N} + ?4, 0, NULL, 0 FROM {F} WHERE id = 1"
    " ON CONFLICT (name) DO UPDATE SET owner_secret = excluded.owner_secret, holder = excluded.holder,"
    " mode = 'exclusive', fence = excluded.fence, acquired_at_us = excluded.acquired_at_us,"
    " expires_at_us = excluded.expires_at_us, renewals = 0, next_waiter = NULL, next_waiter_until_us = 0"
    " WHERE L.expires_at_us <= excluded.acquired_at_us"
    " AND (L.next_waiter IS NULL OR L.next_waiter = excluded.owner_secret"
    " OR L.next_waiter_until_us <= excluded.acquired_at_us)"
    " RETURNING fence, expires_at_us";

// Shared: joins live readers or takes a free row. ?1 name, ?2 secret (only for the reservation
// check), ?4 ttl_us. Followed by kInsertReader in the same transaction.
inline constexpr const char* kAcquireSharedRow =
    "INSERT INTO {L} AS L (name, owner_secret, holder, mode, fence, acquired_at_us, expires_at_us,"
    " renewals, next_waiter, next_waiter_until_us)"
    " SELECT ?1, NULL, NULL, 'shared', value + 1, {N}, {N} + ?4, 0, NULL, 0 FROM {F} WHERE id = 1"
    " ON CONFLICT (name) DO UPDATE SET owner_secret = NULL, holder = NULL, mode = 'shared',"
    " fence = excluded.fence,"
    " acquired_at_us = CASE WHEN L.mode = 'shared' AND L.expires_at_us > excluded.acquired_at_us"
    "   THEN L.acquired_at_us ELSE excluded.acquired_at_us END,"
    " expires_at_us = max(CASE WHEN L.mode = 'shared' THEN L.expires_at_us ELSE 0 END, excluded.expires_at_us),"
    " renewals = 0, next_waiter = NULL, next_waiter_until_us = 0"
    " WHERE (L.expires_at_us <= excluded.acquired_at_us OR L.mode = 'shared')"
    " AND (L.next_waiter IS NULL OR L.next_waiter = ?2"
    " OR L.next_waiter_until_us <= excluded.acquired_at_us)"
    " RETURNING fence, expires_at_us";

// ?1 name, ?2 secret, ?3 holder, ?4 ttl_us, ?5 fence.
inline constexpr const char* kInsertReader =
    "INSERT OR REPLACE INTO {R} (name, owner_secret, holder, fence, acquired_at_us, expires_at_us, renewals)"
    " VALUES (?1, ?2, ?3, ?5, {N}, {N} + ?4, 0) RETURNING expires_at_us";

// Not acquired: take (or refresh) the hand-off reservation if nobody else has a live one, and
// report the holder's remaining time. ?1 name, ?2 secret, ?3 reservation ttl_us.
inline constexpr const char* kQueue =
    "UPDATE {L} SET"
    " next_waiter = CASE WHEN next_waiter IS NULL OR next_waiter = ?2 OR next_waiter_until_us <= {N}"
    "   THEN ?2 ELSE next_waiter END,"
    " next_waiter_until_us = CASE WHEN next_waiter IS NULL OR next_waiter = ?2 OR next_waiter_until_us <= {N}"
    "   THEN {N} + ?3 ELSE next_waiter_until_us END"
    " WHERE name = ?1 RETURNING expires_at_us - {N}";

// ?1 name. Holder's remaining time without queueing.
inline constexpr const char* kRemaining = "SELECT expires_at_us - {N} FROM {L} WHERE name = ?1";

// ?1 name, ?2 secret.
inline constexpr const char* kAbandonQueue =
    "UPDATE {L} SET next_waiter = NULL, next_waiter_until_us = 0 WHERE name = ?1 AND next_waiter = ?2";

// ?1 name, ?2 secret, ?3 ttl_us.
inline constexpr const char* kRenewExclusive =
    "UPDATE {L} SET expires_at_us = {N} + ?3, renewals = renewals + 1"
    " WHERE name = ?1 AND owner_secret = ?2 AND mode = 'exclusive' AND expires_at_us > {N}"
    " RETURNING expires_at_us";
inline constexpr const char* kRenewReader =
    "UPDATE {R} SET expires_at_us = {N} + ?3, renewals = renewals + 1"
    " WHERE name = ?1 AND owner_secret = ?2 AND expires_at_us > {N} RETURNING expires_at_us";
// ?1 name, ?2 the reader's new expiry. Keeps leases.expires_at_us >= every live reader's expiry.
inline constexpr const char* kExtendSharedRow =
    "UPDATE {L} SET expires_at_us = max(expires_at_us, ?2), renewals = renewals + 1"
    " WHERE name = ?1 AND mode = 'shared'";

// Release (compare-and-delete). Without a waiting reservation the row goes; with one it stays,
// freed, so the reserved waiter gets it next. ?1 name, ?2 secret.
inline constexpr const char* kReleaseDelete =
    "DELETE FROM {L} WHERE name = ?1 AND owner_secret = ?2 AND mode = 'exclusive'"
    " AND (next_waiter IS NULL OR next_waiter_until_us <= {N}) RETURNING expires_at_us > {N}";
inline constexpr const char* kReleaseFree =
    "UPDATE {L} SET owner_secret = NULL, holder = NULL, expires_at_us = 0"
    " WHERE name = ?1 AND owner_secret = ?2 AND mode = 'exclusive' AND expires_at_us > {N}";
inline constexpr const char* kReleaseReader =
    "DELETE FROM {R} WHERE name = ?1 AND owner_secret = ?2 RETURNING expires_at_us > {N}";
// ?1 name. Shrinks the shared row's expiry to the remaining live readers (0 = free).
inline constexpr const char* kShrinkSharedRow =
    "UPDATE {L} SET expires_at_us = coalesce("
    " (SELECT max(expires_at_us) FROM {R} WHERE name = ?1 AND expires_at_us > {N}), 0)"
    " WHERE name = ?1 AND mode = 'shared'";

// Admin eviction: frees the row and bumps its fence. ?1 name.
inline constexpr const char* kForceRelease =
    "UPDATE {L} SET owner_secret = NULL, holder = NULL, expires_at_us = 0,"
    " fence = (SELECT value + 1 FROM {F} WHERE id = 1)"
    " WHERE name = ?1 AND expires_at_us > {N}";
inline constexpr const char* kForceReleaseReaders = "DELETE FROM {R} WHERE name = ?1";

// ?1 name or NULL for all.
inline constexpr const char* kList =
    "SELECT name, mode, holder, fence, acquired_at_us, expires_at_us, expires_at_us - {N}, renewals,"
    " (SELECT count(*) FROM {R} AS R WHERE R.name = L.name AND R.expires_at_us > {N}),"
    " (SELECT group_concat(holder, ',') FROM {R} AS R WHERE R.name = L.name AND R.expires_at_us > {N})"
    " FROM {L} AS L WHERE expires_at_us > {N} AND (?1 IS NULL OR name = ?1) ORDER BY name";

// ?1 batch. Deletes only rows whose lease and reservation have both expired.
inline constexpr const char* kReapLeases =
    "DELETE FROM {L} WHERE name IN (SELECT name FROM {L} WHERE expires_at_us <= {N}"
    " AND next_waiter_until_us <= {N} LIMIT ?1)";
inline constexpr const char* kReapReaders =
    "DELETE FROM {R} WHERE (name, owner_secret) IN"
    " (SELECT name, owner_secret FROM {R} WHERE expires_at_us <= {N} LIMIT ?1)";

// Guard checks, inside the caller's BEGIN IMMEDIATE transaction. ?1 name, ?2 secret, ?3 fence.
inline constexpr const char* kGuardExclusive =
    "SELECT 1 FROM {L} WHERE name = ?1 AND owner_secret = ?2 AND fence = ?3 AND mode = 'exclusive'"
    " AND expires_at_us > {N}";
inline constexpr const char* kGuardReader =
    "SELECT 1 FROM {R} WHERE name = ?1 AND owner_secret = ?2 AND fence = ?3 AND expires_at_us > {N}";

inline constexpr const char* kSchemaVersionTableExists =
    "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1";
inline constexpr const char* kSchemaVersion = "SELECT coalesce(max(version), 0) FROM {V}";
inline constexpr const char* kRecordMigration =
    "INSERT INTO {V} (version, name, applied_at_us) VALUES (?1, ?2, {N})";


}  // namespace dblock::sqlite::sql

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_SQL_H_
