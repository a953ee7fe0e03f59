#include "wake_board.h"

#include "dblock/errors.h"

namespace dblock::detail {

namespace {
[[noreturn]] void throw_stopped() { throw UsageError("LockManager is shutting down"); }
}  // namespace

void WakeBoard::enter(const std::string& name) {
  service::MutexLock lock(mutex_);
  ++entries_[name].waiters;
}

void WakeBoard::leave(const std::string& name) {
  service::MutexLock lock(mutex_);
  auto it = entries_.find(name);
  if (it != entries_.end() && --it->second.waiters == 0) entries_.erase(it);
}

void WakeBoard::bump(const std::string& name, std::int64_t next_ticket) {
  service::MutexLock lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return;
  ++it->second.generation;
  it->second.next_ticket = next_ticket;
  cv_.notify_all();
}

void WakeBoard::post_grant(const std::string& name, const LeaseGrant& grant) {
  service::MutexLock lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return;  // a grant for another process's waiter
  it->second.grant = grant;
  ++it->second.generation;
  it->second.next_ticket = grant.ticket;
  cv_.notify_all();
}

std::uint64_t WakeBoard::generation(const std::string& name) {
  service::MutexLock lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.generation;
}

bool WakeBoard::wait(const std::string& name, std::uint64_t& seen, SteadyClock::time_point until) {
  service::UniqueLock lock(mutex_);
  auto current = [&]() DBLOCK_REQUIRES(mutex_) {
    auto it = entries_.find(name);
    return it == entries_.end() ? seen : it->second.generation;
  };
  const bool woken = cv_.wait_until(lock.native(), until, [&]() DBLOCK_REQUIRES(mutex_) { return stopped_ || current() != seen; });
  if (stopped_) throw_stopped();
  if (woken) seen = current();
  return woken;
}

std::optional<LeaseGrant> WakeBoard::take_grant(const std::string& name, std::int64_t ticket) {
  service::MutexLock lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end() || !it->second.grant || it->second.grant->ticket != ticket) return std::nullopt;
  std::optional<LeaseGrant> grant = it->second.grant;
  it->second.grant.reset();
  return grant;
}

std::int64_t WakeBoard::next_ticket(const std::string& name) {
  service::MutexLock lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? 0 : it->second.next_ticket;
}

void WakeBoard::stop() {
  service::MutexLock lock(mutex_);
  stopped_ = true;
  cv_.notify_all();
}

void WakeBoard::check_running() {
  service::MutexLock lock(mutex_);
  if (stopped_) throw_stopped();
}

}  // namespace dblock::detail
