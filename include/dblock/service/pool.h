// dblock/service/pool.h — idle connections kept for reuse, and the handle a caller borrows one
// through. Includes no driver header (the connection type is the service's own). A service that
// connects with a deadline of its own (Redis) uses it as an idle store only: take(), put(), clear().
//
// Thread-safe. A borrowed connection is used by one thread; it goes back to the pool when the
// handle is destroyed, unless discard() was called or the pool's check refuses it (a broken
// connection, one left inside a transaction).
#ifndef DBLOCK_SERVICE_POOL_H_
#define DBLOCK_SERVICE_POOL_H_

#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "dblock/service/thread_annotations.h"

namespace dblock::service {

template <class Connection>
class Pool {
 public:
  // Opens a new connection; throws the service's dblock::Error.
  using Connect = std::function<std::unique_ptr<Connection>()>;
  // Whether a returned connection may be reused (it may also clean it up, e.g. roll back).
  using Reusable = std::function<bool(Connection&)>;

  class Borrowed {
   public:
    Borrowed(Pool* pool, std::unique_ptr<Connection> c) : pool_(pool), c_(std::move(c)) {}
    Borrowed(Borrowed&& other) noexcept = default;
    Borrowed& operator=(Borrowed&&) = delete;
    Borrowed(const Borrowed&) = delete;
    ~Borrowed() {
      if (c_ && !discard_) pool_->put(std::move(c_));
    }
    Connection& operator*() const { return *c_; }
    Connection* operator->() const { return c_.get(); }
    // The connection is closed instead of going back (its state is unknown).
    void discard() { discard_ = true; }

   private:
    Pool* pool_;
    std::unique_ptr<Connection> c_;
    bool discard_ = false;
  };

  Pool(Connect connect, Reusable reusable, std::size_t max_idle = 16)
      : connect_(std::move(connect)), reusable_(std::move(reusable)), max_idle_(max_idle) {}
  // An idle store: every returned connection is kept (up to max_idle); borrow() and connect() are
  // not to be called.
  explicit Pool(std::size_t max_idle) : max_idle_(max_idle) {}

  // The most recently returned idle connection, or a new one. REQUIRES: a Connect was given.
  Borrowed borrow() {
    std::unique_ptr<Connection> c = take();
    if (!c) c = connect_();
    return Borrowed(this, std::move(c));
  }

  // An idle connection (ownership passes to the caller), or nullptr when none is idle.
  std::unique_ptr<Connection> take() {
    MutexLock lock(mutex_);
    if (idle_.empty()) return nullptr;
    std::unique_ptr<Connection> c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }

  // Keeps `c` for reuse when the check allows it and fewer than max_idle are idle; else closes it.
  void put(std::unique_ptr<Connection> c) {
    if (!c || (reusable_ && !reusable_(*c))) return;
    MutexLock lock(mutex_);
    if (idle_.size() < max_idle_) idle_.push_back(std::move(c));
  }

  std::unique_ptr<Connection> connect() { return connect_(); }

  // Closes every idle connection (after a failure that may have broken them all: a restart).
  void clear() {
    std::vector<std::unique_ptr<Connection>> dropped;
    MutexLock lock(mutex_);
    dropped.swap(idle_);
  }

 private:
  // Constant after construction.
  const Connect connect_;
  const Reusable reusable_;
  const std::size_t max_idle_;

  Mutex mutex_;
  std::vector<std::unique_ptr<Connection>> idle_ DBLOCK_GUARDED_BY(mutex_);
};

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_POOL_H_
