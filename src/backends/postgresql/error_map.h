// Translation of libpqxx exceptions into the dblock::Error tree. Internal.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_ERROR_MAP_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_ERROR_MAP_H_

#include <string>
#include <string_view>

namespace dblock::postgresql {

// REQUIRES: called inside a catch block. Rethrows the current exception as a dblock::Error
// (dblock errors pass through unchanged), prefixing `context`.
[[noreturn]] void rethrow_translated(const std::string& context);

// libpq's message on one line: its lines (primary, DETAIL, HINT, "\tIs the server running…")
// joined with "; ", tabs and runs of spaces as one space, trailing blanks dropped.
std::string one_line(std::string_view message);

// A server's SQLSTATE that means "try again shortly": out of connections (53300: max_connections,
// a role's or a database's CONNECTION LIMIT) or starting up (57P03). Errors with it are retryable.
bool is_transient_state(std::string_view sqlstate) noexcept;

// True when the current exception (inside a catch block) means the connection is unusable.
bool is_connection_failure(const std::exception& e) noexcept;

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_ERROR_MAP_H_
