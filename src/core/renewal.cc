// The renewal thread: renews every held lease at its interval, declares a lease lost when its
// safe-until passes, a renewal is refused or the service reports it lost, and checks held
// session locks.
#include <algorithm>
#include <cstdio>
#include <utility>

#include "dblock/errors.h"
#include "internal.h"
#include "manager_core.h"

namespace dblock::detail {

namespace {
using std::chrono::milliseconds;
// How long a session lock's periodic check may go unanswered before the session counts as gone.
constexpr milliseconds kSessionCheckTime{5000};
// How long a refused renewal may spend reading the force-release record for its reason, and how
// many of the name's newest records it reads.
constexpr milliseconds kReasonLookupTime{2000};
constexpr std::size_t kReasonLookupRows = 5;
}  // namespace

// Why a renewal was refused: an admin's force-release when the service's record names this
// lease's fence (shared: a fence at least ours, as the record names the newest reader's), else
// the generic cause. The lookup is bounded by kReasonLookupTime (a service that refused the
// renewal is answering: normally a round trip) and its failure only costs detail.
std::string ManagerCore::refusal_reason(const LeaseState& state) {
  std::string reason = "renewal refused by the backend (expired or taken over)";
  AuditLog* log = service_->audit_log();
  if (log == nullptr) return reason;
  try {
    const CallDeadlineScope deadline(SteadyClock::now() + kReasonLookupTime);
    for (const ForceReleaseRecord& r : log->force_releases(state.name, kReasonLookupRows)) {
      const bool ours = state.mode == LockMode::kShared ? r.old_fence >= state.fence : r.old_fence == state.fence;
      if (!ours) continue;
      reason = "released by admin: force_release by '" + r.by + "'";
      if (!r.by_account.empty()) reason += " (account '" + r.by_account + "')";
      char at[48];
      std::snprintf(at, sizeof(at), " at %.3f s Unix time (service clock)", static_cast<double>(r.at_us) / 1e6);
      reason += std::string(at) + "; fence " + std::to_string(r.old_fence) + " -> " + std::to_string(r.new_fence);
      return reason;
    }
  } catch (const Error&) {
    // The record could not be read (no privilege, the service down): the generic cause stands.
  }
  return reason;
}

void ManagerCore::renew_one(const std::shared_ptr<LeaseState>& state) {
  const Instant sent_at = Instant::now();
  RenewResult result;
  try {
    const CallDeadlineScope deadline(state->safe_until_steady());  // after it, the renewal is moot
    result = service_->renew(state->key(), state->ttl);
  } catch (const Error& e) {
    metrics_.renewed(EngineMetrics::Renewal::kFailed);
    report(e);
    // Retry soon; safe-until decides when to give up.
    service::MutexLock lock(mutex_);
    state->next_renew = SteadyClock::now() + std::max(state->renew_interval / 4, milliseconds(10));
    return;
  }
  if (!result.renewed) {
    metrics_.renewed(EngineMetrics::Renewal::kRefused);
    {
      service::MutexLock lock(mutex_);
      if (state->finished) return;  // released meanwhile: a refused renewal is expected then
      state->lost.store(true, std::memory_order_release);  // lost() answers while the reason is read
    }
    mark_lost(state, refusal_reason(*state), EngineMetrics::Loss::kRenewalRefused);
    return;
  }
  metrics_.renewed(EngineMetrics::Renewal::kOk);
  const Instant answered_at = Instant::now();
  const Timing t = timing(*state, result.granted_for, sent_at);
  std::optional<ClockJumpError> jumped;
  {
    service::MutexLock lock(mutex_);
    if (state->finished) return;
    // A renewal that comes back after safe-until cannot resurrect the lease: the holder may already
    // have been told it was lost.
    if (state->is_lost()) return;
    state->expires_at_us.store(result.expires_at_us);
    jumped = check_service_clock(*state, result, t.held_for, sent_at, answered_at);
    if (jumped) {
      // In doubt: this renewal extends nothing. The next one confirms or refutes it: at once after
      // a first step; after the usual interval when the clock still disagrees (a service whose
      // clock keeps disagreeing is not renewed in a tight loop; its leases end at safe-until).
      state->next_renew = state->clock_in_doubt ? t.next_renew : answered_at.steady;
      state->clock_in_doubt = true;
    } else {
      state->clock_in_doubt = false;
      if (t.safe_until > state->safe_until()) state->set_safe_until(t.safe_until);
      state->next_renew = t.next_renew;
    }
  }
  if (jumped) report(*jumped);
}

// Compares how far the service's clock moved since the lease's last renewal with how far this
// host's did (clock_check.h); records this renewal's reading. Called under mutex_.
std::optional<ClockJumpError> ManagerCore::check_service_clock(LeaseState& state, const RenewResult& result,
                                                               milliseconds held_for, const Instant& sent_at,
                                                               const Instant& answered_at) {
  // A lease its holder's session keeps has no expiry on the service's clock to compare.
  if (traits_.bound == LeaseBound::kSession) return std::nullopt;
  const ClockSample sample{result.expires_at_us - std::chrono::duration_cast<std::chrono::microseconds>(held_for).count(),
                           sent_at.boot, answered_at.boot};
  const std::optional<ClockSample> before = std::exchange(state.last_renewal, sample);
  if (!before) return std::nullopt;
  const auto jump = clock_jump(*before, sample, drift_margin(held_for));
  if (jump == std::chrono::microseconds::zero()) return std::nullopt;
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%+.3f", std::chrono::duration<double>(jump).count());
  return ClockJumpError(std::string(service_->name()) + ": the service's clock moved " + seconds +
                            " s against this host's between two renewals of '" + state.name +
                            "' (stepped?); the lease is in doubt until the next renewal, made at once, confirms it",
                        std::string(service_->name()));
}

void ManagerCore::renewal_loop() {
  service::UniqueLock lock(mutex_);
  while (!stopping_) {
    const auto now = SteadyClock::now();
    const auto boot_now = BootClock::now();
    auto next = now + std::chrono::seconds(1);
    struct Lost {
      std::shared_ptr<LeaseState> state;
      std::string reason;
      EngineMetrics::Loss cause;
    };
    std::vector<Lost> lost;
    std::vector<std::shared_ptr<LeaseState>> due;
    for (auto& [name, states] : active_) {
      for (auto& state : states) {
        if (!state->lost_reason.empty()) {
          lost.push_back({state, state->lost_reason, state->lost_cause});
        } else if (boot_now >= state->safe_until()) {
          lost.push_back({state, "safe-until passed without a successful renewal", EngineMetrics::Loss::kSafeUntilPassed});
        } else if (now >= state->next_renew) {
          due.push_back(state);
        } else {
          next = std::min({next, state->next_renew, now + (state->safe_until() - boot_now)});
        }
      }
    }
    std::vector<std::shared_ptr<SessionState>> sessions_due;
    for (auto& session : sessions_) {
      if (now >= session->next_check) {
        sessions_due.push_back(session);
        session->next_check = now + options_.session_check_interval;
      }
      next = std::min(next, session->next_check);
    }
    if (due.empty() && lost.empty() && sessions_due.empty()) {
      renewal_wake_at_ = next;
      renew_cv_.wait_until(lock.native(), next);
      renewal_wake_at_ = SteadyClock::time_point::min();  // awake: new leases are seen next round
      continue;
    }
    lock.unlock();
    for (auto& [state, reason, cause] : lost) mark_lost(state, reason, cause);
    // Progress is guaranteed: a state whose renewal failed got a later next_renew.
    for (auto& state : due) renew_one(state);
    for (auto& session : sessions_due) check_session(session);
    lock.lock();
  }
}

void ManagerCore::check_session(const std::shared_ptr<SessionState>& state) {
  bool alive;
  {
    service::MutexLock lock(state->handle_mutex);
    if (!state->handle) return;
    // A check still unanswered after kSessionCheckTime finds the session gone: its connection is
    // dropped, and the server ends the session's locks with it.
    const CallDeadlineScope call(SteadyClock::now() + kSessionCheckTime);
    alive = state->handle->verify();
  }
  if (alive) return;
  {
    service::MutexLock lock(mutex_);
    if (state->finished) return;
    state->finished = true;
    state->lost.store(true, std::memory_order_release);
    sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), state), sessions_.end());
  }
  metrics_.session_lost();
  {
    service::MutexLock lock(state->handle_mutex);
    state->handle.reset();
  }
  run_on_lost(state->on_lost, LostLease{state->name, 0, "the session holding the lock is gone (connection lost or swapped)"});
}

}  // namespace dblock::detail
