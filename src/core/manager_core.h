// The shared state behind LockManager, Lease and Mutex: lease bookkeeping, the renewal thread,
// the reaper thread and in-process wake-ups. Includes no driver header.
//
// Lifetime: LockManager and every Lease hold a shared_ptr<ManagerCore>, so a Lease that outlives
// its LockManager still has valid memory; after shutdown() such a lease reports lost() and its
// release() returns kAlreadyLost without touching the backend.
#ifndef DBLOCK_SRC_CORE_MANAGER_CORE_H_
#define DBLOCK_SRC_CORE_MANAGER_CORE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dblock/backend.h"
#include "dblock/lease.h"
#include "dblock/options.h"
#include "dblock/session_lock.h"

namespace dblock::detail {

using SteadyClock = std::chrono::steady_clock;

// One backend acquisition, shared by the Lease handles of its (reentrant) holds and by the
// renewal thread.
struct LeaseState {
  // Constant after construction.
  std::string name;
  LockMode mode = LockMode::kExclusive;
  OwnerSecret secret;
  std::int64_t fence = 0;
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds renew_interval{0};
  std::function<void(const LostLease&)> on_lost;
  std::thread::id owner_thread;
  bool reentrant = false;
  // Set once by the acquiring thread before the state is published: the backend granted the lease
  // only after this acquire had queued (the release passes it on as a hint).
  bool acquired_after_queueing = false;

  // Readable without the manager mutex; written under it.
  std::atomic<bool> lost{false};
  std::atomic<std::int64_t> safe_until_ns{0};  // steady_clock, nanoseconds since its epoch
  std::atomic<std::int64_t> expires_at_us{0};  // backend clock
  std::atomic<int> holds{1};

  // Protected by ManagerCore::mutex_.
  bool finished = false;  // released, lost or shut down: no more renewals, no more callbacks
  SteadyClock::time_point next_renew;

  // What every release of this lease tells the backend (all release paths must pass the same:
  // a granted holder's queue entry goes only with a hinted release).
  Backend::ReleaseHint release_hint() const {
    return acquired_after_queueing ? Backend::ReleaseHint::kAcquiredAfterQueueing : Backend::ReleaseHint::kNone;
  }

  SteadyClock::time_point safe_until() const {
    return SteadyClock::time_point(SteadyClock::duration(safe_until_ns.load(std::memory_order_acquire)));
  }
  bool is_lost() const {
    return lost.load(std::memory_order_acquire) || SteadyClock::now() >= safe_until();
  }
};

// One held session lock, shared by its SessionLock handle and the renewal thread (which verifies
// it periodically).
struct SessionState {
  // Constant after construction.
  std::string name;
  LockMode mode = LockMode::kExclusive;
  std::int64_t key = 0;
  std::function<void(const LostLease&)> on_lost;

  std::atomic<bool> lost{false};
  // Serialises verify() and release() on the session's connection.
  std::mutex handle_mutex;
  std::unique_ptr<SessionLockHandle> handle;  // GUARDED_BY(handle_mutex); null once released

  // Protected by ManagerCore::mutex_.
  bool finished = false;
  SteadyClock::time_point next_check;
};

class ManagerCore : public std::enable_shared_from_this<ManagerCore> {
 public:
  ManagerCore(std::unique_ptr<Backend> backend, ManagerOptions options);
  ~ManagerCore();

  // Starts the renewal and reaper threads. Called once, right after construction.
  void start();
  // Stops the threads and releases every lease still held. Idempotent.
  void shutdown() noexcept;

  // try_once: one attempt, no queueing. Otherwise waits until `deadline` (steady_clock).
  std::optional<Lease> acquire(std::string_view name, SteadyClock::time_point deadline, bool try_once,
                               const AcquireOptions& options);
  // Releases one hold of `state` (see Lease::release).
  ReleaseResult release_hold(const std::shared_ptr<LeaseState>& state);

  std::optional<SessionLock> session_lock(std::string_view name, std::chrono::milliseconds wait,
                                          const SessionLockOptions& options);
  ReleaseResult release_session(const std::shared_ptr<SessionState>& state);

  // Reports an error that has no caller. noexcept: swallows what the user callback throws.
  void report(const Error& error) noexcept;

  Backend& backend() { return *backend_; }
  const ManagerOptions& options() const { return options_; }

 private:
  struct NameWaiters {
    std::uint64_t generation = 0;  // bumped whenever the name may have become free
    std::int64_t next_ticket = 0;  // from the last bump: whose turn it is (0: anyone's)
    // The last grant of the name a release announced, until the waiter it names takes it.
    std::optional<Backend::Grant> grant;
    int waiters = 0;
  };

  void renewal_loop();
  void reaper_loop();
  void renew_one(const std::shared_ptr<LeaseState>& state);
  void check_session(const std::shared_ptr<SessionState>& state);
  // Marks `state` lost (once), drops it from the active set and runs its callback on this thread.
  void mark_lost(const std::shared_ptr<LeaseState>& state, const std::string& reason, bool run_callback);
  // REQUIRES: mutex_ held. Wakes in-process waiters for `name`.
  void bump_locked(const std::string& name, std::int64_t next_ticket = 0);
  void remove_active_locked(const std::shared_ptr<LeaseState>& state);
  std::chrono::milliseconds drift_margin(std::chrono::milliseconds ttl) const;

  // Constant after construction.
  const ManagerOptions options_;
  const std::string holder_;

  std::mutex mutex_;
  std::condition_variable renew_cv_;  // renewal thread: new lease, shutdown
  std::condition_variable wait_cv_;   // acquirers: a name may have become free
  std::condition_variable reaper_cv_; // reaper: shutdown
  // Protected by mutex_.
  std::unordered_map<std::string, std::vector<std::shared_ptr<LeaseState>>> active_;
  std::unordered_map<std::string, NameWaiters> waiting_;
  std::vector<std::shared_ptr<SessionState>> sessions_;
  bool stopping_ = false;
  // When the renewal thread will next wake by itself; min() while it is awake.
  SteadyClock::time_point renewal_wake_at_ = SteadyClock::time_point::min();

  std::thread renewal_thread_;
  std::thread reaper_thread_;

  // Declared last so it is destroyed first: its notification thread (if any) calls back into the
  // members above.
  std::unique_ptr<Backend> backend_;
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_MANAGER_CORE_H_
