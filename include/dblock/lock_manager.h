// dblock/lock_manager.h — the entry point: acquire leases, inspect and administer locks.
//
// A LockManager owns one lock service (its connections), one renewal thread for all leases it
// hands out, and a reaper thread where the service has something to reap. It is safe for
// concurrent use from many threads. Create one per process and backend with dblock::open(url)
// (dblock/open.h) and share it.
//
// Clocks: expiry is decided on the backend's clock; the only local deadlines (waits, safe-until)
// are on std::chrono::steady_clock.
#ifndef DBLOCK_LOCK_MANAGER_H_
#define DBLOCK_LOCK_MANAGER_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/lease.h"
#include "dblock/lease_info.h"
#include "dblock/metrics.h"
#include "dblock/options.h"
#include "dblock/session_lock.h"

namespace dblock {

class LeaseService;  // dblock/service/lease_service.h: the seam a lock service implements

namespace detail {
class ManagerCore;
}  // namespace detail
namespace sql {
class Database;
}  // namespace sql

// Lock names: 1..kMaxNameBytes bytes of valid UTF-8 without NUL or other control characters.
inline constexpr std::size_t kMaxNameBytes = 255;
// Longest TTL accepted (a lease is not a configuration store).
inline constexpr std::chrono::milliseconds kMaxTtl = std::chrono::hours(24 * 7);
// Shortest TTL accepted: below it the renewal period (TTL/3) and the safe time left after the drift
// margin (TTL/100 + 2 ms) shrink to a few scheduler slices and round trips, and a lease is lost
// before its holder can act on it.
inline constexpr std::chrono::milliseconds kMinTtl{50};

// Throws UsageError describing what is wrong with `name`, or returns normally.
void validate_lock_name(std::string_view name);

// What a manager's backend offers beyond leases (LockManager::capabilities()).
struct Capabilities {
  bool shared_leases = false;
  bool permits = false;             // semaphores (AcquireOptions::permits)
  bool hold_at_least = false;       // scheduled jobs (AcquireOptions::hold_at_least)
  bool notifications = false;       // the backend pushes release events (LISTEN/NOTIFY, pub/sub, ...)
  bool session_locks = false;       // locks that die with the connection
  bool transaction_locks = false;   // run_in_transaction_lock
  bool row_locks = false;           // SELECT ... FOR UPDATE helpers
  bool optimistic = false;          // compare_and_set on a version column
  bool guard = false;               // guarded writes inside the application's transaction
};

// What LockManager::with_lease did.
enum class LeaseRun {
  kNotAcquired,  // the name was not acquired within the wait: the function did not run
  kCompleted,    // the function ran and returned while the lease held; the lease was then released
  kLost,         // the function ran, but the lease was lost before it returned (its stop_token was
                 // asked to stop at the loss): other work under the same name may have overlapped
};

class LockManager {
 public:
  // Takes ownership of `service`. Validates options (UsageError), applies or checks the schema
  // where the service has one (SchemaError, ConnectionError) and starts the renewal thread, and
  // the reaper thread where the service has something to reap.
  LockManager(std::unique_ptr<LeaseService> service, ManagerOptions options = {});
  // Stops the threads and releases every lease and session lock still held (best effort; failures
  // go to on_background_error), then runs their on_lost callbacks on this thread (reason "released
  // by the LockManager's shutdown"). Surviving handles then say shut_down() and lost(), held() is
  // false and release() returns ReleaseResult::kShutDown. Does not block for longer than one backend
  // round trip per lock. Acquires still waiting in other threads end with a UsageError ("shutting
  // down").
  ~LockManager();
  LockManager(const LockManager&) = delete;
  LockManager& operator=(const LockManager&) = delete;

  // One attempt. Returns the lease, or an empty optional if another owner holds the name.
  // Throws UsageError (bad name/ttl), ConnectionError, SchemaError, and TimeoutError when the
  // service was too busy to answer within the attempt's 2 s (SQLite: another connection kept the
  // file's write lock, e.g. a transaction lock or a guarded write; not an answer about the name).
  std::optional<Lease> try_acquire(std::string_view name, const AcquireOptions& options = {});

  // Blocks until acquired or `wait` elapsed (steady_clock). A zero or negative wait means try once;
  // kWaitForever waits without limit. Returns an empty optional on timeout. Waiting is woken at
  // once by releases in this process and by backend notifications, else by a jittered poll that
  // never sleeps past the holder's remaining TTL. A thread that already holds `name` through this
  // manager without reentrancy gets a UsageError instead of deadlocking.
  std::optional<Lease> acquire(std::string_view name, std::chrono::milliseconds wait,
                               const AcquireOptions& options = {});
  std::optional<Lease> acquire_until(std::string_view name,
                                     std::chrono::steady_clock::time_point deadline,
                                     const AcquireOptions& options = {});

  // Runs `fn` only while holding `name` (acquired as by acquire(name, wait, options)) and says
  // whether it ran: ShedLock's executeWithLock. `fn` gets the lease (for its fence, or run_guarded)
  // and a stop_token that is asked to stop when the lease is lost (from the renewal thread, before
  // options.on_lost runs): long work should check it, as `dblock run` stops its command. The lease
  // is released when `fn` returns; if `fn` throws, it is released and the exception propagates.
  // Throws as acquire does (a thread already holding `name` without reentrancy: UsageError). On a
  // reentrant hold of a name this thread already holds, the lease keeps the first hold's on_lost,
  // so the token is not asked to stop: check lease.lost() in `fn` then.
  LeaseRun with_lease(std::string_view name, std::chrono::milliseconds wait,
                      const std::function<void(Lease& lease, std::stop_token stop)>& fn,
                      AcquireOptions options = {});

  // All of `names` or none (MultiLock). Where the service takes several names in one call (Redis:
  // one script; SQLite, PostgreSQL, MariaDB: one transaction) the first attempt asks for all at
  // once, and nothing is taken unless all are free. Otherwise, or when that attempt is refused while waiting, takes them in sorted order, so
  // that callers asking for overlapping sets cannot deadlock each other, each within what is left
  // of `wait` (zero or negative: one attempt each). When one is not acquired in time, or an acquire throws, the
  // leases already taken are released (in reverse order) and the result is empty (or the error
  // rethrown). Returns the leases in the order of the sorted names. Throws UsageError for an empty
  // list or a name given twice.
  std::optional<std::vector<Lease>> acquire_all(std::vector<std::string> names, std::chrono::milliseconds wait,
                                                const AcquireOptions& options = {});

  // Live leases as the backend sees them (backend clock).
  std::vector<LeaseInfo> list();
  std::optional<LeaseInfo> inspect(std::string_view name);
  // Admin: evicts whoever holds `name` and bumps its fence. Returns false if nothing was held.
  // Services with an audit log (every SQL service) record the eviction in the same transaction:
  // when, by this manager's holder string and database account, whom, and the fences.
  bool force_release(std::string_view name);
  // The recorded force-releases, newest first, at most `limit`: of every name, or of `name`.
  // Throws UnsupportedError where the service keeps no record.
  std::vector<ForceReleaseRecord> force_release_history(std::optional<std::string_view> name = std::nullopt,
                                                        std::size_t limit = 100);
  // Runs reaper passes until no expired row is left (or `max_rows` were deleted); returns the
  // count. 0 where the backend keeps nothing to reap.
  std::size_t reap(std::size_t max_rows = static_cast<std::size_t>(-1));
  // How long ago (backend clock) the oldest expired entry still waiting for the reaper expired;
  // nullopt when there is none, or where the backend keeps nothing to reap (Redis, ZooKeeper).
  // Read-only.
  std::optional<std::chrono::microseconds> oldest_unreaped();
  // Applies pending migrations under the backend's migration lock; a no-op where the backend has
  // no schema. schema_version() is then 0.
  void migrate();
  int schema_version();

  // Session locks (die with the connection; PostgreSQL advisory locks, MySQL GET_LOCK). Each held
  // session lock has a dedicated connection, so two threads of one manager exclude each other.
  // Waits up to `wait` (0: try once) inside the server. Returns an empty optional when not
  // acquired. Throws UnsupportedError where the backend has none (SQLite), UsageError when the
  // URL goes through a transaction-pooling proxy (the lock would silently evaporate). The
  // renewal thread checks held session locks every ManagerOptions::session_check_interval.
  std::optional<SessionLock> session_lock(std::string_view name, std::chrono::milliseconds wait,
                                          const SessionLockOptions& options = {});
  // Throws UnsupportedError with the reason where session locks are absent.
  void require_session_locks() const;

  // What this manager counted since it was created (dblock/metrics.h); to_prometheus() renders
  // it. Takes the manager's lock briefly for the gauges; never calls the service.
  MetricsSnapshot metrics() const;

  std::string_view backend_name() const;
  Capabilities capabilities() const;
  const ManagerOptions& options() const;

  // The lock service behind this manager (dblock/service/lease_service.h), as SOCI hands out its
  // backend: for a service's own tests and tools that drive it as the engine does. A call made
  // through it bypasses the engine (no reentrancy, renewal or lost-lease signal): not for
  // application code. Valid while the manager lives.
  LeaseService& service() noexcept;

 private:
  friend class sql::Database;  // the SQL-only calls (dblock/sql/database.h), on this engine
  std::shared_ptr<detail::ManagerCore> core_;
};

// Bounded optimistic retry: calls `attempt` until it returns true or `max_attempts` calls were
// made, sleeping a jittered, doubling pause (starting at `base_delay`, capped at `max_delay`)
// between attempts. Errors with retryable() == true count as a failed attempt; others propagate.
// Returns whether an attempt succeeded.
struct RetryOptions {
  int max_attempts = 10;                        // must be >= 1
  std::chrono::milliseconds base_delay{2};
  std::chrono::milliseconds max_delay{200};
};
bool retry_optimistic(const std::function<bool()>& attempt, const RetryOptions& options = {});

}  // namespace dblock

#endif  // DBLOCK_LOCK_MANAGER_H_
