// Sets dblock::call_deadline() (dblock/service.h) around the engine's calls to its service.
// Internal to the engine.
#ifndef DBLOCK_SRC_CORE_CALL_DEADLINE_H_
#define DBLOCK_SRC_CORE_CALL_DEADLINE_H_

#include <chrono>

#include "dblock/service/lease_service.h"

namespace dblock::detail {

// Sets call_deadline() on this thread for its lifetime (then restores the previous one). Not
// thread-safe to share: one scope belongs to the thread that made it.
class CallDeadlineScope {
 public:
  // The least a call is given, even when the caller's deadline is nearer: time to be answered.
  // A scope made with `now` as its deadline gives exactly this (clean-up, reaper batches).
  static constexpr std::chrono::milliseconds kMinCallTime{2000};
  explicit CallDeadlineScope(std::chrono::steady_clock::time_point deadline) noexcept;
  ~CallDeadlineScope();
  CallDeadlineScope(const CallDeadlineScope&) = delete;
  CallDeadlineScope& operator=(const CallDeadlineScope&) = delete;

 private:
  std::chrono::steady_clock::time_point previous_;
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_CALL_DEADLINE_H_
