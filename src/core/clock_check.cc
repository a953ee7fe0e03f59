#include "clock_check.h"

namespace dblock::detail {

std::chrono::microseconds clock_jump(const ClockSample& before, const ClockSample& after,
                                     std::chrono::microseconds tolerance) noexcept {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  const microseconds service_moved{after.service_now_us - before.service_now_us};
  const auto least = duration_cast<microseconds>(after.sent - before.answered) - tolerance;
  const auto most = duration_cast<microseconds>(after.answered - before.sent) + tolerance;
  if (service_moved > most) return service_moved - most;
  if (service_moved < least) return service_moved - least;
  return microseconds::zero();
}

}  // namespace dblock::detail
