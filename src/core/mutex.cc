#include "dblock/mutex.h"

#include <system_error>

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
  if (held_by_this_thread()) return false;
  auto lease = manager_.try_acquire(name_, options_);
  if (!lease) return false;
  adopt(std::move(*lease));
  return true;
}

bool Mutex::lock_until(std::chrono::steady_clock::time_point deadline) {
  if (held_by_this_thread()) {
    throw std::system_error(std::make_error_code(std::errc::resource_deadlock_would_occur),
                            "dblock::Mutex '" + name_ + "' is already held by this thread");
  }
  auto lease = manager_.acquire_until(name_, deadline, options_);
  if (!lease) return false;
  adopt(std::move(*lease));
  return true;
}

bool Mutex::held_by_this_thread() const {
  std::lock_guard<std::mutex> lock(guard_);
  return lease_.has_value() && owner_ == std::this_thread::get_id();
}

void Mutex::adopt(Lease lease) {
  std::lock_guard<std::mutex> lock(guard_);
  lease_.emplace(std::move(lease));
  owner_ = std::this_thread::get_id();
}

void Mutex::unlock() noexcept {
  std::optional<Lease> held;
  {
    std::lock_guard<std::mutex> lock(guard_);
    if (owner_ != std::this_thread::get_id()) return;  // not this thread's to release
    held.swap(lease_);
    owner_ = std::thread::id();
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
