// The engine's record of one held lease and of one held session lock. Internal.
#ifndef DBLOCK_SRC_CORE_LEASE_STATE_H_
#define DBLOCK_SRC_CORE_LEASE_STATE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "boot_clock.h"
#include "clock_check.h"
#include "dblock/options.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/lease_service.h"
#include "dblock/service/thread_annotations.h"
#include "engine_metrics.h"

namespace dblock::detail {

// Local deadlines: safe-until on BootClock (it counts suspended time), waits and renewal times
// on SteadyClock (boot_clock.h).

// One acquisition from the service, shared by the Lease handles of its (reentrant) holds and by
// the renewal thread.
struct LeaseState {
  // Constant once the state is published (in ManagerCore's active set or a Lease).
  std::string name;
  LockMode mode = LockMode::kExclusive;
  int permits = 0;  // a semaphore's N (AcquireOptions::permits), else 0
  std::chrono::milliseconds hold_at_least{0};  // AcquireOptions::hold_at_least
  OwnerSecret secret;
  std::int64_t fence = 0;
  std::uint32_t tag = 0;  // the service's AcquireResult::tag, passed back in key()
  std::chrono::milliseconds ttl{0};
  std::chrono::milliseconds renew_interval{0};
  std::function<void(const LostLease&)> on_lost;
  std::thread::id owner_thread;
  bool reentrant = false;

  // Readable without the manager mutex; written under it.
  std::atomic<bool> lost{false};
  std::atomic<std::int64_t> safe_until_ns{0};  // BootClock, nanoseconds since boot
  std::atomic<std::int64_t> expires_at_us{0};  // service clock
  std::atomic<int> holds{1};
  std::atomic<bool> shut_down{false};  // released by the manager's shutdown (written under the mutex)
  SteadyClock::time_point granted_at;  // set before publication

  // Protected by ManagerCore::mutex_.
  bool finished = false;  // released, lost or shut down: no more renewals, no more callbacks
  // Lost while a hold was still out: the service's lease_lost() is owed, and is called when the
  // last hold is let go (the holder's code may still be running until then).
  bool drop_owed = false;
  SteadyClock::time_point next_renew;
  std::string lost_reason;  // set by a service's lost event; the renewal thread marks it lost
  EngineMetrics::Loss lost_cause = EngineMetrics::Loss::kServiceEvent;  // with lost_reason
  std::optional<ClockSample> last_renewal;  // the service's clock at the last renewal (renewal.cc)
  bool clock_in_doubt = false;  // the last renewal found the service's clock stepped

  // How every call to the service names this lease.
  LeaseKey key() const { return LeaseKey{name, mode, &secret, tag, permits, hold_at_least}; }

  BootClock::time_point safe_until() const {
    return BootClock::time_point(BootClock::duration(safe_until_ns.load(std::memory_order_acquire)));
  }
  // safe_until() on steady_clock, for waits and call deadlines (to_steady).
  SteadyClock::time_point safe_until_steady() const { return to_steady(safe_until()); }
  void set_safe_until(BootClock::time_point t) {
    safe_until_ns.store(t.time_since_epoch().count(), std::memory_order_release);
  }
  bool is_lost() const {
    return lost.load(std::memory_order_acquire) || BootClock::now() >= safe_until();
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
  std::thread::id owner_thread;  // the thread that took it

  std::atomic<bool> lost{false};
  std::atomic<bool> shut_down{false};  // released by the manager's shutdown (written under the mutex)
  bool is_lost() const { return lost.load(std::memory_order_acquire); }
  // Serialises verify() and release() on the session's connection.
  service::Mutex handle_mutex;
  std::unique_ptr<SessionLockHandle> handle DBLOCK_GUARDED_BY(handle_mutex);  // null once released

  // Protected by ManagerCore::mutex_.
  bool finished = false;
  SteadyClock::time_point next_check;
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_LEASE_STATE_H_
