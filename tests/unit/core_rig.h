// Set-up shared by the engine's unit tests: managers on one in-memory store, and a bounded wait
// for a condition.
#ifndef DBLOCK_TESTS_UNIT_CORE_RIG_H_
#define DBLOCK_TESTS_UNIT_CORE_RIG_H_

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "dblock/dblock.h"
#include "memory_service.h"

namespace dblock::testing {

// One in-memory "server"; every open() is another process on it.
struct Rig {
  std::shared_ptr<MemoryStore> store = std::make_shared<MemoryStore>();

  // A manager on the store. `service` (optional) receives its MemoryService, owned by the manager.
  std::unique_ptr<LockManager> open(MemoryService::Config config = {}, ManagerOptions options = {},
                                    MemoryService** service = nullptr) {
    auto owned = std::make_unique<MemoryService>(store, config);
    if (service != nullptr) *service = owned.get();
    return std::make_unique<LockManager>(std::move(owned), std::move(options));
  }
};

// Polls `condition` every millisecond until it holds or `limit` passes; returns the last answer.
inline bool eventually(const std::function<bool()>& condition,
                       std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// An on_lost callback that records the last reason it was given. Thread-safe.
class LostReasons {
 public:
  std::function<void(const LostLease&)> callback() {
    return [this](const LostLease& lost) {
      std::lock_guard<std::mutex> lock(mutex_);
      last_ = lost.reason;
      ++count_;
    };
  }
  std::string last() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }
  int count() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return count_;
  }

 private:
  mutable std::mutex mutex_;
  std::string last_;
  int count_ = 0;
};

// Options that make polling slow, so that only a wake-up (an event, a release in this process, a
// native wait, the probe) can end a wait quickly.
inline ManagerOptions slow_polls() {
  ManagerOptions options;
  options.min_poll = std::chrono::seconds(5);
  options.max_poll = std::chrono::seconds(5);
  return options;
}

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_UNIT_CORE_RIG_H_
