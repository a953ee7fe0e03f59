// SQLite connections: opening one (WAL, busy handler, dblock's SQL functions), running registered
// statements on it, and write transactions. Internal.
//
// A Connection is used by one thread at a time (the service's pool hands it out).
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_CONNECTION_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_CONNECTION_H_

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service/lease_service.h"
#include "dblock/service/sql/statement.h"
#include "dblock/sql/features.h"

namespace dblock::sqlite {

using SteadyClock = std::chrono::steady_clock;

struct Connection {
  sqlite3* db = nullptr;
  // The busy handler gives up at this instant. Set before every operation.
  SteadyClock::time_point busy_deadline;
  // Prepared statements by Registry index; null until first used on this connection.
  std::vector<sqlite3_stmt*> prepared;
  // Written by the dblock_issued_* SQL functions during sql::kAcquireExclusive.
  std::int64_t issued_fence = 0;
  std::int64_t issued_expiry = 0;
  // The lock file's clock (file_clock.h): dblock_now() = clock_base_us + CLOCK_BOOTTIME. Unset
  // until the file has its clock table; dblock_now() fails then.
  bool clock_known = false;
  std::int64_t clock_base_us = 0;

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection();
};

// Opens (creating) `path` with a busy handler that waits up to `busy_timeout` per operation, in
// WAL mode. `statements`: how many registered statements the connection caches. Throws
// ConnectionError when the file cannot be opened or is a symbolic link, SchemaError when it is
// another application's database and `adopt_existing` is false.
std::unique_ptr<Connection> open_connection(const std::string& path, std::chrono::milliseconds busy_timeout,
                                            std::size_t statements, bool adopt_existing);

// Runs an unregistered statement (transaction control, pragmas). Throws the mapped error.
void exec(Connection& c, const dblock::sql::Statement& statement);
bool in_transaction(const Connection& c);
void rollback(Connection& c) noexcept;

// A reset-on-destruction cursor over one prepared statement.
class Query {
 public:
  Query(Connection& c, sqlite3_stmt* stmt) : c_(c), stmt_(stmt) {}
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query();

  Query& bind(int index, std::string_view text);
  Query& bind(int index, const OwnerSecret& secret);  // binds its digest (owner_digest.h): what the tables store
  Query& bind(int index, std::int64_t value);
  Query& bind_null(int index);
  Query& bind(int index, const Value& value);

  // True when a row is available. Throws on error.
  bool step();
  // Runs to completion, discarding rows.
  void run();
  // For single-row statements (RETURNING, scalar SELECT): steps once, copies the first row's
  // integer columns into `out`, then runs the statement to SQLITE_DONE. Finishing matters: an
  // autocommit write commits (and its error surfaces) there, and the WAL auto-checkpoint hook
  // only runs on SQLITE_DONE. Returns whether there was a row. NULL columns read as 0.
  bool fetch(std::initializer_list<std::int64_t*> out);
  std::int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string text(int column) const;
  Value value(int column) const;
  int columns() const { return sqlite3_column_count(stmt_); }
  // Steps to the end; every row as Values.
  std::vector<std::vector<Value>> rows();

 private:
  void check(int rc);
  Connection& c_;
  sqlite3_stmt* stmt_;
};

// `statement` (registered) prepared on `c`, once per connection.
Query query(Connection& c, const dblock::sql::Registry& registry, const dblock::sql::Statement& statement);

// BEGIN IMMEDIATE now; COMMIT on commit(), ROLLBACK when destroyed without it.
class WriteTxn {
 public:
  explicit WriteTxn(Connection& c);
  ~WriteTxn();
  WriteTxn(const WriteTxn&) = delete;
  WriteTxn& operator=(const WriteTxn&) = delete;
  void commit();

 private:
  Connection& c_;
  bool done_ = false;
};

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_CONNECTION_H_
