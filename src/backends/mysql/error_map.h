// Translation of Connector/C++ exceptions into the dblock::Error tree. Internal.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_ERROR_MAP_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_ERROR_MAP_H_

#include <exception>
#include <string>

namespace dblock::mysql {

// Server and client error numbers dblock treats specially.
inline constexpr int kErrLockWaitTimeout = 1205;  // ER_LOCK_WAIT_TIMEOUT (also NOWAIT on a locked row)
inline constexpr int kErrDeadlock = 1213;         // ER_LOCK_DEADLOCK
inline constexpr int kErrProcAccessDenied = 1370;  // ER_PROCACCESS_DENIED_ERROR (no EXECUTE)
inline constexpr int kErrSpDoesNotExist = 1305;    // ER_SP_DOES_NOT_EXIST
inline constexpr int kErrStatementTimeout = 1969;  // ER_STATEMENT_TIMEOUT (max_statement_time)

// REQUIRES: called inside a catch block. Rethrows the current exception as a dblock::Error
// (dblock errors pass through unchanged), prefixing `context`.
[[noreturn]] void rethrow_translated(const std::string& context);

// True when `e` means the connection is unusable (lost, killed, closed, never established).
bool is_connection_failure(const std::exception& e) noexcept;

// The server or client error number of a Connector/C++ exception, 0 for anything else.
int error_code(const std::exception& e) noexcept;

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_ERROR_MAP_H_
