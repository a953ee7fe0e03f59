#include "lease_table.h"

#include <algorithm>

namespace dblock::etcd {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

seconds whole_seconds(milliseconds ttl) { return std::max(seconds(1), std::chrono::ceil<seconds>(ttl)); }

// Enough left for an acquisition of `ttl` from now: 3/4 of it (less is kept alive first).
bool enough(SteadyClock::time_point expires, milliseconds ttl) { return expires - SteadyClock::now() >= ttl - ttl / 4; }

}  // namespace

std::optional<LeaseTable::Bound> LeaseTable::left_of(std::int64_t lease) {
  service::MutexLock lock(mutex_);
  for (const auto& [secs, e] : by_seconds_) {
    if (e.lease == lease) {
      return Bound{lease, e.refreshed + e.ttl};
    }
  }
  return std::nullopt;
}

void LeaseTable::refreshed(std::int64_t lease, seconds ttl, SteadyClock::time_point sent) {
  service::MutexLock lock(mutex_);
  for (auto& [secs, e] : by_seconds_) {
    if (e.lease == lease && e.refreshed < sent) e = Entry{lease, ttl, sent};  // not behind a later one
  }
}

void LeaseTable::gone(std::int64_t lease) {
  service::MutexLock lock(mutex_);
  std::erase_if(by_seconds_, [&](const auto& entry) { return entry.second.lease == lease; });
}

std::vector<std::int64_t> LeaseTable::take_all() {
  service::MutexLock lock(mutex_);
  std::vector<std::int64_t> out;
  for (const auto& [secs, e] : by_seconds_) out.push_back(e.lease);
  by_seconds_.clear();
  return out;
}

std::optional<SteadyClock::time_point> LeaseTable::keep_alive(std::int64_t lease, SteadyClock::time_point until) {
  const SteadyClock::time_point sent = SteadyClock::now();
  const seconds ttl = client_.keep_alive(lease, until);
  if (ttl.count() == 0) {
    gone(lease);
    return std::nullopt;
  }
  refreshed(lease, ttl, sent);  // a lease the table replaced meanwhile stays out of it
  return sent + ttl;
}

std::optional<LeaseTable::Bound> LeaseTable::known(std::int64_t lease, milliseconds ttl) {
  const std::optional<Bound> bound = left_of(lease);
  if (bound && enough(bound->expires, ttl)) return bound;
  return std::nullopt;
}

std::optional<LeaseTable::Bound> LeaseTable::keep(std::int64_t lease, milliseconds ttl, SteadyClock::time_point until) {
  if (const std::optional<Bound> bound = known(lease, ttl)) return bound;
  const std::optional<SteadyClock::time_point> expires = keep_alive(lease, until);
  if (!expires) return std::nullopt;
  return Bound{lease, *expires};
}

LeaseTable::Bound LeaseTable::lease_for(milliseconds ttl, SteadyClock::time_point until) {
  const seconds secs = whole_seconds(ttl);
  std::int64_t known = 0;
  {
    service::MutexLock lock(mutex_);
    if (const auto it = by_seconds_.find(secs.count()); it != by_seconds_.end()) known = it->second.lease;
  }
  if (known != 0) {
    if (std::optional<Bound> kept = keep(known, ttl, until)) return *kept;
  }
  const SteadyClock::time_point sent = SteadyClock::now();
  const Client::Granted granted = client_.grant(secs, until);
  {
    service::MutexLock lock(mutex_);
    by_seconds_[secs.count()] = Entry{granted.id, granted.ttl, sent};  // two racing grants: the later stays
  }
  return Bound{granted.id, sent + granted.ttl};
}

}  // namespace dblock::etcd
