#include "memory_service.h"

#include <algorithm>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"  // permits_mismatch, the message every service throws

namespace dblock::testing {

namespace {

using std::chrono::duration_cast;
using std::chrono::microseconds;
using std::chrono::milliseconds;

std::int64_t to_us(MemoryClock::time_point t) {
  return duration_cast<microseconds>(t.time_since_epoch()).count();
}

bool live(const MemoryStore::Holder& h, MemoryClock::time_point now) { return h.expires > now; }

}  // namespace

MemoryService::MemoryService(std::shared_ptr<MemoryStore> store, Config config)
    : store_(std::move(store)), config_(config) {
  event_thread_ = std::thread([this] { event_loop(); });
  std::lock_guard<std::mutex> lock(store_->mutex);
  store_->clients.push_back(this);
}

MemoryService::~MemoryService() {
  {
    std::lock_guard<std::mutex> lock(store_->mutex);
    std::erase(store_->clients, this);
  }
  {
    std::lock_guard<std::mutex> lock(events_mutex_);
    stop_ = true;
  }
  events_cv_.notify_all();
  event_thread_.join();
}

void MemoryService::enter(Op op) {
  ++calls_[static_cast<int>(op)];
  {
    std::lock_guard<std::mutex> record(record_mutex_);
    deadlines_[static_cast<int>(op)] = call_deadline();
  }
}

ServiceTraits MemoryService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = config_.shared_leases;
  traits.permits = config_.permits;
  traits.hold_at_least = config_.hold_at_least;
  return traits;
}

bool MemoryService::earlier_waiter_locked(const std::string& name, const std::string& secret, std::int64_t ticket,
                                          MemoryClock::time_point now) const {
  auto q = store_->queues.find(name);
  if (q == store_->queues.end()) return false;
  return std::any_of(q->second.begin(), q->second.end(), [&](const MemoryStore::Waiter& w) {
    return w.until > now && w.secret != secret && (ticket == 0 || w.ticket < ticket);
  });
}

milliseconds MemoryService::remaining_locked(const std::string& name, MemoryClock::time_point now) const {
  auto it = store_->locks.find(name);
  if (it == store_->locks.end()) return milliseconds::zero();
  MemoryClock::time_point latest = now;
  for (const auto& [secret, h] : it->second.holders) latest = std::max(latest, h.expires);
  return duration_cast<milliseconds>(latest - now);
}

AcquireResult MemoryService::take_locked(const AcquireRequest& request, std::int64_t ticket,
                                         MemoryClock::time_point now) {
  const std::string name(request.name);
  const std::string secret = request.secret->hex();
  MemoryStore::Lock& lock = store_->locks[name];
  auto& holders = lock.holders;
  std::erase_if(holders, [&](const auto& entry) { return !live(entry.second, now); });
  const bool own = holders.count(secret) != 0 && lock.mode == request.mode;
  const bool shared = request.mode == LockMode::kShared && lock.mode == LockMode::kShared && !holders.empty();
  if (shared && !own && lock.permits != request.permits) {
    throw service::permits_mismatch("memory", name, lock.permits, request.permits);
  }
  const bool room = request.permits == 0 || static_cast<int>(holders.size()) < request.permits;
  const bool free = holders.empty() || (shared && room);
  AcquireResult result;
  if (!own && (!free || earlier_waiter_locked(name, secret, ticket, now))) {
    result.holder_remaining = remaining_locked(name, now);
    return result;
  }
  const milliseconds granted = std::min(request.ttl, config_.max_grant);
  MemoryStore::Holder& h = holders[secret];
  lock.mode = request.mode;
  lock.permits = request.permits;
  h.holder = std::string(request.holder);
  h.fence = ++store_->last_fence;
  h.acquired = now;
  h.expires = now + granted;
  result.acquired = true;
  result.fence = h.fence;
  result.expires_at_us = to_us(h.expires);
  if (granted < request.ttl) result.granted_for = granted;
  if (ticket != 0) result.tag = kQueuedTag;
  return result;
}

void MemoryService::maybe_fail_attempt() {
  if (stalling_attempts_.fetch_sub(1) > 0) {
    std::this_thread::sleep_for(milliseconds(stall_ms_.load()));
  } else {
    stalling_attempts_.fetch_add(1);
  }
  if (failing_attempts_.fetch_sub(1) <= 0) {
    failing_attempts_.fetch_add(1);
    return;
  }
  switch (fault_kind_.load()) {
    case Fault::kUnreachable: throw ConnectionError("memory: connection refused (injected)", "memory");
    case Fault::kInDoubt: throw InDoubtError("memory: reply lost (injected)", "memory");
    case Fault::kPermission: throw PermissionError("memory: permission denied (injected)", "memory");
  }
}

AcquireResult MemoryService::try_acquire(const AcquireRequest& request) {
  enter(Op::kTryAcquire);
  maybe_fail_attempt();
  std::lock_guard<std::mutex> lock(store_->mutex);
  return take_locked(request, 0, MemoryClock::now());
}

FairQueue::Attempt MemoryService::attempt_in_line(const AcquireRequest& request, const Place& place) {
  enter(Op::kInLine);
  maybe_fail_attempt();
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  const std::string name(request.name), secret = request.secret->hex();
  Attempt out;
  out.result = take_locked(request, place.ticket, now);
  auto& queue = store_->queues[name];
  if (out.result.acquired) {
    std::erase_if(queue, [&](const MemoryStore::Waiter& w) { return w.secret == secret; });
    return out;
  }
  auto mine = std::find_if(queue.begin(), queue.end(), [&](const MemoryStore::Waiter& w) { return w.secret == secret; });
  if (mine == queue.end()) {
    queue.push_back(MemoryStore::Waiter{secret, ++store_->last_ticket, now + place.hold_for, request.mode,
                                        std::string(request.holder)});
    mine = std::prev(queue.end());
  } else {
    mine->until = now + place.hold_for;
  }
  out.ticket = mine->ticket;
  out.position = static_cast<int>(std::count_if(queue.begin(), queue.end(), [&](const MemoryStore::Waiter& w) {
    return w.until > now && w.ticket < out.ticket;
  }));
  if (phantom_waiter_) {
    ++out.position;
    out.result.holder_remaining = std::chrono::milliseconds(0);
  }
  return out;
}

void MemoryService::leave(std::string_view name_view, const OwnerSecret& secret) {
  enter(Op::kLeave);
  const std::string name(name_view), hex = secret.hex();
  bool granted = false;
  {
    std::lock_guard<std::mutex> lock(store_->mutex);
    std::erase_if(store_->queues[name], [&](const MemoryStore::Waiter& w) { return w.secret == hex; });
    auto it = store_->locks.find(name);
    granted = it != store_->locks.end() && it->second.holders.count(hex) != 0;
  }
  // A grant that came after the waiter gave up: hand it on.
  if (granted && config_.grants) release(LeaseKey{name_view, LockMode::kExclusive, &secret, kQueuedTag});
}

FairQueue::Position MemoryService::position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
  enter(Op::kPosition);
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  const auto& queue = store_->queues[std::string(name)];
  Position p;
  p.waiters_ahead = static_cast<int>(std::count_if(queue.begin(), queue.end(), [&](const MemoryStore::Waiter& w) {
    return w.until > now && w.secret != secret.hex() && w.ticket < ticket;
  }));
  p.holder_remaining = remaining_locked(std::string(name), now);
  return p;
}

RenewResult MemoryService::renew(const LeaseKey& lease, milliseconds ttl) {
  enter(Op::kRenew);
  if (const auto delay = renew_delay_ms_.load(); delay > 0) std::this_thread::sleep_for(milliseconds(delay));
  if (fail_renewals_) throw ConnectionError("memory: renewal failed (injected)", "memory");
  RenewResult result;
  if (refuse_renewals_) return result;
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  auto it = store_->locks.find(std::string(lease.name));
  if (it == store_->locks.end()) return result;
  auto h = it->second.holders.find(lease.secret->hex());
  if (h == it->second.holders.end() || !live(h->second, now)) return result;
  const milliseconds granted = std::min(ttl, config_.max_grant);
  h->second.expires = now + granted;
  result.renewed = true;
  reported_clock_offset_us_ += reported_clock_step_us_.load();
  result.expires_at_us = to_us(h->second.expires) + reported_clock_offset_us_.load();
  if (granted < ttl) result.granted_for = granted;
  return result;
}

void MemoryService::hand_on_locked(const std::string& name, MemoryClock::time_point now) {
  auto& queue = store_->queues[name];
  auto first = std::find_if(queue.begin(), queue.end(), [&](const MemoryStore::Waiter& w) { return w.until > now; });
  if (first == queue.end()) return;
  if (!config_.grants || first->mode != LockMode::kExclusive) {
    post_locked(Pending{Kind::kReleased, name, first->ticket, std::nullopt, {}, {}});
    return;
  }
  MemoryStore::Lock& lock = store_->locks[name];
  lock.mode = LockMode::kExclusive;
  MemoryStore::Holder& h = lock.holders[first->secret];
  h.holder = first->holder;
  h.fence = ++store_->last_fence;
  h.expires = first->until;  // no longer than its queue entry would have blocked the line
  const Grant grant{first->ticket, h.fence, duration_cast<microseconds>(first->until - now), to_us(h.expires),
                    kQueuedTag};
  post_locked(Pending{Kind::kGranted, name, first->ticket, grant, {}, {}});
}

bool MemoryService::release(const LeaseKey& lease) {
  enter(Op::kRelease);
  {
    std::lock_guard<std::mutex> record(record_mutex_);
    released_.push_back(lease.tag);
  }
  if (fail_releases_) throw InDoubtError("memory: release reply lost (injected)", "memory");
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  const std::string name(lease.name);
  auto it = store_->locks.find(name);
  if (it == store_->locks.end()) return false;
  auto h = it->second.holders.find(lease.secret->hex());
  if (h == it->second.holders.end()) return false;
  const bool was_live = live(h->second, now);
  MemoryStore::Holder kept = h->second;
  it->second.holders.erase(h);
  if (was_live && lease.hold_at_least.count() > 0 && kept.acquired + lease.hold_at_least > now) {
    // Disowned: held by a key no secret has, until the minimum hold ends.
    kept.expires = kept.acquired + lease.hold_at_least;
    it->second.holders["released:" + lease.secret->hex()] = kept;
    std::erase_if(store_->queues[name], [&](const MemoryStore::Waiter& w) { return w.secret == lease.secret->hex(); });
    return true;
  }
  if (was_live) {
    std::erase_if(store_->queues[name], [&](const MemoryStore::Waiter& w) { return w.secret == lease.secret->hex(); });
    if (it->second.holders.empty()) hand_on_locked(name, now);
  }
  store_->changed.notify_all();
  return was_live;
}

void MemoryService::lease_lost(const LeaseKey& lease) noexcept {
  std::lock_guard<std::mutex> record(record_mutex_);
  lost_.push_back(LostRecord{std::string(lease.name), lease.secret->hex(), lease.tag});
}

bool MemoryService::force_release(std::string_view name, std::string_view by) {
  {
    std::lock_guard<std::mutex> record(record_mutex_);
    forced_by_.emplace_back(by);
  }
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  auto it = store_->locks.find(std::string(name));
  if (it == store_->locks.end()) return false;
  const bool held = std::any_of(it->second.holders.begin(), it->second.holders.end(),
                                [&](const auto& entry) { return live(entry.second, now); });
  it->second.holders.clear();
  ++store_->last_fence;  // the evicted holder's fence is superseded
  if (held) hand_on_locked(std::string(name), now);
  store_->changed.notify_all();
  return held;
}

std::vector<LeaseInfo> MemoryService::list(std::optional<std::string_view> only) {
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  std::vector<LeaseInfo> out;
  for (const auto& [name, lock_state] : store_->locks) {
    if (only && name != *only) continue;
    for (const auto& [secret, h] : lock_state.holders) {
      if (!live(h, now)) continue;
      LeaseInfo info;
      info.name = name;
      info.mode = lock_state.mode;
      info.permits = lock_state.mode == LockMode::kShared ? lock_state.permits : 0;
      info.holders = static_cast<int>(std::count_if(lock_state.holders.begin(), lock_state.holders.end(),
                                                    [&](const auto& entry) { return live(entry.second, now); }));
      info.holder = h.holder;
      info.fence = h.fence;
      info.expires_at_us = to_us(h.expires);
      info.expires_in_us = to_us(h.expires) - to_us(now);
      const auto queue = store_->queues.find(name);
      info.waiters = queue == store_->queues.end()
                         ? 0
                         : static_cast<int>(std::count_if(queue->second.begin(), queue->second.end(),
                                                          [&](const MemoryStore::Waiter& w) { return w.until > now; }));
      out.push_back(std::move(info));
      break;
    }
  }
  return out;
}

NativeWait::Turn MemoryService::wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                                              milliseconds max_wait) {
  enter(Op::kNativeWait);
  std::unique_lock<std::mutex> lock(store_->mutex);
  const std::string key(name);
  const std::string hex = secret.hex();
  // The grant made to this waiter, if a release made one (config_.grants).
  auto granted = [&](MemoryClock::time_point now) -> std::optional<Grant> {
    auto it = store_->locks.find(key);
    if (it == store_->locks.end()) return std::nullopt;
    auto h = it->second.holders.find(hex);
    if (h == it->second.holders.end() || !live(h->second, now)) return std::nullopt;
    return Grant{ticket, h->second.fence, duration_cast<microseconds>(h->second.expires - now), to_us(h->second.expires),
                 kQueuedTag};
  };
  store_->changed.wait_for(lock, max_wait, [&] {
    const auto now = MemoryClock::now();
    if (granted(now)) return true;
    return remaining_locked(key, now) <= milliseconds::zero() && !earlier_waiter_locked(key, hex, ticket, now);
  });
  Turn turn;
  turn.grant = granted(MemoryClock::now());
  turn.outcome = turn.grant ? Outcome::kGranted : Outcome::kWoken;
  return turn;
}

milliseconds MemoryService::holder_remaining(std::string_view name, const OwnerSecret& waiter) {
  enter(Op::kProbe);
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  auto it = store_->locks.find(std::string(name));
  if (it != store_->locks.end()) {
    auto h = it->second.holders.find(waiter.hex());
    if (h != it->second.holders.end() && live(h->second, now)) return milliseconds::zero();  // granted to it
  }
  return remaining_locked(std::string(name), now);
}

void MemoryService::migrate(bool) { enter(Op::kMigrate); }

std::size_t MemoryService::reap(std::size_t batch) {
  enter(Op::kReap);
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  std::size_t n = 0;
  for (auto it = store_->locks.begin(); it != store_->locks.end() && n < batch;) {
    std::erase_if(it->second.holders, [&](const auto& entry) { return !live(entry.second, now); });
    if (it->second.holders.empty() && store_->queues[it->first].empty()) {
      it = store_->locks.erase(it);
      ++n;
    } else {
      ++it;
    }
  }
  return n;
}

std::optional<std::chrono::microseconds> MemoryService::oldest_unreaped() {
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  std::optional<MemoryClock::time_point> oldest;
  for (const auto& [name, lock_state] : store_->locks) {
    if (lock_state.holders.empty() || !store_->queues[name].empty()) continue;
    MemoryClock::time_point ended = MemoryClock::time_point::min();
    for (const auto& [secret, h] : lock_state.holders) ended = std::max(ended, h.expires);
    if (ended > now) continue;  // a holder is live
    if (!oldest || ended < *oldest) oldest = ended;
  }
  if (!oldest) return std::nullopt;
  return std::chrono::duration_cast<std::chrono::microseconds>(now - *oldest);
}

void MemoryService::push_lost(const std::string& name) {
  std::lock_guard<std::mutex> lock(store_->mutex);
  auto it = store_->locks.find(name);
  if (it == store_->locks.end() || it->second.holders.empty()) return;
  Pending event{Kind::kLost, name, 0, std::nullopt, {}, "session expired (injected)"};
  const std::string& hex = it->second.holders.begin()->first;
  for (std::size_t i = 0; i < event.secret.bytes.size(); ++i) {
    event.secret.bytes[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  it->second.holders.clear();
  post_locked(event);
}

void MemoryService::forge_grant(const std::string& name, std::int64_t fence) {
  std::lock_guard<std::mutex> lock(store_->mutex);
  auto& queue = store_->queues[name];
  if (queue.empty()) return;
  const Grant grant{queue.front().ticket, fence, std::chrono::seconds(30), 0, kQueuedTag};
  post_locked(Pending{Kind::kGranted, name, queue.front().ticket, grant, {}, {}});
}

std::optional<LeaseGrant> MemoryService::confirm_grant(std::string_view name, const OwnerSecret& secret,
                                                       const LeaseGrant& claimed) {
  enter(Op::kConfirmGrant);
  std::lock_guard<std::mutex> lock(store_->mutex);
  const auto now = MemoryClock::now();
  auto it = store_->locks.find(std::string(name));
  if (it == store_->locks.end() || it->second.mode != LockMode::kExclusive) return std::nullopt;
  auto h = it->second.holders.find(secret.hex());
  if (h == it->second.holders.end() || !live(h->second, now)) return std::nullopt;
  return LeaseGrant{claimed.ticket, h->second.fence, duration_cast<microseconds>(h->second.expires - now),
                    to_us(h->second.expires), claimed.tag};
}

std::vector<MemoryService::LostRecord> MemoryService::lost_leases() const {
  std::lock_guard<std::mutex> record(record_mutex_);
  return lost_;
}

std::vector<std::string> MemoryService::forced_by() const {
  std::lock_guard<std::mutex> record(record_mutex_);
  return forced_by_;
}

std::vector<std::uint32_t> MemoryService::released_tags() const {
  std::lock_guard<std::mutex> record(record_mutex_);
  return released_;
}

std::size_t MemoryService::queued(const std::string& name) const {
  std::lock_guard<std::mutex> lock(store_->mutex);
  auto it = store_->queues.find(name);
  return it == store_->queues.end() ? 0 : it->second.size();
}

// ---- events ----

void MemoryService::post_locked(const Pending& event) {
  for (MemoryService* client : store_->clients) client->deliver(event);
}

void MemoryService::deliver(const Pending& event) {
  if (!config_.wake_events || drop_events_) return;
  std::lock_guard<std::mutex> lock(events_mutex_);
  events_.push_back(event);
  events_cv_.notify_all();
}

void MemoryService::set_listener(Listener listener) {
  std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
  std::lock_guard<std::mutex> lock(events_mutex_);
  listener_ = std::move(listener);
}

void MemoryService::event_loop() {
  for (;;) {
    Pending pending;
    {
      std::unique_lock<std::mutex> lock(events_mutex_);
      events_cv_.wait(lock, [&] { return stop_ || !events_.empty(); });
      if (stop_) return;
      pending = std::move(events_.front());
      events_.pop_front();
    }
    std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
    Listener listener;
    {
      std::lock_guard<std::mutex> lock(events_mutex_);
      listener = listener_;
    }
    if (!listener) continue;
    Event event;
    event.kind = pending.kind;
    event.name = pending.name;
    event.next_ticket = pending.next_ticket;
    event.grant = pending.grant;
    event.secret = &pending.secret;
    event.reason = pending.reason;
    listener(event);
  }
}

}  // namespace dblock::testing
