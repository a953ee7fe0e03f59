// The clock of every lease's safe-until: CLOCK_BOOTTIME, which, unlike steady_clock
// (CLOCK_MONOTONIC), keeps counting while the machine is suspended. A client resumed after a
// suspend longer than its TTL must see its leases' safe time as passed: the service expired them
// meanwhile. Neither clock moves with wall-clock steps. Internal to the engine.
#ifndef DBLOCK_SRC_CORE_BOOT_CLOCK_H_
#define DBLOCK_SRC_CORE_BOOT_CLOCK_H_

#include <chrono>

namespace dblock::detail {

using SteadyClock = std::chrono::steady_clock;

// A std::chrono clock over CLOCK_BOOTTIME (nanoseconds since boot). Thread-safe.
struct BootClock {
  using duration = std::chrono::nanoseconds;
  using rep = duration::rep;
  using period = duration::period;
  using time_point = std::chrono::time_point<BootClock>;
  static constexpr bool is_steady = true;
  static time_point now() noexcept;
};

// Tests only: adds `d` to every later BootClock reading, as if the machine had slept that long
// (steady_clock does not move). Never called by the library.
void add_suspended_time_for_testing(std::chrono::nanoseconds d) noexcept;

// One instant read on both clocks: when a call was sent. Safe-until counts from `boot`; renewal
// times, waits and call deadlines (condition variables, sockets) from `steady`. The two readings
// are within 2 µs of each other (a reading the thread was preempted in is taken again), so that
// converting between the clocks (to_steady) is that exact too.
struct Instant {
  SteadyClock::time_point steady;
  BootClock::time_point boot;
  static Instant now() noexcept;
};

// `t` as a steady_clock point, for waits and call deadlines: now on steady_clock plus what is left
// until `t` on the boot clock (in the past when `t` has passed, suspended time included).
SteadyClock::time_point to_steady(BootClock::time_point t) noexcept;

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_BOOT_CLOCK_H_
