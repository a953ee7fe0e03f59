// Acquiring a lease: validate, re-enter, then attempt / wait for a turn / attempt ... until the
// service grants it or the deadline passes, then publish it to the renewal thread.
#include <algorithm>
#include <functional>
#include <optional>
#include <stop_token>
#include <thread>

#include "acquire_rules.h"
#include "dblock/errors.h"
#include "dblock/lock_manager.h"
#include "dblock/service/call_deadline.h"
#include "internal.h"
#include "manager_core.h"

namespace dblock::detail {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

namespace {

constexpr milliseconds kMaxCallTime{30'000};  // see Acquirer::call_deadline_for_wait

// A scheduled job's TTL bounds its window when its host dies, so it is never shorter than
// hold_at_least: the default TTL grows to it; a shorter TTL given is a UsageError.
milliseconds scheduled_ttl(const AcquireOptions& options, milliseconds ttl) {
  if (options.hold_at_least <= ttl) return ttl;
  if (options.ttl.count() == 0) return options.hold_at_least;
  throw UsageError("hold_at_least (" + std::to_string(options.hold_at_least.count()) + " ms) exceeds the TTL (" +
                   std::to_string(ttl.count()) + " ms): a host that dies mid-job would free the window early");
}

AcquireResult from_grant(const LeaseGrant& grant) {
  AcquireResult result;
  result.acquired = true;
  result.fence = grant.fence;
  result.expires_at_us = grant.expires_at_us;
  result.granted_for = grant.granted_for;
  result.tag = grant.tag;
  return result;
}

}  // namespace

milliseconds checked_ttl(const AcquireOptions& options, milliseconds default_ttl) {
  const milliseconds ttl = options.ttl.count() == 0 ? default_ttl : options.ttl;
  if (ttl <= milliseconds::zero()) throw UsageError("TTL must be positive, got " + std::to_string(ttl.count()) + " ms");
  if (ttl < kMinTtl) {
    throw UsageError("TTL " + std::to_string(ttl.count()) + " ms is below the minimum of " +
                     std::to_string(kMinTtl.count()) + " ms");
  }
  if (ttl > kMaxTtl) throw UsageError("TTL exceeds the 7-day limit");
  return ttl;
}

SteadyClock::time_point bounded_call_deadline(SteadyClock::time_point deadline) {
  const auto now = SteadyClock::now();
  return deadline - now > kMaxCallTime ? now + kMaxCallTime : deadline;
}

// One acquire call that may wait, on the calling thread's stack: attempts, waits for a turn
// between them (the manager's wait strategies), and on the way out leaves the service's line and
// the wake board unless it acquired.
class Acquirer {
 public:
  // `fair`: wait in the service's queue of waiters, where it has one. `stop`: the caller's
  // cancellation (AcquireOptions::stop).
  Acquirer(ManagerCore& core, std::shared_ptr<LeaseState> state, SteadyClock::time_point deadline, bool try_once,
           bool fair, std::stop_token stop)
      : core_(core),
        state_(std::move(state)),
        deadline_(deadline),
        try_once_(try_once),
        queue_(try_once || !fair ? nullptr : core.service_->fair_queue()),
        events_(try_once ? nullptr : core.service_->wake_events()),
        grants_(events_ == nullptr ? nullptr : core.service_->grant_events()),
        // A queue entry outlives a few of the waiter's longest pauses.
        queue_hold_(std::max(milliseconds(1000), core.options_.max_poll * 4)),
        wait_{state_->name, state_->secret} {
    request_.name = state_->name;
    request_.mode = state_->mode;
    request_.permits = state_->permits;
    request_.hold_at_least = state_->hold_at_least;
    request_.ttl = state_->ttl;
    request_.secret = &state_->secret;
    request_.holder = core.holder_;
    wait_.deadline = deadline;
    wait_.refresh_at = SteadyClock::time_point::max();
    wait_.backoff = core.options_.min_poll;
    wait_.stop = std::move(stop);
  }

  ~Acquirer() {
    // Clean-up is given the least time a call gets, whatever is left of the wait. A wait whose
    // last step met a fault does not leave the line: the call would likely block on the same
    // fault past the caller's deadline, and the entry expires by itself (queue_hold_).
    const CallDeadlineScope call(SteadyClock::now());
    if (in_line_ && !acquired_ && !last_step_faulted_) {
      try {
        queue_->leave(state_->name, state_->secret);
      } catch (const Error& e) {
        core_.report(e);
      } catch (...) {
      }
    }
    if (held_late_ && !acquired_) {
      // Granted, but answered after its safe time: never handed out, so nothing ran on it; the
      // service is asked to free it (compare-and-delete) rather than leave it to its expiry.
      try {
        core_.release_on_service(state_);
      } catch (const Error& e) {
        core_.report(e);
      } catch (...) {
      }
    }
    if (subscribed_) {
      try {
        events_->unsubscribe(state_->name);
      } catch (...) {
      }
    }
    if (on_board_) core_.board_.leave(state_->name);
  }

  Acquirer(const Acquirer&) = delete;
  Acquirer& operator=(const Acquirer&) = delete;

  std::optional<Lease> run() {
    if (!try_once_) enter();
    // A stop request wakes this waiter (and the name's other waiters here, who wait on).
    std::optional<std::stop_callback<std::function<void()>>> on_stop;
    if (!try_once_ && wait_.stop.stop_possible()) {
      on_stop.emplace(wait_.stop, std::function<void()>([this] { core_.board_.bump(state_->name); }));
    }
    for (int faults = 0;;) {
      if (riding_faults(faults, [this] { return attempt(); })) {
        acquired_ = true;
        return core_.publish(state_);
      }
      if (try_once_ || stopped() || SteadyClock::now() >= deadline_) return std::nullopt;
      if (held_late_) continue;  // the service still holds it for this secret: ask again at once
      riding_faults(faults, [this] {
        wait_turn();
        return true;
      });
      if (stopped()) return std::nullopt;
    }
  }

 private:
  bool stopped() const { return wait_.stop.stop_requested(); }

  // Registers on the wake board and with the service's events before the first attempt, so that
  // a release between the attempt and the wait is not missed.
  void enter() {
    core_.board_.enter(state_->name);
    on_board_ = true;
    if (events_ != nullptr) {
      events_->subscribe(state_->name);
      subscribed_ = true;
    }
  }

  // `step()` (an attempt, or a wait for the turn); while waiting, a transient fault is retried after
  // a pause (50 ms doubling to 800 ms, jittered, never past the deadline) until the deadline, then
  // rethrown: the error that kept the waiter from acquiring. `faults` counts the faults in a row.
  template <typename Step>
  bool riding_faults(int& faults, Step step) {
    for (;;) {
      try {
        const bool result = step();
        faults = 0;
        last_step_faulted_ = false;
        return result;
      } catch (const Error& e) {
        last_step_faulted_ = is_transient(e);
        if (try_once_ || !is_transient(e) || SteadyClock::now() >= deadline_) throw;
        const auto pause = jittered(milliseconds(50) * (1 << std::min(faults++, 4)));
        std::uint64_t seen = core_.board_.generation(state_->name);
        core_.board_.wait(state_->name, seen, std::min(deadline_, SteadyClock::now() + pause));
        if (stopped()) return false;  // run() returns empty
      }
    }
  }

  // One attempt: a grant the last wait brought, else the service (in line when it queues). Every
  // service call in it is bounded by the caller's deadline (at least kMinCallTime).
  bool attempt() {
    const CallDeadlineScope call(call_deadline_for_wait());
    if (!try_once_) wait_.generation = core_.board_.generation(state_->name);
    Instant sent_at = Instant::now();
    std::optional<AcquireResult> granted = take_grant(sent_at);
    last_sent_at_ = sent_at;
    AcquireResult result;
    if (granted) {
      result = *granted;
    } else if (queue_ != nullptr) {
      core_.metrics_.attempt(kind_);
      in_line_ = true;
      FairQueue::Attempt in_line = queue_->attempt_in_line(request_, FairQueue::Place{wait_.ticket, queue_hold_});
      result = in_line.result;
      if (in_line.ticket != 0) wait_.ticket = in_line.ticket;
      wait_.position = in_line.position;
      wait_.refresh_at = sent_at.steady + queue_hold_ / 3;
    } else {
      core_.metrics_.attempt(kind_);
      result = core_.service_->try_acquire(request_);
    }
    held_late_ = false;
    if (result.acquired) {
      core_.record(*state_, result, sent_at);
      // A grant whose answer came after its safe-until (a stalled server or path) is never handed
      // to the caller: whatever it runs could overlap the next holder. Within the wait the next
      // attempt, with the same secret, takes it again with a fresh safe-until.
      held_late_ = state_->is_lost();
      return !held_late_;
    }
    wait_.holder_remaining = result.holder_remaining;
    return false;
  }

  // The lease a release handed this waiter, if the last wait brought one. The service's own reply
  // (a native wait) is the lease: the grant was made after the last attempt began (that attempt,
  // refused, would otherwise have found the lease its own), so that attempt's send time is a safe
  // start for its time. An event is a claim anyone could send: the service confirms it first, and
  // the lease's time starts when the confirmation was sent (`sent_at`). Empty: attempt as usual.
  std::optional<AcquireResult> take_grant(Instant& sent_at) {
    if (!wait_.grant) return std::nullopt;
    const LeaseGrant claimed = *wait_.grant;
    wait_.grant.reset();
    if (wait_.grant_confirmed) {
      sent_at = last_sent_at_;
      return from_grant(claimed);
    }
    if (grants_ == nullptr) return std::nullopt;  // a grant this service never posts: forged
    std::optional<LeaseGrant> confirmed = grants_->confirm_grant(state_->name, *request_.secret, claimed);
    if (!confirmed) return std::nullopt;
    return from_grant(*confirmed);
  }

  SteadyClock::time_point call_deadline_for_wait() const { return bounded_call_deadline(deadline_); }

  void wait_turn() {
    const CallDeadlineScope call(call_deadline_for_wait());
    for (const auto& strategy : core_.wait_strategies_) {
      if (strategy->wait(wait_) == WaitResult::kAttempt) return;
    }
  }

  ManagerCore& core_;
  const std::shared_ptr<LeaseState> state_;
  const SteadyClock::time_point deadline_;
  const bool try_once_;
  FairQueue* const queue_;    // null: single attempt, or the service keeps no line
  WakeEvents* const events_;   // null: single attempt, or the service pushes no events
  GrantEvents* const grants_;  // null: no events, or the service posts no grants
  const milliseconds queue_hold_;
  const EngineMetrics::Kind kind_ = EngineMetrics::kind_of(state_->mode, state_->permits);
  AcquireRequest request_;
  WaitContext wait_;
  Instant last_sent_at_{};
  bool on_board_ = false;
  bool subscribed_ = false;
  bool in_line_ = false;
  bool acquired_ = false;
  bool last_step_faulted_ = false;  // the last attempt or wait failed with a transient fault
  bool held_late_ = false;  // the last attempt was granted past its safe-until (not handed out)
};

void ManagerCore::check_mode(const AcquireOptions& options) const {
  const std::string service(service_->name());
  if (options.permits != 0) {
    if (options.permits < 0 || options.permits > kMaxPermits) {
      throw UsageError("permits must be from 1 to " + std::to_string(kMaxPermits) + ", got " +
                       std::to_string(options.permits));
    }
    if (options.mode != LockMode::kExclusive) {
      throw UsageError("permits and mode=shared do not combine: a permit is a shared lease of its own");
    }
    if (options.hold_at_least != milliseconds::zero()) {
      throw UsageError("permits and hold_at_least do not combine: a scheduled job holds one exclusive lease");
    }
    if (!traits_.permits) throw UnsupportedError("semaphores (permits) are not supported by the " + service + " backend");
    return;
  }
  if (options.mode == LockMode::kShared && !traits_.shared_leases) {
    throw UnsupportedError("shared leases are not supported by the " + service + " backend");
  }
  if (options.hold_at_least != milliseconds::zero()) {
    if (options.hold_at_least < milliseconds::zero()) throw UsageError("hold_at_least must be positive");
    if (options.hold_at_least > kMaxTtl) throw UsageError("hold_at_least exceeds the 7-day limit");
    if (options.mode != LockMode::kExclusive) throw UsageError("hold_at_least is for exclusive leases, not mode=shared");
    if (!traits_.hold_at_least) {
      throw UnsupportedError("hold_at_least (scheduled jobs) is not supported by the " + service + " backend");
    }
  }
}

std::optional<Lease> ManagerCore::acquire(std::string_view name, SteadyClock::time_point deadline, bool try_once,
                                          const AcquireOptions& options) {
  // A waiter keeps the engine alive, through the counting after the wait too: a manager destroyed
  // meanwhile ends the wait with a UsageError.
  const std::shared_ptr<ManagerCore> keep_alive = shared_from_this();
  const auto kind = EngineMetrics::kind_of(options.mode, options.permits);
  const auto called_at = SteadyClock::now();
  std::optional<Lease> lease;
  try {
    lease = acquire_uncounted(name, deadline, try_once, options);
  } catch (...) {
    metrics_.acquire_ended(kind, EngineMetrics::Outcome::kError);
    throw;
  }
  if (lease) {
    metrics_.acquire_ended(kind, EngineMetrics::Outcome::kAcquired);
    metrics_.waited(SteadyClock::now() - called_at);
  } else {
    metrics_.acquire_ended(kind, try_once ? EngineMetrics::Outcome::kRefused : EngineMetrics::Outcome::kTimedOut);
  }
  return lease;
}

std::optional<Lease> ManagerCore::acquire_uncounted(std::string_view name, SteadyClock::time_point deadline,
                                                    bool try_once, const AcquireOptions& options) {
  validate_lock_name(name);
  check_mode(options);
  const milliseconds ttl = scheduled_ttl(options, checked_ttl(options, options_.default_ttl));
  const std::string key(name);
  if (std::optional<Lease> again; reenter(key, try_once, options, again)) return again;
  Acquirer acquirer(*this, new_lease_state(key, ttl, options), deadline, try_once,
                    options.fair.value_or(options_.fair), options.stop);
  return acquirer.run();
}

void ManagerCore::record(LeaseState& s, const AcquireResult& result, Instant sent_at) {
  // The service may hold the lease for less than the TTL (a grant until the waiter's queue entry
  // would have expired, a short session): timing() takes the shorter.
  const Timing t = timing(s, result.granted_for, sent_at);
  s.fence = result.fence;
  s.tag = result.tag;
  s.granted_at = sent_at.steady;
  s.expires_at_us.store(result.expires_at_us);
  s.set_safe_until(t.safe_until);
  s.next_renew = t.next_renew;
}

ManagerCore::Timing ManagerCore::timing(const LeaseState& s, std::chrono::microseconds granted_for,
                                        const Instant& sent_at) const {
  const milliseconds held_for = std::min(s.ttl, duration_cast<milliseconds>(granted_for));
  return Timing{held_for, sent_at.boot + held_for - drift_margin(held_for),
                sent_at.steady + std::min(s.renew_interval, std::max(held_for / 3, milliseconds(1)))};
}

std::shared_ptr<LeaseState> ManagerCore::new_lease_state(const std::string& name, milliseconds ttl,
                                                         const AcquireOptions& options) const {
  auto state = std::make_shared<LeaseState>();
  state->name = name;
  state->mode = options.permits != 0 ? LockMode::kShared : options.mode;
  state->permits = options.permits;
  state->hold_at_least = options.hold_at_least;
  state->ttl = ttl;
  state->secret = OwnerSecret::generate();
  state->renew_interval = (options_.renew_interval > milliseconds::zero() && options_.renew_interval < ttl)
                              ? options_.renew_interval
                              : std::max(ttl / 3, milliseconds(1));
  state->on_lost = options.on_lost;
  state->owner_thread = std::this_thread::get_id();
  state->reentrant = options.reentrant.value_or(options_.reentrant);
  return state;
}

bool ManagerCore::reenter(const std::string& name, bool try_once, const AcquireOptions& options,
                          std::optional<Lease>& again) {
  const bool reentrant = options.reentrant.value_or(options_.reentrant);
  const bool exclusive = options.mode == LockMode::kExclusive && options.permits == 0;
  const auto self = std::this_thread::get_id();
  service::MutexLock lock(mutex_);
  if (stopping_) throw UsageError("LockManager is shutting down");
  auto it = active_.find(name);
  if (it == active_.end()) return false;
  for (auto& state : it->second) {
    if (state->owner_thread != self || state->is_lost()) continue;
    const bool held_exclusive = state->mode == LockMode::kExclusive;
    if (exclusive && held_exclusive && reentrant && state->reentrant) {
      state->holds.fetch_add(1);
      again = Lease(shared_from_this(), state);
      return true;
    }
    if (try_once) return true;  // refused: `again` stays empty
    const char* why = !held_exclusive ? (state->permits != 0 ? "it holds a permit of it" : "it holds a shared lease of it")
                      : !exclusive     ? "a shared lease or permit cannot join an exclusive hold"
                      : !reentrant     ? "enable AcquireOptions::reentrant to count holds"
                                       : "the hold it has was not taken as reentrant";
    throw UsageError("lock '" + name + "' is already held by this thread through this manager; waiting "
                     "would deadlock (" + why + ")");
  }
  return false;
}

Lease ManagerCore::publish(const std::shared_ptr<LeaseState>& state) {
  bool wake_renewer = false;
  bool shutting_down = false;
  {
    service::MutexLock lock(mutex_);
    shutting_down = stopping_;
    if (shutting_down) {
      state->finished = true;
      state->lost.store(true);
    } else {
      active_[state->name].push_back(state);
      // Wake the renewal thread only if this lease is due before its planned wake-up: on a busy
      // manager a wake per acquire would cost two context switches each.
      wake_renewer = state->next_renew < renewal_wake_at_;
    }
  }
  if (wake_renewer) renew_cv_.notify_all();
  // Decided under the lock: once the lease is in active_, `finished` belongs to the renewal
  // thread (it may already have marked the lease lost), so it must not be read here.
  if (shutting_down) {
    try {
      release_on_service(state);
    } catch (...) {
    }
    throw UsageError("LockManager is shutting down");
  }
  return Lease(shared_from_this(), state);
}

}  // namespace dblock::detail
