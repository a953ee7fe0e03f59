// Release beacons (see dblock/mysql/mysql.h): while this service holds a lease on a name for
// longer than Options::beacon_delay, a background thread holds GET_LOCK on the name's beacon on a
// connection of its own, and lets go right after the lease ends; waiters block on it server-side
// (NativeWait). Internal.
//
// Thread-safe. State (beacons_) is under mutex_; the beacon connection under conn_mutex_, never
// acquired while holding mutex_. Whoever runs a statement for a beacon first claims it
// (Beacon::busy) under mutex_, so a beacon is never taken and dropped at the same time. Failures
// only cost waiters their fast wake-up: they fall back to polling.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_BEACONS_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_BEACONS_H_

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "connection.h"
#include "dblock/service/thread_annotations.h"

namespace dblock::mysql {

class Beacons {
 public:
  using SteadyClock = std::chrono::steady_clock;

  explicit Beacons(Context& context) : context_(context) {}
  ~Beacons();

  // The GET_LOCK key of `name`'s beacon.
  std::string key(std::string_view name) const;

  // All three do nothing with Options::beacon off.
  // A lease (name, secret hex) was acquired, conservatively valid until `valid_until`.
  void hold(const std::string& name, const std::string& secret, SteadyClock::time_point valid_until);
  // It was renewed.
  void refresh(const std::string& name, const std::string& secret, SteadyClock::time_point valid_until);
  // It ended. With `now` (a release), the caller lets go of the beacon itself if it can do so
  // without waiting: one round trip on the beacon connection saves a thread wake-up on the
  // hand-off path. Otherwise the beacon thread does it.
  void drop(const std::string& name, const std::string& secret, bool now) noexcept;

 private:
  // One beacon per lock name this service holds a lease on. Protected by mutex_.
  struct Beacon {
    std::map<std::string, SteadyClock::time_point> leases;  // owner secret -> conservative local expiry
    SteadyClock::time_point take_at{};
    bool held = false;  // on the beacon connection
    bool busy = false;  // a statement for it is in flight (claimed by the thread or a release)
    int failures = 0;   // consecutive GET_LOCK(key, 0) refusals
  };
  struct Work {
    std::vector<std::string> drop, take;
  };
  struct Done {
    std::vector<std::string> dropped;
    std::vector<std::pair<std::string, bool>> taken;
    bool broken = false;                 // the connection broke: every beacon is gone
    SteadyClock::time_point retry_at{};  // when broken: no new take before then
  };

  // The beacon thread: takes a beacon once its lease has been held for beacon_delay, drops it when
  // the last lease on the name ends (or its conservative local expiry passes without a renewal).
  void loop();
  // Claims what is due; sets `wake` to when something next is.
  Work due_locked(SteadyClock::time_point now, SteadyClock::time_point& wake) DBLOCK_REQUIRES(mutex_);
  // Runs `work` on the beacon connection (drops first: they are what a waiter is blocked on).
  Done run(const Work& work);
  void record_locked(const Work& work, const Done& done) DBLOCK_REQUIRES(mutex_);
  void mark_all_dropped_locked() DBLOCK_REQUIRES(mutex_);

  Context& context_;

  service::Mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, Beacon> beacons_ DBLOCK_GUARDED_BY(mutex_);
  SteadyClock::time_point wake_at_ DBLOCK_GUARDED_BY(mutex_) = SteadyClock::time_point::max();
  SteadyClock::time_point reconnect_at_ DBLOCK_GUARDED_BY(mutex_) = {};
  bool stop_ DBLOCK_GUARDED_BY(mutex_) = false;
  std::thread thread_;  // started by the first hold(), under mutex_

  service::Mutex conn_mutex_;
  std::unique_ptr<Connection> conn_ DBLOCK_GUARDED_BY(conn_mutex_);  // null until needed
  int connect_failures_ DBLOCK_GUARDED_BY(conn_mutex_) = 0;
};

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_BEACONS_H_
