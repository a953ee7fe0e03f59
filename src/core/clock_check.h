// Checks the service's clock against this host's between two renewals of one lease: a server
// whose clock is stepped forward expires leases early (their holders believe them safe), one
// stepped back late. Internal to the engine.
#ifndef DBLOCK_SRC_CORE_CLOCK_CHECK_H_
#define DBLOCK_SRC_CORE_CLOCK_CHECK_H_

#include <chrono>
#include <cstdint>

#include "boot_clock.h"

namespace dblock::detail {

// One reading of the service's clock: its "now" during a renewal (the new expiry minus the time
// it was granted for), and when that renewal was sent and answered on this host's boot clock.
struct ClockSample {
  std::int64_t service_now_us = 0;
  BootClock::time_point sent;
  BootClock::time_point answered;
};

// How far the service's clock moved between `before` and `after` beyond what this host's clock
// allows: the service read its clock somewhere between a renewal's send and its answer, so its
// advance must lie within [after.sent - before.answered, after.answered - before.sent], widened by
// `tolerance` on each side. Positive: it ran ahead (stepped forward); negative: it fell behind;
// zero: consistent.
std::chrono::microseconds clock_jump(const ClockSample& before, const ClockSample& after,
                                     std::chrono::microseconds tolerance) noexcept;

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_CLOCK_CHECK_H_
