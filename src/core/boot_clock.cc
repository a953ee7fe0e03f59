#include "boot_clock.h"

#include <time.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>

namespace dblock::detail {

namespace {
std::atomic<std::int64_t> suspended_for_testing_ns{0};
}  // namespace

void add_suspended_time_for_testing(std::chrono::nanoseconds d) noexcept {
  suspended_for_testing_ns.fetch_add(d.count(), std::memory_order_relaxed);
}

BootClock::time_point BootClock::now() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_BOOTTIME, &ts) != 0) std::abort();  // Linux >= 2.6.39 always has it
  return time_point(std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec) +
                    std::chrono::nanoseconds(suspended_for_testing_ns.load(std::memory_order_relaxed)));
}

Instant Instant::now() noexcept {
  constexpr auto kClose = std::chrono::microseconds(2);
  Instant out{};
  // Bounded: a thread is not preempted between two adjacent clock reads many times in a row.
  for (int attempt = 0; attempt < 16; ++attempt) {
    const auto before = SteadyClock::now();
    out.boot = BootClock::now();
    const auto after = SteadyClock::now();
    out.steady = before + (after - before) / 2;
    if (after - before <= kClose) break;
  }
  return out;
}

SteadyClock::time_point to_steady(BootClock::time_point t) noexcept {
  if (t == BootClock::time_point::max()) return SteadyClock::time_point::max();
  const Instant now = Instant::now();
  return now.steady + std::chrono::duration_cast<SteadyClock::duration>(t - now.boot);
}

}  // namespace dblock::detail
