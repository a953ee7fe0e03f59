#include "dblock/mutex.h"

#include "dblock/errors.h"

namespace dblock {

Mutex::Mutex(LockManager& manager, std::string name, AcquireOptions options)
    : manager_(manager), name_(std::move(name)), options_(std::move(options)) {
  validate_lock_name(name_);
}

Mutex::~Mutex() {
  std::optional<Lease> held;
  {
    std::lock_guard<std::mutex> lock(guard_);
    held.swap(lease_);
  }
  // ~Lease releases.
}

void Mutex::lock() {
  if (!lock_until(std::chrono::steady_clock::time_point::max())) {
    throw TimeoutError("dblock::Mutex::lock gave up on '" + name_ + "'");  // unreachable: waits forever
  }
}

bool Mutex::try_lock() {
  auto lease = manager_.try_acquire(name_, options_);
  if (!lease) return false;
  std::lock_guard<std::mutex> lock(guard_);
  lease_.emplace(std::move(*lease));
  return true;
}

bool Mutex::lock_until(std::chrono::steady_clock::time_point deadline) {
  auto lease = manager_.acquire_until(name_, deadline, options_);
  if (!lease) return false;
  std::lock_guard<std::mutex> lock(guard_);
  lease_.emplace(std::move(*lease));
  return true;
}

void Mutex::unlock() noexcept {
  std::optional<Lease> held;
  {
    std::lock_guard<std::mutex> lock(guard_);
    held.swap(lease_);
  }
  if (held) {
    try {
      held->release();
    } catch (...) {
    }
  }
}

std::int64_t Mutex::fence() const {
  std::lock_guard<std::mutex> lock(guard_);
  if (!lease_) throw UsageError("dblock::Mutex '" + name_ + "' is not held");
  return lease_->fence();
}

const Lease& Mutex::lease() const {
  std::lock_guard<std::mutex> lock(guard_);
  if (!lease_) throw UsageError("dblock::Mutex '" + name_ + "' is not held");
  return *lease_;
}

bool Mutex::lost() const {
  std::lock_guard<std::mutex> lock(guard_);
  return !lease_ || lease_->lost();
}

}  // namespace dblock
