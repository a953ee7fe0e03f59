// Helpers private to the engine (src/core). Services use the kit (dblock/service/kit.h) instead.
#ifndef DBLOCK_SRC_CORE_INTERNAL_H_
#define DBLOCK_SRC_CORE_INTERNAL_H_

#include <chrono>
#include <string>
#include <string_view>

#include "dblock/errors.h"
#include "dblock/service/backoff.h"
#include "dblock/service/call_deadline.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/lease_service.h"

namespace dblock::detail {

// The kit's helpers, as the engine's own code names them.
using service::CallDeadlineScope;
using service::jitter_unit;
using service::jittered;
using service::quote_identifier;
using service::refusal_pause;
using service::validate_identifier;
using service::validate_table_prefix;

// When a wait of `wait` from now ends: now for zero or negative, time_point::max() for
// kWaitForever (and, saturating, for anything over 100 years), else now + wait. The one rule every
// wait of the API uses.
std::chrono::steady_clock::time_point wait_deadline(std::chrono::milliseconds wait);

// The UnsupportedError for `what` on `service` ("... is not supported by the <name> backend").
[[noreturn]] void unsupported(const LeaseService& service, const std::string& what);

// "<hostname>:<pid>:<instance>" where instance is a per-process counter.
std::string default_holder();
// ManagerOptions::holder: 1-255 bytes of UTF-8 without control characters, like a lock name.
// Throws UsageError naming "holder".
void validate_holder(std::string_view holder);

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_INTERNAL_H_
