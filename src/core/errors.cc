// String forms of the small enums.
#include "dblock/lease.h"
#include "dblock/options.h"

namespace dblock {

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
