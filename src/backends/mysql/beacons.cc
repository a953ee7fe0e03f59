#include "beacons.h"

#include <algorithm>

#include "keys.h"
#include "sql.h"

namespace dblock::mysql {

namespace {
using std::chrono::milliseconds;
// What one round of beacon statements (and a connect for them) is given.
constexpr milliseconds kCallTime{2000};
using dblock::sql::as_int;
using dblock::sql::is_null;
}  // namespace

Beacons::~Beacons() {
  {
    service::MutexLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string Beacons::key(std::string_view name) const {
  return internal_key(context_.options().database, context_.options().table_prefix, "beacon", name);
}

void Beacons::hold(const std::string& name, const std::string& secret, SteadyClock::time_point valid_until) {
  if (!context_.options().beacon) return;
  service::MutexLock lock(mutex_);
  if (stop_) return;
  Beacon& b = beacons_[name];
  if (b.leases.empty() && !b.held) {
    b.take_at = SteadyClock::now() + context_.options().beacon_delay;
    b.failures = 0;
  }
  b.leases[secret] = valid_until;
  if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  // Wake the thread only if it would sleep past this beacon's time: a wake per acquire would cost
  // two context switches on every short acquire/release pair.
  if (b.take_at < wake_at_) cv_.notify_all();
}

void Beacons::refresh(const std::string& name, const std::string& secret, SteadyClock::time_point valid_until) {
  if (!context_.options().beacon) return;
  service::MutexLock lock(mutex_);
  auto it = beacons_.find(name);
  if (it == beacons_.end()) return;
  auto lease = it->second.leases.find(secret);
  if (lease != it->second.leases.end()) lease->second = std::max(lease->second, valid_until);
}

void Beacons::drop(const std::string& name, const std::string& secret, bool now) noexcept {
  if (!context_.options().beacon) return;
  {
    service::MutexLock lock(mutex_);
    auto it = beacons_.find(name);
    if (it == beacons_.end()) return;
    Beacon& b = it->second;
    b.leases.erase(secret);
    if (!b.leases.empty()) return;
    if (!b.held) {
      if (!b.busy) beacons_.erase(it);  // a take in flight is undone by the thread
      return;
    }
    if (!now || b.busy) {
      cv_.notify_all();  // let go soon: a waiter is likely blocked on it
      return;
    }
    b.busy = true;
  }
  bool dropped = false, broken = false;
  if (conn_mutex_.try_lock()) {
    if (conn_) {
      try {
        context_.query(*conn_, sql::kDropBeacon, {{"key", key(name)}});
        dropped = true;
      } catch (...) {
        conn_.reset();  // the server frees whatever it held; the thread reconnects
        broken = true;
      }
    }
    conn_mutex_.unlock();
  }
  service::MutexLock lock(mutex_);
  if (broken) mark_all_dropped_locked();
  auto it = beacons_.find(name);
  if (it != beacons_.end()) {
    it->second.busy = false;
    if (dropped || broken) it->second.held = false;
  }
  cv_.notify_all();  // the thread takes it from here (drop if not done, re-take if re-held)
}

void Beacons::mark_all_dropped_locked() {
  for (auto& [name, b] : beacons_) {
    if (!b.busy) b.held = false;
  }
}

Beacons::Work Beacons::due_locked(SteadyClock::time_point now, SteadyClock::time_point& wake) {
  Work work;
  wake = SteadyClock::time_point::max();
  for (auto it = beacons_.begin(); it != beacons_.end();) {
    Beacon& b = it->second;
    std::erase_if(b.leases, [&](const auto& lease) { return lease.second <= now; });
    if (b.busy) {
      ++it;
      continue;
    }
    if (b.leases.empty()) {
      if (!b.held) {
        it = beacons_.erase(it);
        continue;
      }
      work.drop.push_back(it->first);
      b.busy = true;
    } else {
      for (const auto& [secret, until] : b.leases) wake = std::min(wake, until);
      if (!b.held) {
        const SteadyClock::time_point due = std::max(b.take_at, reconnect_at_);
        if (due <= now) {
          work.take.push_back(it->first);
          b.busy = true;
        } else {
          wake = std::min(wake, due);
        }
      }
    }
    ++it;
  }
  return work;
}

Beacons::Done Beacons::run(const Work& work) {
  Done done;
  service::MutexLock conn(conn_mutex_);
  // Neither statement waits on the server (GET_LOCK(key, 0), RELEASE_LOCK): a round of them is
  // bounded like any call, so that the thread, and the manager's shutdown joining it, never waits
  // on a stalled connection for longer.
  const auto deadline = SteadyClock::now() + kCallTime;
  try {
    if (!conn_) {
      conn_ = context_.connect(deadline);
      connect_failures_ = 0;
    }
    for (const auto& name : work.drop) {
      context_.query(*conn_, sql::kDropBeacon, {{"key", key(name)}}, deadline);
      done.dropped.push_back(name);
    }
    for (const auto& name : work.take) {
      Rows rows = context_.query(*conn_, sql::kTakeBeacon, {{"key", key(name)}}, deadline);
      done.taken.emplace_back(name, !rows.empty() && rows.front().get<bool>("got"));  // NULL: an error
    }
  } catch (...) {
    // Whatever the beacon connection held, the server frees with the session.
    done.broken = true;
    conn_.reset();
    done.retry_at = SteadyClock::now() + milliseconds(std::min(2000, 10 << std::min(connect_failures_++, 8)));
  }
  return done;
}

void Beacons::record_locked(const Work& work, const Done& done) {
  for (const auto* names : {&work.drop, &work.take}) {
    for (const auto& name : *names) {
      auto it = beacons_.find(name);
      if (it != beacons_.end()) it->second.busy = false;
    }
  }
  for (const auto& name : done.dropped) {
    auto it = beacons_.find(name);
    if (it != beacons_.end()) it->second.held = false;
  }
  for (const auto& [name, got] : done.taken) {
    auto it = beacons_.find(name);
    if (it == beacons_.end()) continue;
    Beacon& b = it->second;
    if (got) {
      b.held = true;
      b.failures = 0;
    } else {
      // Someone else has it: another reader of a shared lease, a waiter giving it back, or a
      // stale holder whose lease expired. Try again later, less and less often.
      b.take_at = SteadyClock::now() + milliseconds(std::min(200, 2 << std::min(b.failures++, 7)));
    }
  }
  if (done.broken) {
    reconnect_at_ = done.retry_at;
    mark_all_dropped_locked();
  }
}

void Beacons::loop() {
  {
    // Connect now rather than when the first beacon is due: a connection takes several round
    // trips, and the first waiter gives the beacon only a short grace period to appear.
    service::MutexLock conn(conn_mutex_);
    try {
      conn_ = context_.connect(SteadyClock::now() + kCallTime);
    } catch (...) {
      // Retried when a beacon is due.
    }
  }
  service::UniqueLock lock(mutex_);
  while (!stop_) {
    SteadyClock::time_point wake;
    const Work work = due_locked(SteadyClock::now(), wake);
    if (work.drop.empty() && work.take.empty()) {
      wake_at_ = wake;
      if (wake == SteadyClock::time_point::max()) {
        cv_.wait(lock.native());
      } else {
        cv_.wait_until(lock.native(), wake);
      }
      wake_at_ = SteadyClock::time_point::min();  // awake: holders need not notify
      continue;
    }
    lock.unlock();
    const Done done = run(work);
    lock.lock();
    record_locked(work, done);
  }
  lock.unlock();
  service::MutexLock conn(conn_mutex_);
  conn_.reset();  // closing the connection frees every beacon at once
}

}  // namespace dblock::mysql
