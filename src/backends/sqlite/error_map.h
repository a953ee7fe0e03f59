// Translation of SQLite result codes into the dblock::Error tree. Internal.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_ERROR_MAP_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_ERROR_MAP_H_

#include <string>

struct sqlite3;

namespace dblock::sqlite {

// Throws the dblock::Error subclass matching `code` (an extended result code), with `context`
// and SQLite's message. Never returns.
[[noreturn]] void throw_error(int code, sqlite3* db, const std::string& context);

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_ERROR_MAP_H_
