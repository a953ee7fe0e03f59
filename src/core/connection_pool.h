// Idle connections kept for reuse, shared by every backend. Internal; includes no driver header
// (the connection type is the backend's own).
//
// Thread-safe. The pool owns what it holds; take() hands ownership to the caller, who either
// put()s the connection back or drops it (a broken connection is never put back).
#ifndef DBLOCK_SRC_CORE_CONNECTION_POOL_H_
#define DBLOCK_SRC_CORE_CONNECTION_POOL_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

namespace dblock::detail {

template <class Connection>
class IdlePool {
 public:
  explicit IdlePool(std::size_t max_idle = 16) : max_idle_(max_idle) {}

  // The most recently returned idle connection, or nullptr when none is idle (connect a new one).
  std::unique_ptr<Connection> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<Connection> c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }

  // Keeps `c` for reuse, or closes it (drops it) when max_idle connections are already idle.
  void put(std::unique_ptr<Connection> c) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(c));
  }

 private:
  const std::size_t max_idle_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_;  // GUARDED_BY(mutex_)
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_CONNECTION_POOL_H_
