// Jitter and pauses between retries (dblock/service/backoff.h).
#include "dblock/service/backoff.h"

#include <algorithm>
#include <random>

namespace dblock::service {

double jitter_unit() {
  thread_local std::mt19937_64 generator{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(generator);
}

std::chrono::microseconds jittered(std::chrono::microseconds base, double spread) {
  double factor = 1.0 - spread + 2.0 * spread * jitter_unit();
  return std::chrono::microseconds(static_cast<std::int64_t>(static_cast<double>(base.count()) * factor));
}

std::chrono::steady_clock::duration refusal_pause(int n, std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  const auto pause = std::chrono::milliseconds(
      static_cast<std::int64_t>(std::min(1000, 50 << std::min(n, 5)) * (0.5 + 0.5 * jitter_unit())));
  return std::min<Clock::duration>(pause, std::max(Clock::duration::zero(), deadline - Clock::now()));
}

}  // namespace dblock::service
