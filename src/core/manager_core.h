// The lease engine behind LockManager, Lease and Mutex: lease bookkeeping, the renewal thread,
// lost-lease signalling, waiting and the reaper, written once for every lock service. Includes no
// driver header.
//
// Lifetime: LockManager and every Lease hold a shared_ptr<ManagerCore>, so a Lease that outlives
// its LockManager still has valid memory; after shutdown() such a lease reports lost() and its
// release() returns kAlreadyLost without touching the service.
//
// Files: manager_core.cc (life cycle, releases, losses), acquire.cc (the acquire steps),
// renewal.cc (the renewal thread), sessions.cc (session locks); waiting in wait_strategy.h, the
// reaper in reaper.h.
#ifndef DBLOCK_SRC_CORE_MANAGER_CORE_H_
#define DBLOCK_SRC_CORE_MANAGER_CORE_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/options.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/lease_service.h"
#include "dblock/session_lock.h"
#include "dblock/sql/features.h"
#include "engine_metrics.h"
#include "lease_state.h"
#include "reaper.h"
#include "wait_strategy.h"
#include "wake_board.h"

namespace dblock::detail {

// Throws the UnsupportedError of a service without SessionLocks.
[[noreturn]] void throw_no_session_locks(const LeaseService& service);

class ManagerCore : public std::enable_shared_from_this<ManagerCore> {
 public:
  ManagerCore(std::unique_ptr<LeaseService> service, ManagerOptions options);
  ~ManagerCore();

  // Migrates (where the service has a schema), starts the event listener, the renewal thread and
  // the reaper (where the service has something to reap). Called once, right after construction.
  void start();
  // Stops the threads and releases every lease still held. Idempotent.
  void shutdown() noexcept;

  // try_once: one attempt, no queueing. Otherwise waits until `deadline` (SteadyClock).
  std::optional<Lease> acquire(std::string_view name, SteadyClock::time_point deadline, bool try_once,
                               const AcquireOptions& options);
  // acquire_all's first attempt, all names in one service call (MultiAcquire): the leases; an
  // empty vector when a single try was refused; nullopt when the names are to be taken one by one
  // (no such capability, a name this thread holds, or refused while waiting). Throws what the
  // call throws (while waiting, a transient fault only once the deadline passed).
  // REQUIRES: names validated, distinct, sorted.
  std::optional<std::vector<Lease>> acquire_all_at_once(const std::vector<std::string>& names,
                                                        SteadyClock::time_point deadline, bool try_once,
                                                        const AcquireOptions& options);
  // Releases one hold of `state` (see Lease::release); counts the release of the last one.
  ReleaseResult release_hold(const std::shared_ptr<LeaseState>& state);

  std::optional<SessionLock> session_lock(std::string_view name, std::chrono::milliseconds wait,
                                          const SessionLockOptions& options);
  ReleaseResult release_session(const std::shared_ptr<SessionState>& state);

  // The caller learned that `state` is lost (e.g. a guard found its row gone): the handle says
  // lost() from now on and no longer counts for reentrancy; the renewal thread runs mark_lost
  // (callback included, as for every loss). Any thread.
  void learned_lost(const std::shared_ptr<LeaseState>& state, const std::string& reason);
  // A guarded write (sql::Database::run_guarded) of `lease` through `sql`, bounded by the lease's
  // safe-until; a LeaseLostError from the service marks the lease lost here too.
  void run_guarded(SqlFeatures& sql, const Lease& lease, const std::function<void(Transaction&)>& body);
  // Reports an error that has no caller. noexcept: swallows what the user callback throws.
  void report(const Error& error) noexcept;
  // The deadline of a migration: ManagerOptions::call_timeout, at least kMinMigrationTime (DDL may
  // rebuild a table; a migration cut half-way is rolled back and tried again by the next open).
  static constexpr std::chrono::minutes kMinMigrationTime{10};
  SteadyClock::time_point migration_deadline() const;
  // The deadline of a call that may wait until `end` and then has ManagerOptions::call_timeout
  // more (saturating: time_point::max() stays max()). Admin calls wait for nothing: now.
  SteadyClock::time_point call_timeout_after(SteadyClock::time_point end = SteadyClock::now()) const;

  LeaseService& service() { return *service_; }
  EngineMetrics& metrics() { return metrics_; }
  // The counters, with the gauges read now.
  MetricsSnapshot metrics_snapshot();
  const ManagerOptions& options() const { return options_; }
  // The holder string this manager records (ManagerOptions::holder or the default).
  const std::string& holder() const { return holder_; }

 private:
  friend class Acquirer;

  // --- acquire.cc ---
  // One rule for every mode: a thread that holds `name` through this manager (exclusive, shared,
  // a permit, a scheduled job) and asks for it again gets another hold of the same lease when
  // both are exclusive and reentrant (set in `again`); otherwise a single try is refused (`again`
  // stays empty) and a wait is a UsageError (it would deadlock on its own hold, or give the
  // thread two permits or readers of one name). Returns false when this thread holds no live
  // lease of `name`: acquire from the service.
  bool reenter(const std::string& name, bool try_once, const AcquireOptions& options, std::optional<Lease>& again);
  // acquire() without counting its outcome. REQUIRES: the caller keeps the engine alive.
  std::optional<Lease> acquire_uncounted(std::string_view name, SteadyClock::time_point deadline, bool try_once,
                                       const AcquireOptions& options);
  // The UsageError or UnsupportedError for a mode or permit count this service cannot take.
  void check_mode(const AcquireOptions& options) const;
  std::shared_ptr<LeaseState> new_lease_state(const std::string& name, std::chrono::milliseconds ttl,
                                              const AcquireOptions& options) const;
  // Puts an acquired lease in the active set; releases it and throws when shutting down.
  Lease publish(const std::shared_ptr<LeaseState>& state);
  // acquire_all_at_once's service call, riding over transient faults while waiting; `sent_at`:
  // when the call that answered was sent. Empty: refused.
  std::vector<AcquireResult> acquire_all_call(MultiAcquire& multi, const std::vector<AcquireRequest>& requests,
                                              SteadyClock::time_point deadline, bool try_once, Instant& sent_at);
  // publish() of each; when one throws (shutting down), the others are released too.
  std::vector<Lease> publish_all(const std::vector<std::shared_ptr<LeaseState>>& states);
  // True when any of the just-recorded `states` is already past its safe-until (the answer came
  // too late to hand out): then every one of them is released on the service, best effort.
  bool answered_late(const std::vector<std::shared_ptr<LeaseState>>& states);
  // What an acquisition tells its lease: fence, tag, safe-until and the first renewal.
  void record(LeaseState& state, const AcquireResult& result, Instant sent_at);
  // The one timing rule of a lease after a call sent at `sent_at` (an acquisition or a renewal)
  // that the service answered with `granted_for`: held for min(TTL, granted_for); safe until
  // sent_at + held - the drift margin (boot clock); renewed next at sent_at + min(renew interval,
  // held / 3) (steady clock).
  struct Timing {
    std::chrono::milliseconds held_for;
    BootClock::time_point safe_until;
    SteadyClock::time_point next_renew;
  };
  Timing timing(const LeaseState& state, std::chrono::microseconds granted_for, const Instant& sent_at) const;
  // True if this thread holds any of `names` through this manager (not lost).
  bool holds_any(const std::vector<std::string>& names);

  // --- renewal.cc ---
  void renewal_loop();
  void renew_one(const std::shared_ptr<LeaseState>& state);
  std::string refusal_reason(const LeaseState& state);
  std::optional<ClockJumpError> check_service_clock(LeaseState& state, const RenewResult& result,
                                                    std::chrono::milliseconds held_for, const Instant& sent_at,
                                                    const Instant& answered_at);
  void check_session(const std::shared_ptr<SessionState>& state);
  // --- sessions.cc ---
  // True if this thread holds session lock `name` through this manager in a mode that a `mode`
  // request would wait for (anything but shared beside shared).
  bool held_by_this_thread(std::string_view name, LockMode mode);

  // --- manager_core.cc ---
  // release_hold() without the counting.
  ReleaseResult release_hold_uncounted(const std::shared_ptr<LeaseState>& state);
  // The service's release of `state`, bounded by its safe-until (at least the least time a call
  // gets). Throws what the service throws.
  bool release_on_service(const std::shared_ptr<LeaseState>& state);
  // Marks `state` lost (once), drops it from the active set and runs the callback on this thread.
  // The service hears of it (drop_on_service) only when the holder lets go of its last hold: until
  // then the holder's code may still be acting, so nothing it held is handed on before the
  // service's own expiry would.
  void mark_lost(const std::shared_ptr<LeaseState>& state, const std::string& reason, EngineMetrics::Loss cause);
  // The service's lease_lost() of `state`, bounded by the least time a call gets.
  void drop_on_service(const std::shared_ptr<LeaseState>& state) noexcept;
  // Runs a holder's on_lost callback, swallowing what it throws.
  static void run_on_lost(const std::function<void(const LostLease&)>& on_lost, const LostLease& lost) noexcept;
  // Handles a service event (the service's listener thread).
  void on_event(const WakeEvents::Event& event);
  void remove_active_locked(const std::shared_ptr<LeaseState>& state) DBLOCK_REQUIRES(mutex_);
  std::chrono::milliseconds drift_margin(std::chrono::milliseconds ttl) const;

  // Constant after construction.
  const ManagerOptions options_;
  const std::string holder_;
  const ServiceTraits traits_;
  EngineMetrics metrics_;  // thread-safe; outlives the reaper that counts into it
  WakeBoard board_;
  const std::vector<std::unique_ptr<WaitStrategy>> wait_strategies_;
  std::unique_ptr<Reaper> reaper_;  // null when the service has nothing to reap or options say so

  // Also guards the fields of LeaseState and SessionState that say so (lease_state.h).
  service::Mutex mutex_;
  std::condition_variable renew_cv_;  // renewal thread: new lease, loss event, shutdown
  std::unordered_map<std::string, std::vector<std::shared_ptr<LeaseState>>> active_ DBLOCK_GUARDED_BY(mutex_);
  std::vector<std::shared_ptr<SessionState>> sessions_ DBLOCK_GUARDED_BY(mutex_);
  bool stopping_ DBLOCK_GUARDED_BY(mutex_) = false;
  // When the renewal thread will next wake by itself; min() while it is awake.
  SteadyClock::time_point renewal_wake_at_ DBLOCK_GUARDED_BY(mutex_) = SteadyClock::time_point::min();

  std::thread renewal_thread_;

  // Declared last so that it is destroyed first, after shutdown() stopped every thread that uses
  // it (the strategies and the reaper above only hold references into it).
  std::unique_ptr<LeaseService> service_;
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_MANAGER_CORE_H_
