#include "manager_core.h"

#include <algorithm>

#include "dblock/errors.h"
#include "dblock/lock_manager.h"
#include "internal.h"

namespace dblock::detail {

namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

std::int64_t to_ns(SteadyClock::time_point t) {
  return duration_cast<nanoseconds>(t.time_since_epoch()).count();
}

ManagerOptions validated(ManagerOptions options) {
  validate_table_prefix(options.table_prefix);
  if (options.default_ttl <= milliseconds::zero()) throw UsageError("default_ttl must be positive");
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
  return options;
}

}  // namespace

ManagerCore::ManagerCore(std::unique_ptr<Backend> backend, ManagerOptions options)
    : options_(validated(std::move(options))),
      holder_(options_.holder.empty() ? default_holder() : options_.holder),
      backend_(std::move(backend)) {
  if (!backend_) throw UsageError("LockManager needs a backend");
}

ManagerCore::~ManagerCore() { shutdown(); }

void ManagerCore::start() {
  backend_->migrate(options_.auto_migrate);
  // The listener only needs the name; it never blocks on the backend.
  backend_->set_release_listener([this](const Backend::ReleaseEvent& event) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::string name(event.name);
    if (event.grant) {
      auto it = waiting_.find(name);
      // One slot: until the grantee takes its grant, no other grant of the name can follow (the
      // grantee holds the name). A grant meant for another process's waiter just passes through.
      if (it != waiting_.end()) it->second.grant = event.grant;
    }
    bump_locked(name, event.next_ticket);
  });
  renewal_thread_ = std::thread([this] { renewal_loop(); });
  if (options_.reaper) reaper_thread_ = std::thread([this] { reaper_loop(); });
}

void ManagerCore::shutdown() noexcept {
  std::vector<std::shared_ptr<LeaseState>> still_held;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
    for (auto& [name, states] : active_) {
      for (auto& state : states) {
        state->finished = true;
        still_held.push_back(state);
      }
    }
    active_.clear();
    for (auto& session : sessions_) session->finished = true;
  }
  std::vector<std::shared_ptr<SessionState>> sessions;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    sessions.swap(sessions_);
  }
  renew_cv_.notify_all();
  reaper_cv_.notify_all();
  wait_cv_.notify_all();
  if (renewal_thread_.joinable()) renewal_thread_.join();
  if (reaper_thread_.joinable()) reaper_thread_.join();
  try {
    backend_->set_release_listener(nullptr);
  } catch (...) {
  }
  for (auto& session : sessions) {
    session->lost.store(true, std::memory_order_release);
    std::lock_guard<std::mutex> lock(session->handle_mutex);
    session->handle.reset();  // releases, best effort
  }
  for (auto& state : still_held) {
    state->lost.store(true, std::memory_order_release);
    try {
      backend_->release(state->name, state->mode, state->secret, state->release_hint());
    } catch (const Error& e) {
      report(e);
    } catch (...) {
    }
  }
}

std::chrono::milliseconds ManagerCore::drift_margin(milliseconds ttl) const {
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

void ManagerCore::bump_locked(const std::string& name, std::int64_t next_ticket) {
  auto it = waiting_.find(name);
  if (it == waiting_.end()) return;
  ++it->second.generation;
  it->second.next_ticket = next_ticket;
  wait_cv_.notify_all();
}

void ManagerCore::remove_active_locked(const std::shared_ptr<LeaseState>& state) {
  auto it = active_.find(state->name);
  if (it == active_.end()) return;
  auto& v = it->second;
  v.erase(std::remove(v.begin(), v.end(), state), v.end());
  if (v.empty()) active_.erase(it);
}

std::optional<Lease> ManagerCore::acquire(std::string_view name, SteadyClock::time_point deadline,
                                          bool try_once, const AcquireOptions& options) {
  validate_lock_name(name);
  milliseconds ttl = options.ttl.count() == 0 ? options_.default_ttl : options.ttl;
  if (ttl <= milliseconds::zero()) throw UsageError("TTL must be positive, got " + std::to_string(ttl.count()) + " ms");
  if (ttl > kMaxTtl) throw UsageError("TTL exceeds the 7-day limit");
  if (options.mode == LockMode::kShared && !backend_->capabilities().shared_leases) {
    throw UnsupportedError("shared leases are not supported by the " + std::string(backend_->name()) + " backend");
  }
  const bool reentrant = options.reentrant.value_or(options_.reentrant);
  const std::string key(name);
  const auto self = std::this_thread::get_id();

  // Reentrancy and self-deadlock detection, both per thread and per manager.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopping_) throw UsageError("LockManager is shutting down");
    auto it = active_.find(key);
    if (it != active_.end()) {
      for (auto& state : it->second) {
        if (state->owner_thread != self || state->is_lost()) continue;
        if (state->mode == LockMode::kExclusive && options.mode == LockMode::kExclusive && reentrant &&
            state->reentrant) {
          state->holds.fetch_add(1);
          return Lease(shared_from_this(), state);
        }
        if (state->mode == LockMode::kExclusive && !try_once) {
          throw UsageError("lock '" + key + "' is already held by this thread through this manager; waiting "
                           "would deadlock (enable AcquireOptions::reentrant to count holds)");
        }
      }
    }
  }

  auto state = std::make_shared<LeaseState>();
  state->name = key;
  state->mode = options.mode;
  state->secret = OwnerSecret::generate();
  state->ttl = ttl;
  state->renew_interval = (options_.renew_interval > milliseconds::zero() && options_.renew_interval < ttl)
                              ? options_.renew_interval
                              : std::max(ttl / 3, milliseconds(1));
  state->on_lost = options.on_lost;
  state->owner_thread = self;
  state->reentrant = reentrant;

  AcquireRequest request;
  request.name = key;
  request.mode = options.mode;
  request.ttl = ttl;
  request.secret = &state->secret;
  request.holder = holder_;
  request.queue = !try_once;
  request.queue_ttl = std::max(milliseconds(1000), options_.max_poll * 4);

  const bool subscribe = !try_once && backend_->capabilities().notifications;
  bool registered = false;
  bool queued = false;
  // Unregisters the waiter and drops a queue reservation on every exit path.
  struct Cleanup {
    ManagerCore* core;
    const std::string& key;
    const OwnerSecret& secret;
    bool& registered;
    bool& queued;
    bool subscribed;
    bool acquired = false;
    ~Cleanup() {
      if (queued && !acquired) {
        try {
          core->backend_->abandon_queue(key, secret);
        } catch (const Error& e) {
          core->report(e);
        } catch (...) {
        }
      }
      if (subscribed) {
        try {
          core->backend_->unsubscribe(key);
        } catch (...) {
        }
      }
      if (registered) {
        std::lock_guard<std::mutex> lock(core->mutex_);
        auto it = core->waiting_.find(key);
        if (it != core->waiting_.end() && --it->second.waiters == 0) core->waiting_.erase(it);
      }
    }
  } cleanup{this, key, state->secret, registered, queued, subscribe};

  if (!try_once) {
    std::lock_guard<std::mutex> lock(mutex_);
    ++waiting_[key].waiters;
    registered = true;
  }
  if (subscribe) backend_->subscribe(key);

  // With backend notifications the first waiter sleeps like the others (the listener wakes it);
  // without, waiters block in the backend's native wait, or the first one polls a cheap
  // read-only probe.
  const bool notifies = backend_->capabilities().notifications;
  microseconds backoff = options_.min_poll;
  // A release that granted this waiter the lease (Backend::ReleaseEvent::grant), taken from the
  // listener in the wait below; it stands in for the next attempt.
  std::optional<Backend::Grant> grant;
  SteadyClock::time_point last_sent_at;
  for (;;) {
    std::uint64_t generation = 0;
    if (registered) {
      std::lock_guard<std::mutex> lock(mutex_);
      generation = waiting_[key].generation;
    }
    // A grant was made after the last attempt began (that attempt, refused, would otherwise have
    // found the lease its own), so that attempt's send time is a safe start for the lease's time
    // on this clock.
    const SteadyClock::time_point sent_at = grant ? last_sent_at : SteadyClock::now();
    last_sent_at = sent_at;
    AcquireResult result;
    milliseconds held_for = ttl;  // the lease's time from sent_at, at most
    if (grant) {
      result.acquired = true;
      result.fence = grant->fence;
      result.expires_at_us = grant->expires_at_us;
      held_for = std::min(ttl, std::chrono::duration_cast<milliseconds>(grant->granted_for));
      grant.reset();
    } else {
      result = backend_->try_acquire(request);
    }
    if (result.acquired) {
      cleanup.acquired = true;
      state->acquired_after_queueing = request.queue_ticket != 0;
      state->fence = result.fence;
      state->expires_at_us.store(result.expires_at_us);
      state->safe_until_ns.store(to_ns(sent_at + held_for - drift_margin(held_for)));
      // A grant may run shorter than the TTL (until the waiter's queue entry would have expired):
      // renew at a third of it, to the full TTL.
      state->next_renew = sent_at + std::min(state->renew_interval, std::max(held_for / 3, milliseconds(1)));
      bool wake_renewer = false;
      bool shutting_down = false;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        shutting_down = stopping_;
        if (shutting_down) {
          state->finished = true;
          state->lost.store(true);
        } else {
          active_[key].push_back(state);
          // Wake the renewal thread only if this lease is due before its planned wake-up: on a
          // busy manager a wake per acquire would cost two context switches each.
          wake_renewer = state->next_renew < renewal_wake_at_;
        }
      }
      if (wake_renewer) renew_cv_.notify_all();
      // Decided under the lock: once the lease is in active_, `finished` belongs to the renewal
      // thread (it may already have marked the lease lost), so it must not be read here.
      if (shutting_down) {
        try {
          backend_->release(key, state->mode, state->secret, state->release_hint());
        } catch (...) {
        }
        throw UsageError("LockManager is shutting down");
      }
      return Lease(shared_from_this(), state);
    }
    queued = request.queue;
    if (result.queue_ticket != 0) request.queue_ticket = result.queue_ticket;
    const auto now = SteadyClock::now();
    if (try_once || now >= deadline) return std::nullopt;

    const auto refresh_at = sent_at + request.queue_ttl / 3;
    if (!notifies) {
      // Without notifications every waiter first tries the backend's native wait (MySQL: server
      // side, blocked on the holder's beacon), which returns when it is this waiter's turn, or at
      // the queue refresh or the deadline; then it attempts. kUnavailable: nothing to block on, so
      // poll below.
      const auto max_wait = std::min<SteadyClock::duration>(refresh_at - now, deadline - now);
      if (max_wait > SteadyClock::duration::zero() &&
          backend_->wait_for_turn(key, state->secret, request.queue_ticket,
                                  std::chrono::duration_cast<milliseconds>(max_wait) + milliseconds(1)) ==
              Backend::WaitOutcome::kWoken) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (stopping_) throw UsageError("LockManager is shutting down");
        continue;
      }
    }

    if (result.queue_position == 0 && !notifies) {
      // Next in line, no notifications and no native wait: watch closely with the backend's cheap
      // read-only probe and attempt as soon as the name is free; re-attempt anyway before the
      // queue entry could expire.
      std::unique_lock<std::mutex> lock(mutex_);
      for (;;) {
        auto wake_at = std::min({SteadyClock::now() + jittered(options_.min_poll), refresh_at, deadline});
        bool woken = wait_cv_.wait_until(lock, wake_at, [&] {
          return stopping_ || waiting_[key].generation != generation;
        });
        if (stopping_) throw UsageError("LockManager is shutting down");
        if (woken || SteadyClock::now() >= std::min(refresh_at, deadline)) break;
        lock.unlock();
        std::optional<milliseconds> remaining = backend_->peek_remaining(key);
        lock.lock();
        if (!remaining || *remaining <= milliseconds::zero()) break;
      }
      continue;
    }

    // Jittered, growing pause; never past the holder's remaining TTL (an abandoned lease is taken
    // over promptly), the queue entry's refresh time, nor the caller's deadline. A wake-up (a
    // release in this process, a backend notification) leads to an attempt only for the first
    // waiter in line; the others ask where they stand with a read-only probe and sleep on, so a
    // release does not make every waiter write.
    // With notifications, a waiter behind others waits longer, max_poll, whatever the holder's
    // time: the release that makes it first names it (and may grant it the lease), and only the
    // first in line takes over an expired lease. Its polls only cover lost notifications and
    // stale hints; at the pace of the others' hand-offs they would be writes to no purpose.
    int known_position = result.queue_position;
    milliseconds known_remaining = result.holder_remaining;
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      const auto now_inner = SteadyClock::now();
      microseconds pause = jittered(backoff);
      if (notifies && known_position > 0 && request.queue_ticket != 0) {
        pause = jittered(options_.max_poll);
      } else if (known_remaining >= milliseconds::zero()) {
        pause = std::min<microseconds>(pause, known_remaining + milliseconds(1));
      }
      pause = std::max<microseconds>(pause, microseconds(100));
      auto wake_at = std::min<SteadyClock::time_point>(now_inner + pause, deadline);
      if (request.queue) wake_at = std::min<SteadyClock::time_point>(wake_at, refresh_at);
      bool woken = wait_cv_.wait_until(lock, wake_at, [&] {
        return stopping_ || waiting_[key].generation != generation;
      });
      if (stopping_) throw UsageError("LockManager is shutting down");
      if (!woken) {
        backoff = std::min<microseconds>(backoff * 2, options_.max_poll);
        break;  // time to attempt (and refresh the queue entry)
      }
      generation = waiting_[key].generation;
      NameWaiters& waiters = waiting_[key];
      if (request.queue_ticket != 0 && waiters.grant && waiters.grant->ticket == request.queue_ticket) {
        grant = waiters.grant;  // a release made us the holder: no attempt needed
        waiters.grant.reset();
        break;
      }
      const std::int64_t next_ticket = waiters.next_ticket;
      if (known_position > 0 && request.queue_ticket != 0 && next_ticket != 0) {
        if (next_ticket != request.queue_ticket) continue;  // the notification named someone else
        backoff = options_.min_poll;
        break;  // it named us
      }
      if (known_position > 0 && request.queue_ticket != 0) {
        lock.unlock();
        std::optional<Backend::QueueStatus> status = backend_->queue_status(key, state->secret, request.queue_ticket);
        lock.lock();
        if (status && (status->position > 0 || status->holder_remaining > milliseconds::zero())) {
          known_position = status->position;
          known_remaining = status->holder_remaining;
          continue;  // not our turn yet
        }
      }
      backoff = options_.min_poll;  // our turn may have come: attempt at once
      break;
    }
  }
}

ReleaseResult ManagerCore::release_hold(const std::shared_ptr<LeaseState>& state) {
  bool locally_lost;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state->holds.load() > 1) {
      state->holds.fetch_sub(1);
      return state->is_lost() ? ReleaseResult::kAlreadyLost : ReleaseResult::kReleased;
    }
    state->holds.store(0);
    if (state->finished) return ReleaseResult::kAlreadyLost;  // lost (renewal refused) or shut down
    state->finished = true;
    locally_lost = state->is_lost();
    remove_active_locked(state);
  }
  ReleaseResult result;
  try {
    bool released = backend_->release(state->name, state->mode, state->secret, state->release_hint());
    result = released && !locally_lost ? ReleaseResult::kReleased : ReleaseResult::kAlreadyLost;
  } catch (const Error& e) {
    report(e);
    result = ReleaseResult::kInDoubt;
  }
  state->lost.store(true, std::memory_order_release);  // the handle must not be trusted any more
  {
    std::lock_guard<std::mutex> lock(mutex_);
    bump_locked(state->name);
  }
  return result;
}

void ManagerCore::mark_lost(const std::shared_ptr<LeaseState>& state, const std::string& reason,
                            bool run_callback) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state->finished) return;  // released meanwhile: a refused renewal is expected then
    state->finished = true;
    state->lost.store(true, std::memory_order_release);
    remove_active_locked(state);
    bump_locked(state->name);
  }
  if (run_callback && state->on_lost) {
    try {
      state->on_lost(LostLease{state->name, state->fence, reason});
    } catch (...) {
      // A throwing callback must not kill the renewal thread.
    }
  }
}

void ManagerCore::renew_one(const std::shared_ptr<LeaseState>& state) {
  const SteadyClock::time_point sent_at = SteadyClock::now();
  RenewResult result;
  try {
    result = backend_->renew(state->name, state->mode, state->secret, state->ttl);
  } catch (const Error& e) {
    report(e);
    // Retry soon; safe-until decides when to give up.
    std::lock_guard<std::mutex> lock(mutex_);
    state->next_renew = SteadyClock::now() + std::max(state->renew_interval / 4, milliseconds(10));
    return;
  }
  if (!result.renewed) {
    mark_lost(state, "renewal refused by the backend (expired, taken over or force-released)", true);
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  if (state->finished) return;
  // A renewal that comes back after safe-until cannot resurrect the lease: the holder may already
  // have been told it was lost.
  if (state->is_lost()) return;
  state->expires_at_us.store(result.expires_at_us);
  auto safe = sent_at + state->ttl - drift_margin(state->ttl);
  if (to_ns(safe) > state->safe_until_ns.load()) state->safe_until_ns.store(to_ns(safe));
  state->next_renew = sent_at + state->renew_interval;
}

void ManagerCore::renewal_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    auto now = SteadyClock::now();
    auto next = now + std::chrono::seconds(1);
    std::vector<std::shared_ptr<LeaseState>> due;
    std::vector<std::shared_ptr<LeaseState>> expired;
    for (auto& [name, states] : active_) {
      for (auto& state : states) {
        if (now >= state->safe_until()) {
          expired.push_back(state);
        } else if (now >= state->next_renew) {
          due.push_back(state);
        } else {
          next = std::min({next, state->next_renew, state->safe_until()});
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
    if (due.empty() && expired.empty() && sessions_due.empty()) {
      renewal_wake_at_ = next;
      renew_cv_.wait_until(lock, next);
      renewal_wake_at_ = SteadyClock::time_point::min();  // awake: new leases are seen next round
      continue;
    }
    lock.unlock();
    for (auto& state : expired) mark_lost(state, "safe-until passed without a successful renewal", true);
    for (auto& state : due) {
      renew_one(state);
      // Guarantees progress: a state whose renewal errored got a later next_renew.
    }
    for (auto& session : sessions_due) check_session(session);
    lock.lock();
  }
}

std::optional<SessionLock> ManagerCore::session_lock(std::string_view name, milliseconds wait,
                                                    const SessionLockOptions& options) {
  validate_lock_name(name);
  std::unique_ptr<SessionLockHandle> handle =
      backend_->acquire_session_lock(name, options.mode, std::max(wait, milliseconds::zero()));
  if (!handle) return std::nullopt;
  auto state = std::make_shared<SessionState>();
  state->name = std::string(name);
  state->mode = options.mode;
  state->key = handle->key();
  state->on_lost = options.on_lost;
  state->handle = std::move(handle);
  bool wake_renewer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
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
    std::lock_guard<std::mutex> lock(mutex_);
    if (state->finished) return ReleaseResult::kAlreadyLost;
    state->finished = true;
    sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), state), sessions_.end());
  }
  std::lock_guard<std::mutex> lock(state->handle_mutex);
  ReleaseResult result = ReleaseResult::kAlreadyLost;
  if (state->handle && !state->lost.load()) {
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

void ManagerCore::check_session(const std::shared_ptr<SessionState>& state) {
  bool alive;
  {
    std::lock_guard<std::mutex> lock(state->handle_mutex);
    if (!state->handle) return;
    alive = state->handle->verify();
  }
  if (alive) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state->finished) return;
    state->finished = true;
    state->lost.store(true, std::memory_order_release);
    sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), state), sessions_.end());
  }
  {
    std::lock_guard<std::mutex> lock(state->handle_mutex);
    state->handle.reset();
  }
  if (state->on_lost) {
    try {
      state->on_lost(LostLease{state->name, 0, "the session holding the lock is gone (connection lost or swapped)"});
    } catch (...) {
    }
  }
}

void ManagerCore::reaper_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    auto pause = duration_cast<SteadyClock::duration>(jittered(duration_cast<microseconds>(options_.reaper_interval), 0.2));
    if (reaper_cv_.wait_for(lock, pause, [this] { return stopping_; })) break;
    lock.unlock();
    try {
      // Bounded batches, each followed by a pause at least as long as the batch took (at least
      // 1 ms), so the reaper never holds the database for long and takes at most half of it
      // while it catches up: a statement that waits for a reap batch (for its row locks, or for
      // a server CPU the reaping backend occupies) waits at most about one batch. At most 100 000
      // batches per pass (5 million rows at the default batch size).
      for (int i = 0; i < 100'000; ++i) {
        const auto started = SteadyClock::now();
        std::size_t n = backend_->reap(static_cast<std::size_t>(options_.reaper_batch));
        if (n < static_cast<std::size_t>(options_.reaper_batch)) break;
        const auto pause = std::clamp<SteadyClock::duration>(SteadyClock::now() - started, milliseconds(1), std::chrono::seconds(1));
        std::unique_lock<std::mutex> relock(mutex_);
        if (reaper_cv_.wait_for(relock, pause, [this] { return stopping_; })) break;
      }
    } catch (const Error& e) {
      report(e);
    }
    lock.lock();
  }
}

}  // namespace dblock::detail
