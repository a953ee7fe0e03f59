// dblock/sqlite/sqlite.h — the embedded SQLite backend: options and factory.
//
// The database is one file shared by every process on the host. The backend opens it in WAL mode
// with a busy handler, keeps a small pool of connections (one per concurrent caller) and never
// shares a connection between threads. Expiry is computed in SQL from SQLite's clock (the local
// system clock, read by the database engine inside the statement).
//
// SQLite has no server: all processes must see the same file through a local file system
// (WAL mode does not work over network file systems).
#ifndef DBLOCK_SQLITE_SQLITE_H_
#define DBLOCK_SQLITE_SQLITE_H_

#include <chrono>
#include <memory>
#include <string>

#include "dblock/service.h"

namespace dblock {
struct Url;
namespace sqlite {

struct Options {
  std::string path;                              // database file; required
  std::string table_prefix = "dblock_";          // validated like ManagerOptions::table_prefix
  std::chrono::milliseconds busy_timeout{5'000}; // how long a statement waits for the write lock
  bool create_directories = true;                // create the file's parent directories
};

// Opens the file (creating it and its directories as needed). Throws ConnectionError if the file
// cannot be opened, UsageError for bad options.
std::unique_ptr<LeaseService> make_service(const Options& options);

// From a parsed sqlite: URL. Recognised parameters: busy_timeout (ms).
std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix);

}  // namespace sqlite
}  // namespace dblock

#endif  // DBLOCK_SQLITE_SQLITE_H_
