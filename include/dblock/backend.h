// dblock/backend.h — the one interface every storage backend implements.
//
// Application code rarely needs this header: it is the seam between the backend-neutral core
// (lease bookkeeping, renewal, reaping, waiting) and a driver (SQLite, PostgreSQL, ...). It is
// public so that a custom backend can be plugged into LockManager.
//
// Contract for implementers:
//  * Every method may be called concurrently from several threads (user threads, the renewal
//    thread, the reaper thread). A backend synchronises its own connections.
//  * Times that decide ownership (expiry) are computed on the *backend's* clock, inside the
//    statement that changes the row. The core never sends its own wall-clock time.
//  * Driver exceptions never escape: they are translated to the dblock::Error tree (errors.h).
//    A state-changing call whose outcome is unknown throws InDoubtError or ConnectionError.
//  * Required operations are pure virtual; optional ones default to throwing UnsupportedError and
//    are announced by capabilities().
#ifndef DBLOCK_BACKEND_H_
#define DBLOCK_BACKEND_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "dblock/options.h"

namespace dblock {

// 128 bits from the operating system's CSPRNG, one per acquisition. Proves ownership to the
// backend; never logged or shown by list/inspect.
struct OwnerSecret {
  std::array<std::uint8_t, 16> bytes{};

  // Reads getrandom(2). Throws Error if the OS generator fails.
  static OwnerSecret generate();
  std::string hex() const;  // 32 lowercase hex digits
  friend bool operator==(const OwnerSecret&, const OwnerSecret&) = default;
};

// What list()/inspect() report about one lock name. Times are on the backend's clock.
struct LeaseInfo {
  std::string name;
  LockMode mode = LockMode::kExclusive;
  std::string holder;                 // exclusive holder, or readers' holders joined by ','
  std::int64_t fence = 0;             // exclusive: the holder's fence; shared: the newest reader's
  std::int64_t acquired_at_us = 0;    // backend clock, microseconds since the Unix epoch
  std::int64_t expires_at_us = 0;     // backend clock, microseconds since the Unix epoch
  std::int64_t expires_in_us = 0;     // expires_at_us minus the backend's "now" when listed
  std::int64_t renewals = 0;
  int holders = 1;                    // number of readers for shared leases
};

struct Capabilities {
  bool shared_leases = false;
  bool notifications = false;       // backend pushes release events (LISTEN/NOTIFY, pub/sub, ...)
  bool session_locks = false;       // locks that die with the connection
  bool transaction_locks = false;   // run_in_transaction_lock
  bool row_locks = false;           // SELECT ... FOR UPDATE helpers
  bool optimistic = false;          // compare_and_set on a version column
  bool guard = false;               // guarded writes inside the application's transaction
};

// A value bound to a statement parameter or read from a result column.
using Value = std::variant<std::monostate, std::int64_t, double, std::string>;

// A transaction opened by the backend on the caller's behalf (run_in_transaction_lock). Valid only
// inside the callback; not thread-safe. Statements are always prepared, `?` marks parameters.
class Transaction {
 public:
  virtual ~Transaction() = default;
  // Runs one statement; returns the number of rows changed.
  virtual std::int64_t execute(std::string_view sql, const std::vector<Value>& params = {}) = 0;
  // Runs one query; returns all rows.
  virtual std::vector<std::vector<Value>> query(std::string_view sql,
                                                const std::vector<Value>& params = {}) = 0;
};

// One optimistic compare-and-set: UPDATE table SET set..., version = version + 1
//                                   WHERE id_column = id AND version_column = expected_version.
// Table and column names are validated as identifiers and quoted.
struct VersionedUpdate {
  std::string table;
  std::string id_column = "id";
  Value id;
  std::string version_column = "version";
  std::int64_t expected_version = 0;
  std::vector<std::pair<std::string, Value>> set;
};

// How a row lock waits for rows another transaction has locked.
enum class RowLockWait {
  kWait,        // block, up to RowLockRequest::wait_timeout (0: the server's default)
  kNoWait,      // FOR UPDATE NOWAIT: fail at once (with_locked_rows returns false)
  kSkipLocked,  // FOR UPDATE SKIP LOCKED: return only the rows nobody has locked
};

// SELECT <columns> FROM table WHERE key_column IN (keys...) FOR UPDATE|FOR SHARE [NOWAIT|SKIP LOCKED]
// on an application table. Table and column names are validated as identifiers and quoted.
struct RowLockRequest {
  std::string table;
  std::string key_column = "id";
  std::vector<Value> keys;                  // at least one
  std::vector<std::string> columns;         // empty: all columns (*)
  bool shared = false;                      // FOR SHARE instead of FOR UPDATE
  RowLockWait wait = RowLockWait::kWait;
  std::chrono::milliseconds wait_timeout{0};  // kWait only; 0 = server default
  std::size_t limit = 0;                    // 0: no LIMIT (useful with kSkipLocked for job queues)
};

// A lock held by one backend session (connection) — PostgreSQL pg_advisory_lock, MySQL GET_LOCK.
// It lives exactly as long as that session: if the connection dies, the lock is gone. Owned by the
// core's SessionLock; used by one thread at a time (the core serialises calls).
class SessionLockHandle {
 public:
  virtual ~SessionLockHandle() = default;  // releases if still held, best effort; never throws
  // One round trip: does the session still hold the lock? False when the connection died or was
  // swapped (a pooler in transaction mode). Never throws.
  virtual bool verify() noexcept = 0;
  // True if the backend confirmed the release, false if the session no longer held the lock.
  // Throws InDoubtError/ConnectionError when the outcome is unknown.
  virtual bool release() = 0;
  // The backend's key for the name (PostgreSQL: the 64-bit advisory key; MySQL: 0).
  virtual std::int64_t key() const = 0;
};

struct AcquireRequest {
  std::string_view name;
  LockMode mode = LockMode::kExclusive;
  std::chrono::milliseconds ttl{0};
  const OwnerSecret* secret = nullptr;
  std::string_view holder;
  // When true and the lock is busy, the backend queues this secret as a waiter so that hand-offs
  // go to the longest waiter rather than to whoever polls first (a releasing holder cannot
  // immediately take the lock back while others wait). A queue entry lives for queue_ttl unless
  // refreshed by the next attempt; a dead waiter therefore stops blocking others on its own.
  // With queue = true a backend may skip the attempt and only queue when it knows the attempt
  // would be refused (PostgreSQL: right after its own release of the name woke a queued waiter);
  // the caller attempts again as after any refusal.
  bool queue = false;
  std::chrono::milliseconds queue_ttl{1'000};
  // The ticket the backend returned on the first queued attempt, 0 before that.
  std::int64_t queue_ticket = 0;
};

struct AcquireResult {
  bool acquired = false;
  std::int64_t fence = 0;          // valid when acquired
  std::int64_t expires_at_us = 0;  // backend clock; valid when acquired
  // When not acquired: how long until the current hold expires on the backend's clock, or -1 when
  // unknown. The first waiter in line never sleeps past it, so an abandoned lease is taken over
  // promptly (with notifications, waiters behind others may: only the first takes over).
  std::chrono::milliseconds holder_remaining{-1};
  // When not acquired and queued: the caller's ticket, and how many live waiters are ahead of it
  // (0: next in line), -1 when the backend does not queue.
  std::int64_t queue_ticket = 0;
  int queue_position = -1;
};

struct RenewResult {
  bool renewed = false;            // false: the backend no longer has this owner's lease
  std::int64_t expires_at_us = 0;  // backend clock
};

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string_view name() const = 0;
  virtual Capabilities capabilities() const = 0;

  // Applies pending migrations under the backend's migration lock (create=true), or only checks
  // that the schema is present and not newer than this library (create=false). Throws SchemaError.
  virtual void migrate(bool create) = 0;
  // Highest applied migration number, 0 when none.
  virtual int schema_version() = 0;

  // One attempt; never blocks on the lock itself (it may block briefly on the database).
  virtual AcquireResult try_acquire(const AcquireRequest& request) = 0;
  // Extends the lease to now + ttl (backend clock) if this owner still holds it unexpired.
  virtual RenewResult renew(std::string_view name, LockMode mode, const OwnerSecret& secret,
                            std::chrono::milliseconds ttl) = 0;
  // What the manager knows about contention when it releases. A lease that was acquired only
  // after queueing probably has waiters again; a backend may use this to choose which statement
  // to try first, never for correctness.
  enum class ReleaseHint { kNone, kAcquiredAfterQueueing };

  // Compare-and-delete: returns true if this owner's lease was released, false if it was not
  // held by this owner any more (expired, taken over, force-released). Throws InDoubtError when
  // the outcome is unknown.
  virtual bool release(std::string_view name, LockMode mode, const OwnerSecret& secret, ReleaseHint hint) = 0;
  bool release(std::string_view name, LockMode mode, const OwnerSecret& secret) {
    return release(name, mode, secret, ReleaseHint::kNone);
  }
  // Leaves the queue joined with AcquireRequest::queue (the waiter gave up). A backend that grants
  // leases to waiters (ReleaseEvent::granted) also releases a lease granted to this waiter.
  virtual void abandon_queue(std::string_view name, const OwnerSecret& secret) = 0;
  // Optional, read-only and cheap: the current holder's remaining time on the backend clock (zero
  // or negative when the name is free), or nullopt when the backend has no such probe. The first
  // waiter in line polls this between attempts instead of writing.
  virtual std::optional<std::chrono::milliseconds> peek_remaining(std::string_view name) {
    (void)name;
    return std::nullopt;
  }

  // Optional, read-only: where a queued waiter stands (live waiters ahead of `ticket`) and the
  // holder's remaining time (zero when free). Lets a woken waiter that is not first in line go
  // back to sleep without writing; nullopt means "no such probe" (the core attempts instead).
  struct QueueStatus {
    int position = 0;
    std::chrono::milliseconds holder_remaining{0};
  };
  virtual std::optional<QueueStatus> queue_status(std::string_view name, const OwnerSecret& secret,
                                                  std::int64_t ticket) {
    (void)name;
    (void)secret;
    (void)ticket;
    return std::nullopt;
  }

  // Optional, for backends without notifications: a native blocking wait until it may be this
  // waiter's turn (MySQL: a server-side loop that blocks in GET_LOCK on a beacon the holder's
  // manager keeps while it holds the lease). `ticket` is the waiter's queue ticket (0: not
  // queued). Blocks up to `max_wait`. Returns kWoken when an attempt should follow now: the name
  // is free and no waiter queued earlier is still live, or max_wait passed. Returns kUnavailable at
  // once when there is nothing to block on (no beacon held): the core polls instead.
  // Thread-safe; uses a connection of its own for the duration.
  enum class WaitOutcome { kWoken, kUnavailable };
  virtual WaitOutcome wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                                    std::chrono::milliseconds max_wait) {
    (void)name;
    (void)secret;
    (void)ticket;
    (void)max_wait;
    return WaitOutcome::kUnavailable;
  }

  // Live leases (all, or the one name). Expired rows that the reaper has not yet removed are not shown.
  virtual std::vector<LeaseInfo> list(std::optional<std::string_view> name) = 0;
  // Admin eviction: frees the name whoever holds it and bumps its fence, so the evicted holder's
  // renewals and guarded writes fail. Returns false if nothing was held.
  virtual bool force_release(std::string_view name) = 0;
  // Deletes at most `batch` expired rows; returns how many. Never touches a live lease.
  virtual std::size_t reap(std::size_t batch) = 0;

  // A release that granted the lease to a queued waiter (its queue entry asked for it): the
  // waiter with `ticket` holds it from the release on, with this fence, for `granted_for` (backend
  // clock; it may be shorter than the TTL asked for, and the holder renews it to that), expiring
  // at expires_at_us. The grantee needs no statement of its own; a waiter that misses the event
  // finds the lease its own on its next attempt.
  struct Grant {
    std::int64_t ticket = 0;
    std::int64_t fence = 0;
    std::chrono::microseconds granted_for{0};
    std::int64_t expires_at_us = 0;
  };
  // What a release event says. Valid only during the listener call (`name` points into the
  // backend's buffer).
  struct ReleaseEvent {
    std::string_view name;
    // The queue ticket of the waiter whose turn it is; 0: unknown, every waiter should look.
    std::int64_t next_ticket = 0;
    // Set when the release granted the lease to that waiter (grant->ticket == next_ticket).
    std::optional<Grant> grant;
  };
  // Optional: push release events. The backend calls `on_release` from its own thread whenever a
  // lease may have become free or was granted to a waiter. subscribe/unsubscribe bracket a
  // waiter's interest.
  virtual void set_release_listener(std::function<void(const ReleaseEvent& event)> on_release) {
    (void)on_release;
  }
  virtual void subscribe(std::string_view name) { (void)name; }
  virtual void unsubscribe(std::string_view name) { (void)name; }

  // Optional: a transaction-scoped lock. Opens a transaction holding the lock for `name`
  // (waiting up to `wait`), runs `body`, commits; rolls back if body throws. Returns false if the
  // lock was not obtained within `wait`.
  virtual bool run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                                       const std::function<void(Transaction&)>& body);

  // Optional: guarded write. Opens a write transaction, verifies inside it that `name` is still
  // held with `fence` by `secret` (unexpired on the backend clock), runs `body`, commits. Throws
  // LeaseLostError (after rolling back, nothing written) if the lease is not held.
  virtual void run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                           const std::function<void(Transaction&)>& body);

  // Optional: session locks. Returns nullptr when not acquired within `wait` (0: try once).
  // Each held session lock has its own connection, so two threads of one process contend like
  // two processes. Throws UnsupportedError where absent, UsageError behind a transaction pooler.
  virtual std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                                  std::chrono::milliseconds wait);

  // Optional: row locks on application tables. Opens a transaction, locks the rows, runs `body`
  // with them, commits (rolls back if body throws). Returns false when kNoWait met a locked row or
  // kWait ran out of wait_timeout (nothing is run then).
  virtual bool run_with_locked_rows(
      const RowLockRequest& request,
      const std::function<void(Transaction&, const std::vector<std::vector<Value>>& rows)>& body);

  // Optional: optimistic locking.
  virtual bool compare_and_set(const VersionedUpdate& update);
  virtual std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column,
                                                   const Value& id, std::string_view version_column);
};

}  // namespace dblock

#endif  // DBLOCK_BACKEND_H_
