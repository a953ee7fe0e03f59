// dblock/mutex.h — a named distributed mutex meeting the C++ TimedLockable requirements.
//
//   dblock::Mutex m(*manager, "orders/123");
//   std::unique_lock lock(m, std::chrono::seconds(5));   // try_lock_for
//   if (lock) write_with_fence(m.fence());
//
// A Mutex may be shared by many threads like std::mutex: at most one of them holds it at a time,
// and the backend lease keeps other processes out. It is not recursive: lock() or try_lock_for()
// by the thread that holds it throws std::system_error with
// std::errc::resource_deadlock_would_occur (what libstdc++'s std::mutex reports where it detects
// it), and try_lock() by that thread returns false; AcquireOptions::reentrant changes nothing here. unlock() never throws: backend failures go to
// ManagerOptions::on_background_error. The LockManager must outlive the Mutex.
#ifndef DBLOCK_MUTEX_H_
#define DBLOCK_MUTEX_H_

#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "dblock/lock_manager.h"

namespace dblock {

class Mutex {
 public:
  Mutex(LockManager& manager, std::string name, AcquireOptions options = {});
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;
  ~Mutex();  // releases if still held

  void lock();                 // blocks without limit
  bool try_lock();             // one attempt
  // Releases the calling thread's hold. By a thread that does not hold the Mutex it releases
  // nothing (std::mutex leaves that undefined; here the holder keeps its lock).
  void unlock() noexcept;

  template <class Rep, class Period>
  bool try_lock_for(const std::chrono::duration<Rep, Period>& wait) {
    return try_lock_until(std::chrono::steady_clock::now() + wait);
  }
  template <class Clock, class Duration>
  bool try_lock_until(const std::chrono::time_point<Clock, Duration>& deadline) {
    // Convert foreign clocks once; the wait itself always runs on steady_clock.
    auto remaining = deadline - Clock::now();
    return lock_until(std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(remaining));
  }

  // REQUIRES: held by the calling thread.
  std::int64_t fence() const;
  const Lease& lease() const;
  // True if the lease behind the current hold was lost (or nothing is held).
  bool lost() const;
  const std::string& name() const { return name_; }

 private:
  bool lock_until(std::chrono::steady_clock::time_point deadline);
  bool held_by_this_thread() const;
  void adopt(Lease lease);

  // Constant after construction.
  LockManager& manager_;
  const std::string name_;
  const AcquireOptions options_;

  // Protected by guard_. Written only by the thread that holds the lock.
  mutable std::mutex guard_;
  std::optional<Lease> lease_;
  std::thread::id owner_;  // the holding thread; default-constructed while not held
};

}  // namespace dblock

#endif  // DBLOCK_MUTEX_H_
