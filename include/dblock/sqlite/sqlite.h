// dblock/sqlite/sqlite.h — the embedded SQLite backend: options and factory.
//
// The database is one file shared by every process on the host. The backend opens it in WAL mode
// with a busy handler, keeps a small pool of connections (one per concurrent caller) and never
// shares a connection between threads. Expiry is computed in SQL on the lock file's clock (the
// machine's CLOCK_BOOTTIME plus a base the file keeps per boot, read inside the statement), which
// wall-clock steps do not move.
//
// SQLite has no server: all processes must see the same file through a local file system
// (WAL mode does not work over network file systems).
#ifndef DBLOCK_SQLITE_SQLITE_H_
#define DBLOCK_SQLITE_SQLITE_H_

#include <chrono>
#include <memory>
#include <string>

#include "dblock/service/lease_service.h"

namespace dblock {
struct Url;
namespace sqlite {

struct Options {
  std::string path;                              // database file; required
  std::string table_prefix = "dblock_";          // validated like ManagerOptions::table_prefix
  std::chrono::milliseconds busy_timeout{5'000}; // how long a statement waits for the write lock
  bool create_directories = true;                // create the file's missing parent directories (mode 0700)
  // An existing SQLite database with tables of its own but no dblock schema (another
  // application's file) is refused unless this is set: dblock would add its tables and switch the
  // file to WAL mode. Set it to keep the lock tables in the application's own database, which is
  // what guarded writes to the application's tables on SQLite need.
  bool adopt_existing = false;
};

// Opens the file, creating it (mode 0600 whatever the umask) and its missing directories (0700) as
// needed. Never follows a symbolic link at the file's own name. Throws ConnectionError if the file
// cannot be opened or is a link, SchemaError for another application's database (see
// adopt_existing), UsageError for bad options.
std::unique_ptr<LeaseService> make_service(const Options& options);

// From a parsed sqlite: URL. Recognised parameters: busy_timeout (ms), adopt (yes/no:
// Options::adopt_existing).
std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix);

}  // namespace sqlite
}  // namespace dblock

#endif  // DBLOCK_SQLITE_SQLITE_H_
