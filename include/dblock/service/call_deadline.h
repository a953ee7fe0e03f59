// dblock/service/call_deadline.h — the deadline of the service call in progress on this thread:
// call_deadline() is what a service reads (every blocking call it makes ends by it); a
// CallDeadlineScope is how the engine, and a test or tool that drives a service as the engine
// does, sets it around a call.
#ifndef DBLOCK_SERVICE_CALL_DEADLINE_H_
#define DBLOCK_SERVICE_CALL_DEADLINE_H_

#include <chrono>

#include "dblock/service/lease_service.h"

namespace dblock {

// The deadline of the service call the engine is making on this thread (steady_clock): for an
// attempt, the caller's wait; for a renewal or a release, the lease's safe-until; for clean-up, a
// short grace. Never less than 2 s from the call's start; time_point::max() outside such a call.
// A service bounds its blocking I/O by it and fails the call (ConnectionError) once it passes,
// dropping the connection. Set by the engine around each call; services only read it.
std::chrono::steady_clock::time_point call_deadline() noexcept;

namespace service {

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

}  // namespace service
}  // namespace dblock

#endif  // DBLOCK_SERVICE_CALL_DEADLINE_H_
