#include "manager_core.h"

#include <algorithm>
#include <utility>

#include "dblock/errors.h"
#include "dblock/lock_manager.h"
#include "dblock/service/call_deadline.h"
#include "internal.h"

namespace dblock::detail {

namespace {

using std::chrono::milliseconds;

ManagerOptions validated(ManagerOptions options) {
  validate_table_prefix(options.table_prefix);
  if (!options.holder.empty()) validate_holder(options.holder);
  if (options.default_ttl <= milliseconds::zero()) throw UsageError("default_ttl must be positive");
  if (options.default_ttl < kMinTtl) {
    throw UsageError("default_ttl is below the minimum of " + std::to_string(kMinTtl.count()) + " ms");
  }
  if (options.default_ttl > kMaxTtl) throw UsageError("default_ttl exceeds the 7-day limit");
  if (options.renew_interval < milliseconds::zero()) throw UsageError("renew_interval must not be negative");
  if (options.drift_margin < milliseconds::zero()) throw UsageError("drift_margin must not be negative");
  if (options.min_poll <= milliseconds::zero() || options.max_poll < options.min_poll) {
    throw UsageError("poll intervals must satisfy 0 < min_poll <= max_poll");
  }
  if (options.reaper_batch <= 0) throw UsageError("reaper_batch must be positive");
  if (options.reaper_interval <= milliseconds::zero()) throw UsageError("reaper_interval must be positive");
  if (options.session_check_interval <= milliseconds::zero()) {
    throw UsageError("session_check_interval must be positive");
  }
  if (options.call_timeout <= milliseconds::zero()) throw UsageError("call_timeout must be positive");
  if (options.call_timeout > std::chrono::hours(24)) throw UsageError("call_timeout must be at most a day");
  return options;
}

LeaseService& require(const std::unique_ptr<LeaseService>& service) {
  if (!service) throw UsageError("LockManager needs a lock service");
  return *service;
}

}  // namespace

ManagerCore::ManagerCore(std::unique_ptr<LeaseService> service, ManagerOptions options)
    : options_(validated(std::move(options))),
      holder_(options_.holder.empty() ? default_holder() : options_.holder),
      traits_(require(service).traits()),
      wait_strategies_(make_wait_strategies(*service, board_, options_)),
      service_(std::move(service)) {
  for (const std::string& missing : service_->degraded()) report(DegradedError(missing, std::string(service_->name())));
  Maintenance* maintenance = service_->maintenance();
  if (maintenance != nullptr && options_.reaper) {
    reaper_ = std::make_unique<Reaper>(*maintenance, metrics_, options_.reaper_interval,
                                       static_cast<std::size_t>(options_.reaper_batch),
                                       [this](const Error& e) { report(e); });
  }
}

ManagerCore::~ManagerCore() { shutdown(); }

SteadyClock::time_point ManagerCore::migration_deadline() const {
  // An open's own deadline (open(url, options, deadline)) bounds it too.
  return std::min(call_deadline(), SteadyClock::now() + std::max<SteadyClock::duration>(options_.call_timeout, kMinMigrationTime));
}

SteadyClock::time_point ManagerCore::call_timeout_after(SteadyClock::time_point end) const {
  const auto more = options_.call_timeout;
  if (end == SteadyClock::time_point::max() || SteadyClock::time_point::max() - end <= more) {
    return SteadyClock::time_point::max();
  }
  return end + more;
}

void ManagerCore::start() {
  if (Maintenance* maintenance = service_->maintenance()) {
    const CallDeadlineScope call(migration_deadline());
    maintenance->migrate(options_.auto_migrate);
  }
  if (WakeEvents* events = service_->wake_events()) {
    events->set_listener([this](const WakeEvents::Event& event) { on_event(event); });
  }
  renewal_thread_ = std::thread([this] { renewal_loop(); });
  if (reaper_) reaper_->start();
}

void ManagerCore::shutdown() noexcept {
  std::vector<std::shared_ptr<LeaseState>> still_held;
  std::vector<std::shared_ptr<SessionState>> sessions;
  {
    service::MutexLock lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [name, states] : active_) {
      for (auto& state : states) {
        state->finished = true;
        state->shut_down.store(true, std::memory_order_release);
        still_held.push_back(state);
      }
    }
    active_.clear();
    for (auto& session : sessions_) {
      session->finished = true;
      session->shut_down.store(true, std::memory_order_release);
    }
    sessions.swap(sessions_);
  }
  board_.stop();
  renew_cv_.notify_all();
  if (renewal_thread_.joinable()) renewal_thread_.join();
  if (reaper_) reaper_->stop();
  if (WakeEvents* events = service_->wake_events()) {
    try {
      events->set_listener(nullptr);
    } catch (...) {
    }
  }
  // The holders' callbacks run here, on the thread that shuts the manager down, after the release.
  static const std::string kReason = "released by the LockManager's shutdown";
  for (auto& session : sessions) {
    session->lost.store(true, std::memory_order_release);
    {
      service::MutexLock lock(session->handle_mutex);
      session->handle.reset();  // releases, best effort
    }
    run_on_lost(session->on_lost, LostLease{session->name, 0, kReason});
  }
  for (auto& state : still_held) {
    metrics_.lost(EngineMetrics::Loss::kShutdown);
    state->lost.store(true, std::memory_order_release);
    try {
      release_on_service(state);
    } catch (const Error& e) {
      report(e);
    } catch (...) {
    }
    run_on_lost(state->on_lost, LostLease{state->name, state->fence, kReason});
  }
}

void ManagerCore::run_on_lost(const std::function<void(const LostLease&)>& on_lost, const LostLease& lost) noexcept {
  if (!on_lost) return;
  try {
    on_lost(lost);
  } catch (...) {
    // A throwing callback must not kill the thread that runs it.
  }
}

milliseconds ManagerCore::drift_margin(milliseconds ttl) const {
  if (options_.drift_margin > milliseconds::zero()) return std::min(options_.drift_margin, ttl / 2);
  return ttl / 100 + milliseconds(2);
}

void ManagerCore::report(const Error& error) noexcept {
  if (!options_.on_background_error) return;
  try {
    options_.on_background_error(error);
  } catch (...) {
  }
}

void ManagerCore::remove_active_locked(const std::shared_ptr<LeaseState>& state) {
  auto it = active_.find(state->name);
  if (it == active_.end()) return;
  auto& v = it->second;
  v.erase(std::remove(v.begin(), v.end(), state), v.end());
  if (v.empty()) active_.erase(it);
}

bool ManagerCore::release_on_service(const std::shared_ptr<LeaseState>& state) {
  const CallDeadlineScope deadline(state->safe_until_steady());
  return service_->release(state->key());
}

ReleaseResult ManagerCore::release_hold(const std::shared_ptr<LeaseState>& state) {
  const ReleaseResult result = release_hold_uncounted(state);
  if (result != ReleaseResult::kShutDown && state->holds.load() == 0) {
    metrics_.released(result, SteadyClock::now() - state->granted_at);
  }
  return result;
}

ReleaseResult ManagerCore::release_hold_uncounted(const std::shared_ptr<LeaseState>& state) {
  bool locally_lost;
  {
    service::MutexLock lock(mutex_);
    if (state->shut_down.load()) return ReleaseResult::kShutDown;
    if (state->holds.load() > 1) {
      state->holds.fetch_sub(1);
      return state->is_lost() ? ReleaseResult::kAlreadyLost : ReleaseResult::kReleased;
    }
    state->holds.store(0);
    if (state->finished) {  // lost: renewal refused, safe-until passed, a lost event
      if (std::exchange(state->drop_owed, false)) drop_on_service(state);
      return ReleaseResult::kAlreadyLost;
    }
    state->finished = true;
    locally_lost = state->is_lost();
    remove_active_locked(state);
  }
  ReleaseResult result;
  try {
    const bool released = release_on_service(state);
    result = released && !locally_lost ? ReleaseResult::kReleased : ReleaseResult::kAlreadyLost;
  } catch (const Error& e) {
    report(e);
    result = ReleaseResult::kInDoubt;
  }
  state->lost.store(true, std::memory_order_release);  // the handle must not be trusted any more
  board_.bump(state->name);
  return result;
}

void ManagerCore::mark_lost(const std::shared_ptr<LeaseState>& state, const std::string& reason,
                            EngineMetrics::Loss cause) {
  {
    service::MutexLock lock(mutex_);
    if (state->finished) return;  // released meanwhile: a refused renewal is expected then
    state->finished = true;
    state->drop_owed = true;  // the holder still has it: nothing is given away before it lets go
    state->lost.store(true, std::memory_order_release);
    remove_active_locked(state);
  }
  metrics_.lost(cause);
  board_.bump(state->name);
  run_on_lost(state->on_lost, LostLease{state->name, state->fence, reason});
}

void ManagerCore::drop_on_service(const std::shared_ptr<LeaseState>& state) noexcept {
  const CallDeadlineScope call(SteadyClock::now());  // the least time a call gets
  service_->lease_lost(state->key());
}

void ManagerCore::learned_lost(const std::shared_ptr<LeaseState>& state, const std::string& reason) {
  {
    service::MutexLock lock(mutex_);
    if (state->finished) return;
    state->lost.store(true, std::memory_order_release);
    if (state->lost_reason.empty()) {
      state->lost_reason = reason;
      state->lost_cause = EngineMetrics::Loss::kGuard;
    }
    renew_cv_.notify_all();
  }
  board_.bump(state->name);
}

void ManagerCore::on_event(const WakeEvents::Event& event) {
  const std::string name(event.name);
  switch (event.kind) {
    case WakeEvents::Kind::kGranted:
      if (event.grant) board_.post_grant(name, *event.grant);
      return;
    case WakeEvents::Kind::kReleased:
      board_.bump(name, event.next_ticket);
      return;
    case WakeEvents::Kind::kLost: {
      if (event.secret == nullptr) return;
      service::MutexLock lock(mutex_);
      auto it = active_.find(name);
      if (it == active_.end()) return;
      for (auto& state : it->second) {
        // The renewal thread marks it lost (the callback runs there, as for every loss).
        if (state->secret != *event.secret) continue;
        state->lost_reason = "the service reported the lease lost: " + std::string(event.reason);
        state->lost_cause = EngineMetrics::Loss::kServiceEvent;
      }
      renew_cv_.notify_all();
      return;
    }
  }
}

MetricsSnapshot ManagerCore::metrics_snapshot() {
  MetricsSnapshot snapshot = metrics_.snapshot(std::string(service_->name()));
  service::MutexLock lock(mutex_);
  for (const auto& [name, states] : active_) snapshot.leases_held += static_cast<std::int64_t>(states.size());
  snapshot.session_locks_held = static_cast<std::int64_t>(sessions_.size());
  return snapshot;
}

}  // namespace dblock::detail
