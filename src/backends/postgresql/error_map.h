// Translation of libpqxx exceptions into the dblock::Error tree. Internal.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_ERROR_MAP_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_ERROR_MAP_H_

#include <string>

namespace dblock::postgresql {

// REQUIRES: called inside a catch block. Rethrows the current exception as a dblock::Error
// (dblock errors pass through unchanged), prefixing `context`.
[[noreturn]] void rethrow_translated(const std::string& context);

// True when the current exception (inside a catch block) means the connection is unusable.
bool is_connection_failure(const std::exception& e) noexcept;

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_ERROR_MAP_H_
