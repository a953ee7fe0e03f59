// dblock/service/identifiers.h — the names a service takes from configuration (table prefixes,
// application tables and columns) validated before they reach a statement, and quoted there; and
// the one message for a semaphore asked for with another number of permits.
//
// Every function is pure and thread-safe.
#ifndef DBLOCK_SERVICE_IDENTIFIERS_H_
#define DBLOCK_SERVICE_IDENTIFIERS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/errors.h"

namespace dblock::service {

// Throws UsageError unless `prefix` matches [a-z_][a-z0-9_]{0,39}.
void validate_table_prefix(std::string_view prefix);
// Throws UsageError unless `identifier` is a plain SQL identifier [A-Za-z_][A-Za-z0-9_]{0,62},
// optionally schema-qualified once ("schema.table"). `what` names it in the message.
void validate_identifier(std::string_view identifier, std::string_view what);
// Double-quotes a validated identifier (each dot-separated part), the SQL-standard quoting that
// SQLite and PostgreSQL accept. REQUIRES: validate_identifier (or validate_table_prefix) passed.
std::string quote_identifier(std::string_view identifier);

// What a service throws when a shared acquire asking for `asked` permits (0: a plain reader) finds
// live readers of `name` granted under `held` (AcquireRequest::permits).
UsageError permits_mismatch(std::string_view service, std::string_view name, std::int64_t held, std::int64_t asked);

// Shared holders' holder strings as a record of them says them (LeaseInfo::holder,
// ForceReleaseRecord::evicted): sorted, joined by ','.
std::string joined_holders(std::vector<std::string> holders);

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_IDENTIFIERS_H_
