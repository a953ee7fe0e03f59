// The transient-fault rule, and the string forms of the small enums.
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/options.h"

namespace dblock {

bool is_transient(const Error& e) noexcept {
  return e.retryable() || dynamic_cast<const ConnectionError*>(&e) != nullptr ||
         dynamic_cast<const InDoubtError*>(&e) != nullptr;
}

const char* to_string(LockMode mode) noexcept {
  return mode == LockMode::kShared ? "shared" : "exclusive";
}

const char* to_string(ReleaseResult result) noexcept {
  switch (result) {
    case ReleaseResult::kReleased: return "released";
    case ReleaseResult::kAlreadyLost: return "already lost";
    case ReleaseResult::kInDoubt: return "in doubt";
    case ReleaseResult::kShutDown: return "released by the manager's shutdown";
  }
  return "?";
}

}  // namespace dblock
