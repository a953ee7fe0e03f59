// Internal helpers shared by the core and the backends. Not part of the public API.
#ifndef DBLOCK_SRC_CORE_INTERNAL_H_
#define DBLOCK_SRC_CORE_INTERNAL_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "dblock/errors.h"

namespace dblock::detail {

// Throws UsageError unless `prefix` matches [a-z_][a-z0-9_]{0,39}.
void validate_table_prefix(std::string_view prefix);
// Throws UsageError unless `identifier` is a plain SQL identifier [A-Za-z_][A-Za-z0-9_]{0,62},
// optionally schema-qualified once ("schema.table"). `what` names it in the message.
void validate_identifier(std::string_view identifier, std::string_view what);
// Double-quotes a validated identifier (each dot-separated part), the SQL-standard quoting that
// SQLite and PostgreSQL accept.
std::string quote_identifier(std::string_view identifier);

// Uniform random double in [0, 1) from a per-thread generator seeded from the OS (not for secrets).
double jitter_unit();
// `base` scaled by a random factor in [1 - spread, 1 + spread].
std::chrono::microseconds jittered(std::chrono::microseconds base, double spread = 0.5);
// The pause before the n-th retry (n from 0) of a refusal that may pass, when opening or taking a
// session lock: 50 ms doubling to 1 s, scaled by [0.5, 1) so that callers refused together do not
// come back together; never past `deadline` (retry.cc).
std::chrono::steady_clock::duration refusal_pause(int n, std::chrono::steady_clock::time_point deadline);

// When a wait of `wait` from now ends: now for zero or negative, time_point::max() for
// kWaitForever (and, saturating, for anything over 100 years), else now + wait. The one rule every
// wait of the API uses.
std::chrono::steady_clock::time_point wait_deadline(std::chrono::milliseconds wait);

// "<hostname>:<pid>:<instance>" where instance is a per-process counter.
std::string default_holder();
// ManagerOptions::holder: 1-255 bytes of UTF-8 without control characters, like a lock name.
// Throws UsageError naming "holder".
void validate_holder(std::string_view holder);

// What a service throws when a shared acquire asking for `asked` permits (0: a plain reader) finds
// live readers of `name` granted under `held` (AcquireRequest::permits).
UsageError permits_mismatch(std::string_view service, std::string_view name, std::int64_t held, std::int64_t asked);

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_INTERNAL_H_
