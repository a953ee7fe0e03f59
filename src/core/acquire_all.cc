// acquire_all's first attempt: every name in one service call (MultiAcquire), all or none.
#include <algorithm>
#include <mutex>
#include <thread>

#include "acquire_rules.h"
#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"
#include "internal.h"
#include "manager_core.h"

namespace dblock::detail {

using std::chrono::milliseconds;

std::optional<std::vector<Lease>> ManagerCore::acquire_all_at_once(const std::vector<std::string>& names,
                                                                   SteadyClock::time_point deadline, bool try_once,
                                                                   const AcquireOptions& options) {
  MultiAcquire* multi = service_->multi_acquire();
  if (multi == nullptr || holds_any(names)) return std::nullopt;
  const milliseconds ttl = checked_ttl(options, options_.default_ttl);
  // acquire() says why a mode is refused; permits and scheduled jobs take one name at a time.
  if (options.mode == LockMode::kShared && !traits_.shared_leases) return std::nullopt;
  if (options.permits != 0 || options.hold_at_least != milliseconds::zero()) return std::nullopt;
  const std::shared_ptr<ManagerCore> keep_alive = shared_from_this();
  std::vector<std::shared_ptr<LeaseState>> states;
  std::vector<AcquireRequest> requests;
  for (const std::string& name : names) {
    states.push_back(new_lease_state(name, ttl, options));
    requests.push_back(AcquireRequest{states.back()->name, options.mode, ttl, &states.back()->secret, holder_});
  }
  const auto kind = EngineMetrics::kind_of(options.mode, 0);
  const auto called_at = SteadyClock::now();
  const auto count = [&](EngineMetrics::Outcome outcome) {
    for (std::size_t i = 0; i < names.size(); ++i) metrics_.acquire_ended(kind, outcome);
  };
  std::vector<Lease> leases;
  try {
    Instant sent_at;
    const std::vector<AcquireResult> results = acquire_all_call(*multi, requests, deadline, try_once, sent_at);
    if (results.size() != states.size()) {
      if (!try_once) return std::nullopt;  // taken one by one, each counted by acquire()
      count(EngineMetrics::Outcome::kRefused);
      return std::vector<Lease>{};
    }
    for (std::size_t i = 0; i < states.size(); ++i) record(*states[i], results[i], sent_at);
    if (answered_late(states)) {
      if (!try_once) return std::nullopt;  // taken one by one, within the wait
      count(EngineMetrics::Outcome::kRefused);
      return std::vector<Lease>{};
    }
    leases = publish_all(states);
  } catch (...) {
    count(EngineMetrics::Outcome::kError);
    throw;
  }
  count(EngineMetrics::Outcome::kAcquired);
  const auto waited = SteadyClock::now() - called_at;
  for (std::size_t i = 0; i < leases.size(); ++i) metrics_.waited(waited);
  return leases;
}

std::vector<AcquireResult> ManagerCore::acquire_all_call(MultiAcquire& multi, const std::vector<AcquireRequest>& requests,
                                                         SteadyClock::time_point deadline, bool try_once,
                                                         Instant& sent_at) {
  // While waiting, a transient fault is retried with the same secrets until the deadline: a call
  // whose reply was lost may have taken every name, and only those secrets find them their own.
  for (int faults = 0;; ++faults) {
    {
      service::MutexLock lock(mutex_);
      if (stopping_) throw UsageError("LockManager is shutting down");
    }
    try {
      const CallDeadlineScope call(bounded_call_deadline(deadline));
      sent_at = Instant::now();
      for (const AcquireRequest& request : requests) metrics_.attempt(EngineMetrics::kind_of(request.mode, 0));
      return multi.try_acquire_all(requests);
    } catch (const Error& e) {
      if (try_once || !is_transient(e) || SteadyClock::now() >= deadline) throw;
      std::this_thread::sleep_for(refusal_pause(faults, deadline));
    }
  }
}

std::vector<Lease> ManagerCore::publish_all(const std::vector<std::shared_ptr<LeaseState>>& states) {
  std::vector<Lease> leases;
  for (std::size_t i = 0; i < states.size(); ++i) {
    try {
      leases.push_back(publish(states[i]));  // releases states[i] and throws when shutting down
    } catch (...) {
      // The leases published are released by their handles; the rest here, best effort.
      for (std::size_t j = i + 1; j < states.size(); ++j) {
        try {
          release_on_service(states[j]);
        } catch (...) {
        }
      }
      throw;
    }
  }
  return leases;
}

bool ManagerCore::answered_late(const std::vector<std::shared_ptr<LeaseState>>& states) {
  if (std::none_of(states.begin(), states.end(), [](const auto& s) { return s->is_lost(); })) return false;
  for (const auto& state : states) {
    try {
      release_on_service(state);
    } catch (const Error& e) {
      report(e);
    } catch (...) {
    }
  }
  return true;
}

bool ManagerCore::holds_any(const std::vector<std::string>& names) {
  const auto self = std::this_thread::get_id();
  service::MutexLock lock(mutex_);
  for (const std::string& name : names) {
    auto it = active_.find(name);
    if (it == active_.end()) continue;
    for (const auto& state : it->second) {
      if (state->owner_thread == self && !state->is_lost()) return true;
    }
  }
  return false;
}

}  // namespace dblock::detail
