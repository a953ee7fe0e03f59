// LockManager::with_lease: run a function only while a lease is held.
#include <stop_token>
#include <utility>

#include "dblock/lock_manager.h"

namespace dblock {

LeaseRun LockManager::with_lease(std::string_view name, std::chrono::milliseconds wait,
                                 const std::function<void(Lease& lease, std::stop_token stop)>& fn,
                                 AcquireOptions options) {
  // The source's state is shared with the callback, which may run on the renewal thread after
  // this call returned (a loss noticed late): it only ever touches its own copy.
  std::stop_source stop;
  options.on_lost = [stop, then = std::move(options.on_lost)](const LostLease& lost) mutable {
    stop.request_stop();
    if (then) then(lost);
  };
  std::optional<Lease> lease = acquire(name, wait, options);
  if (!lease) return LeaseRun::kNotAcquired;
  fn(*lease, stop.get_token());
  const bool lost_while_running = lease->lost();
  const ReleaseResult released = lease->release();
  if (lost_while_running || released == ReleaseResult::kAlreadyLost || released == ReleaseResult::kShutDown) {
    return LeaseRun::kLost;
  }
  return LeaseRun::kCompleted;
}

}  // namespace dblock
