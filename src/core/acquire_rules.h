// The rules every acquire path shares (acquire.cc, acquire_all.cc). Internal.
#ifndef DBLOCK_SRC_CORE_ACQUIRE_RULES_H_
#define DBLOCK_SRC_CORE_ACQUIRE_RULES_H_

#include <chrono>

#include "boot_clock.h"
#include "dblock/errors.h"
#include "dblock/options.h"

namespace dblock::detail {

// The TTL an acquire asks for (options.ttl, or `default_ttl` when zero); UsageError when it is
// not positive or outside [kMinTtl, kMaxTtl].
std::chrono::milliseconds checked_ttl(const AcquireOptions& options, std::chrono::milliseconds default_ttl);

// The deadline of one service call of a wait ending at `deadline`: the caller's, but no call of a
// very long wait (kWaitForever) blocks on a dead connection for more than 30 s.
SteadyClock::time_point bounded_call_deadline(SteadyClock::time_point deadline);

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_ACQUIRE_RULES_H_
