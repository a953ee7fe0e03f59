// SQLite connections: opening one (WAL, busy handler, dblock's SQL functions), running registered
// statements on it, and write transactions. Internal.
//
// A Connection is used by one thread at a time (the service's pool hands it out).
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_CONNECTION_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_CONNECTION_H_

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service/lease_service.h"
#include "dblock/service/sql/args.h"
#include "dblock/service/sql/rows.h"
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
  // Their result columns' names by Registry index; null until a row of it is first read.
  std::vector<dblock::sql::Columns> columns;
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
  // `params`: the statement's parameter names by position (Registry::params), null for an
  // application's statement (bound by position). `columns`: where the names of its result columns
  // are kept between uses, null to read them for each result. `args`, if any, are bound (bind()).
  Query(Connection& c, sqlite3_stmt* stmt, const char* name, const std::vector<std::string>* params,
        dblock::sql::Columns* columns, const dblock::sql::Args* args = nullptr)
      : c_(c), stmt_(stmt), name_(name), params_(params), columns_(columns) {
    if (args != nullptr) bind(*args);
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query();

  // Binds `args` by name. Throws std::logic_error when a parameter has no argument or an argument
  // names no parameter.
  Query& bind(const dblock::sql::Args& args);
  // An application's `?` parameters, by position (1-based).
  Query& bind_positional(int index, const Value& value);

  // True when a row is available. Throws on error.
  bool step();
  // Runs to completion, discarding rows.
  void run();
  // For single-row statements (RETURNING, scalar SELECT): steps once, keeps the first row, then
  // runs the statement to SQLITE_DONE. Finishing matters: an autocommit write commits (and its
  // error surfaces) there, and the WAL auto-checkpoint hook only runs on SQLITE_DONE. nullopt: no
  // row.
  std::optional<dblock::sql::Row> fetch();
  // Steps to the end: every row, read by column name.
  dblock::sql::Rows rows();
  // Steps to the end: every row's values in column order (an application's own statement).
  std::vector<std::vector<Value>> values();

 private:
  void check(int rc);
  void bind(int index, const dblock::sql::ArgValue& value);
  Value value(int column) const;
  dblock::sql::Row row();
  Connection& c_;
  sqlite3_stmt* stmt_;
  const char* name_;
  const std::vector<std::string>* params_;
  dblock::sql::Columns* columns_;
  dblock::sql::Columns own_columns_;  // where columns_ is null
};

// `statement` (registered) prepared on `c`, once per connection.
Query query(Connection& c, const dblock::sql::Registry& registry, const dblock::sql::Statement& statement);
// The same with `args` bound.
Query query(Connection& c, const dblock::sql::Registry& registry, const dblock::sql::Statement& statement,
            const dblock::sql::Args& args);

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
