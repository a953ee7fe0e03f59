// The deadline of the service call in progress on this thread (dblock/service/call_deadline.h).
#include "dblock/service/call_deadline.h"

#include <algorithm>

namespace dblock {
namespace {

thread_local std::chrono::steady_clock::time_point current = std::chrono::steady_clock::time_point::max();

}  // namespace

std::chrono::steady_clock::time_point call_deadline() noexcept { return current; }

namespace service {

CallDeadlineScope::CallDeadlineScope(std::chrono::steady_clock::time_point deadline) noexcept : previous_(current) {
  // Saturating: time_point::max() stays max().
  const auto floor =
      deadline == std::chrono::steady_clock::time_point::max() ? deadline : std::chrono::steady_clock::now() + kMinCallTime;
  current = std::max(deadline, floor);
}

CallDeadlineScope::~CallDeadlineScope() { current = previous_; }

}  // namespace service
}  // namespace dblock
