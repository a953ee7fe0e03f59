// Retries with jittered exponential backoff: optimistic updates, and the pause between refusals.
#include <algorithm>
#include <thread>

#include "dblock/errors.h"
#include "dblock/lock_manager.h"
#include "internal.h"

namespace dblock {

bool retry_optimistic(const std::function<bool()>& attempt, const RetryOptions& options) {
  if (options.max_attempts < 1) throw UsageError("RetryOptions::max_attempts must be >= 1");
  if (options.base_delay.count() < 0 || options.max_delay < options.base_delay) {
    throw UsageError("RetryOptions delays must satisfy 0 <= base_delay <= max_delay");
  }
  std::chrono::microseconds delay = options.base_delay;
  for (int i = 1; i <= options.max_attempts; ++i) {
    try {
      if (attempt()) return true;
    } catch (const Error& e) {
      if (!e.retryable() || i == options.max_attempts) throw;
    }
    if (i == options.max_attempts) break;
    // "Full jitter": sleep uniformly in [0, delay] so that colliding writers spread out.
    std::this_thread::sleep_for(std::chrono::microseconds(
        static_cast<std::int64_t>(static_cast<double>(delay.count()) * service::jitter_unit())));
    delay = std::min<std::chrono::microseconds>(delay * 2, options.max_delay);
  }
  return false;
}

namespace detail {

std::chrono::steady_clock::time_point wait_deadline(std::chrono::milliseconds wait) {
  const auto now = std::chrono::steady_clock::now();
  if (wait < std::chrono::milliseconds::zero()) return now;
  if (wait == kWaitForever || wait > std::chrono::hours(24 * 365 * 100)) return std::chrono::steady_clock::time_point::max();
  return now + wait;
}

}  // namespace detail

}  // namespace dblock
