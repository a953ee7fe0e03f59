// SQLite result code -> dblock::Error. The "sqlstate" is the numeric extended result code.
#include "error_map.h"

#include <sqlite3.h>

#include "dblock/errors.h"

namespace dblock::sqlite {

void throw_error(int code, sqlite3* db, const std::string& context) {
  std::string detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  std::string message = "sqlite: " + context + ": " + detail;
  std::string state = std::to_string(code);
  switch (code & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw TimeoutError(message + " (database busy; raise busy_timeout?)", "sqlite", state, true);
    case SQLITE_FULL:
      throw ConnectionError(message + " (the disk holding the lock file is full)", "sqlite", state);
    case SQLITE_IOERR:
      throw ConnectionError(message + " (an I/O error on the lock file's disk)", "sqlite", state);
    case SQLITE_CANTOPEN:
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      throw ConnectionError(message, "sqlite", state);
    case SQLITE_ERROR:
      if (detail.find("no such table") != std::string::npos) {
        throw SchemaError(message + " (run `dblock migrate`)", "sqlite", state);
      }
      throw Error(message, "sqlite", state);
    case SQLITE_RANGE:
    case SQLITE_MISUSE:
    case SQLITE_TOOBIG:
      throw UsageError(message, "sqlite", state);
    default:
      throw Error(message, "sqlite", state);
  }
}

}  // namespace dblock::sqlite
