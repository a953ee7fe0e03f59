// dblock/options.h — tuning knobs for a LockManager and for single acquisitions.
//
// Plain value types; copy them freely. Every field states its default and what 0 means.
#ifndef DBLOCK_OPTIONS_H_
#define DBLOCK_OPTIONS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>

namespace dblock {

class Error;

enum class LockMode {
  kExclusive,  // one holder at a time
  kShared,     // many readers at a time, excluded by any exclusive holder
};

const char* to_string(LockMode mode) noexcept;

struct ManagerOptions {
  // The namespace the service keeps this manager's locks in: the prefix of every table dblock
  // creates ("<prefix>leases", ...), of Redis's keys, in ZooKeeper's base path. The URL's
  // `namespace=` sets it too (both given and different: UsageError). Must match
  // [a-z_][a-z0-9_]{0,39}; validated, and always quoted in SQL. Default "dblock_".
  std::string table_prefix = "dblock_";

  // Lease time-to-live used when AcquireOptions::ttl is 0. Default 30 s. From kMinTtl (50 ms) to kMaxTtl (7 days).
  std::chrono::milliseconds default_ttl{30'000};

  // How often the renewal thread extends a held lease. 0 (default) means ttl / 3.
  std::chrono::milliseconds renew_interval{0};

  // Safety margin subtracted from safe-until to absorb clock-rate drift between this host and the
  // backend: safe_until = (local time the acquire was *sent*) + ttl - margin.
  // 0 (default) means ttl / 100 + 2 ms (the margin the Redlock analysis uses).
  std::chrono::milliseconds drift_margin{0};

  // Waiting: a blocked acquire re-tries after a jittered, growing pause in [min_poll, max_poll],
  // never sleeping past the current holder's remaining TTL. Releases inside this process and
  // backend notifications (where the backend has them) wake waiters at once.
  // Defaults 1 ms and 200 ms; both must be > 0.
  std::chrono::milliseconds min_poll{1};
  std::chrono::milliseconds max_poll{200};

  // Reaper: a background thread deleting expired lease rows in bounded batches.
  bool reaper = true;                                // default on
  std::chrono::milliseconds reaper_interval{5'000};  // pause between passes; default 5 s
  // Rows per reaper statement; default 50, must be > 0. Each batch is followed by a pause as long
  // as it took (at least 1 ms): small batches keep what waits behind one short (an acquire that
  // meets a batch waits for it).
  int reaper_batch = 50;

  // Create or upgrade the lock tables on open (under the backend's migration lock). Default true.
  // With false, opening a database without the schema throws SchemaError.
  bool auto_migrate = true;

  // How often the renewal thread verifies that each held session lock's connection still holds
  // it (one round trip each). Default 1 s; must be > 0.
  std::chrono::milliseconds session_check_interval{1'000};

  // The bound on a call to the service that no wait and no lease bounds: opening (the schema check
  // and migration), list, inspect, force_release, the force-release history, reap, migrate,
  // schema_version, compare_and_set and read_version. Row-lock and transaction-lock transactions
  // get their lock wait plus this, the application's statements and the commit included
  // (with_locked_rows waiting on the server's default lock timeout gets this alone). A call still
  // unanswered then fails with ConnectionError and its connection is dropped (a transaction rolls
  // back; one cut during COMMIT is InDoubtError). Migrations (on open and migrate()) get at least
  // ten minutes: their DDL may rebuild a table. Default 30 s; must be > 0 and at most a day.
  std::chrono::milliseconds call_timeout{30'000};

  // Default for AcquireOptions::reentrant. Default false.
  bool reentrant = false;

  // Default for AcquireOptions::fair. Default true.
  bool fair = true;

  // Shown in list/inspect as the holder. Empty (default) means "<hostname>:<pid>:<instance>".
  // Validated like a lock name (1-255 bytes of UTF-8, no control characters).
  std::string holder;

  // Receives errors that have no caller to throw to: failed renewals, reaper passes, releases run
  // by destructors. Called on dblock's background threads or inside a destructor; must not throw.
  // Default: ignore.
  std::function<void(const Error&)> on_background_error;
};

// What a lost-lease callback is told.
struct LostLease {
  std::string name;
  std::int64_t fence = 0;
  // Why, for people: "safe-until passed without a successful renewal", "renewal refused by the
  // backend (expired or taken over)", "released by admin: force_release by '<holder>' … fence a -> b"
  // (when the service's force-release record names this lease), "released by the LockManager's
  // shutdown", "the service reported the lease lost: …". Not a stable format.
  std::string reason;
};

struct AcquireOptions {
  // Lease time-to-live; 0 (default) means ManagerOptions::default_ttl. Outside kMinTtl..kMaxTtl is a UsageError.
  std::chrono::milliseconds ttl{0};

  LockMode mode = LockMode::kExclusive;

  // Semaphore: 0 (default) is an ordinary lease. N (1 to kMaxPermits) takes one of N permits of
  // the name: a lease held in shared mode with its own fence, renewal and on_lost, granted only
  // while fewer than N permits of the name are held, in the order the acquires queued. `mode`
  // stays at its default (a permit is shared by construction). While permits of a name are held,
  // an acquire asking for another N (or a plain shared lease) gets a UsageError naming both; an
  // exclusive acquire of the name waits until no permit is held. Services without the capability
  // (ServiceTraits::permits) throw UnsupportedError.
  int permits = 0;

  // Scheduled jobs (ShedLock's lockAtLeastFor): 0 (default) releases as usual. A positive value
  // (at most kMaxTtl) makes release() leave the name held, by nobody, until acquired_at +
  // hold_at_least on the service's clock, so that a host whose timer fires a little later skips
  // the run instead of repeating it. A release after that time frees the name at once. The TTL
  // is the bound when the holder dies (ShedLock's lockAtMostFor), renewed while it lives, and
  // never shorter than hold_at_least: the default TTL grows to it; a shorter `ttl` given is a
  // UsageError (as in ShedLock, lockAtLeastFor <= lockAtMostFor). Exclusive leases only
  // (UsageError with permits or mode = kShared); services without the capability
  // (ServiceTraits::hold_at_least) throw UnsupportedError.
  std::chrono::milliseconds hold_at_least{0};

  // Reentrancy: when set, an exclusive acquire by a thread that already holds the name through this
  // manager succeeds at once, sharing the fence and counting holds; the lease is released in the
  // backend when the last hold is released. Unset (default) means ManagerOptions::reentrant.
  std::optional<bool> reentrant;

  // Fairness: a waiting acquire joins the backend's queue of waiters (where it has one), so that
  // hand-offs go to the longest waiter and a releasing holder cannot take the name straight back.
  // false: this acquire waits outside the queue, attempting when it is woken or its pause ends;
  // it still yields to waiters that did queue. Trades first-come order for throughput where the
  // queue's bookkeeping costs more than it gives (README, "Fairness and its cost"). Unset
  // (default) means ManagerOptions::fair.
  std::optional<bool> fair;

  // Called once, on the renewal thread, when the lease is found lost (renewal refused, safe-until
  // passed, connection gone for too long). Must not block for long; may call Lease::release().
  std::function<void(const LostLease&)> on_lost;

  // Cancels a waiting acquire: once a stop is requested, the acquire wakes and returns empty
  // without another attempt. An attempt already under way completes (a lease it took is
  // returned); a wait blocked inside the service (MariaDB's GET_LOCK turn) ends at its next
  // refresh, at most a second later. A stop requested before the call: one attempt, no wait.
  std::stop_token stop;
};

// The most permits one semaphore name can have (AcquireOptions::permits).
inline constexpr int kMaxPermits = 10'000;

// Waiting helpers: pass as the wait of LockManager::acquire.
inline constexpr std::chrono::milliseconds kNoWait{0};
inline constexpr std::chrono::milliseconds kWaitForever = std::chrono::milliseconds::max();

}  // namespace dblock

#endif  // DBLOCK_OPTIONS_H_
