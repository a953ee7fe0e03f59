// Session locks (a service's SessionLocks capability): acquired on a connection of their own,
// verified periodically by the renewal thread (renewal.cc), released here.
#include <algorithm>
#include <thread>

#include "dblock/errors.h"
#include "dblock/lock_manager.h"
#include "dblock/service/call_deadline.h"
#include "internal.h"
#include "manager_core.h"

namespace dblock::detail {

namespace {

// A session lock's own call deadline: its wait (which the service waits out server-side) and
// the least time a call is given after it; none for a wait without end.
SteadyClock::time_point session_wait_deadline(std::chrono::milliseconds wait) {
  const auto ends = wait_deadline(std::max(wait, std::chrono::milliseconds::zero()));
  return ends == SteadyClock::time_point::max() ? ends : ends + CallDeadlineScope::kMinCallTime;
}

// One session lock acquisition with a wait of `wait`. A failure the service calls transient
// (Error::retryable(): a server out of connections, starting up) is tried again with a growing,
// jittered pause (50 ms to 1 s) for as long as the wait lasts, then thrown.
std::unique_ptr<SessionLockHandle> acquire_riding_over(SessionLocks& locks, std::string_view name, LockMode mode,
                                                       std::chrono::milliseconds wait) {
  using std::chrono::milliseconds;
  const auto ends = wait_deadline(std::max(wait, milliseconds::zero()));
  const bool forever = ends == SteadyClock::time_point::max();
  for (int attempt = 0;; ++attempt) {
    const milliseconds left =
        forever ? wait : std::max(milliseconds::zero(), std::chrono::ceil<milliseconds>(ends - SteadyClock::now()));
    try {
      const CallDeadlineScope call(session_wait_deadline(left));
      return locks.acquire_session_lock(name, mode, left);
    } catch (const Error& e) {
      if (!e.retryable() || SteadyClock::now() >= ends) throw;
    }
    std::this_thread::sleep_for(refusal_pause(attempt, ends));
  }
}

}  // namespace

bool ManagerCore::held_by_this_thread(std::string_view name, LockMode mode) {
  const auto self = std::this_thread::get_id();
  service::MutexLock lock(mutex_);
  for (const auto& session : sessions_) {
    const bool both_shared = mode == LockMode::kShared && session->mode == LockMode::kShared;
    if (session->name == name && session->owner_thread == self && !session->lost.load() && !both_shared) return true;
  }
  return false;
}

void throw_no_session_locks(const LeaseService& service) {
  const std::string name(service.name());
  throw UnsupportedError("session locks (locks that die with the connection) are not supported by the " + name +
                             " backend; use a lease (the default mode) instead",
                         name);
}

std::optional<SessionLock> ManagerCore::session_lock(std::string_view name, std::chrono::milliseconds wait,
                                                    const SessionLockOptions& options) {
  validate_lock_name(name);
  SessionLocks* locks = service_->session_locks();
  if (locks == nullptr) throw_no_session_locks(*service_);
  if (held_by_this_thread(name, options.mode)) {
    if (wait <= std::chrono::milliseconds::zero()) return std::nullopt;  // a try answers, as for leases
    throw UsageError("session lock '" + std::string(name) +
                     "' is already held by this thread through this manager; waiting would deadlock");
  }
  std::unique_ptr<SessionLockHandle> handle = acquire_riding_over(*locks, name, options.mode, wait);
  if (!handle) return std::nullopt;
  auto state = std::make_shared<SessionState>();
  state->name = std::string(name);
  state->mode = options.mode;
  state->key = handle->key();
  state->on_lost = options.on_lost;
  state->owner_thread = std::this_thread::get_id();
  {
    service::MutexLock lock(state->handle_mutex);  // nobody else sees the state yet: uncontended
    state->handle = std::move(handle);
  }
  bool wake_renewer;
  {
    service::MutexLock lock(mutex_);
    if (stopping_) throw UsageError("LockManager is shutting down");
    state->next_check = SteadyClock::now() + options_.session_check_interval;
    sessions_.push_back(state);
    wake_renewer = state->next_check < renewal_wake_at_;
  }
  if (wake_renewer) renew_cv_.notify_all();
  return SessionLock(shared_from_this(), state);
}

ReleaseResult ManagerCore::release_session(const std::shared_ptr<SessionState>& state) {
  {
    service::MutexLock lock(mutex_);
    if (state->shut_down.load()) return ReleaseResult::kShutDown;
    if (state->finished) return ReleaseResult::kAlreadyLost;
    state->finished = true;
    sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), state), sessions_.end());
  }
  service::MutexLock lock(state->handle_mutex);
  ReleaseResult result = ReleaseResult::kAlreadyLost;
  if (state->handle && !state->lost.load()) {
    const CallDeadlineScope call(SteadyClock::now());  // the least time a call is given
    try {
      result = state->handle->release() ? ReleaseResult::kReleased : ReleaseResult::kAlreadyLost;
    } catch (const Error& e) {
      report(e);
      result = ReleaseResult::kInDoubt;
    }
  }
  state->handle.reset();
  state->lost.store(true);
  return result;
}

}  // namespace dblock::detail
