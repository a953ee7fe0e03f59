// SQLite's SQL features (sql_features.h), and the Transaction they hand to application code.
#include "sql_features.h"

#include <memory>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/sql/builders.h"
#include "error_map.h"
#include "sql.h"
#include "sqlite_service.h"

namespace dblock::sqlite {

namespace {

// Application statements, prepared per call (their text is the application's).
class SqliteTransaction final : public Transaction {
 public:
  explicit SqliteTransaction(Connection& c) : c_(c) {}

  std::int64_t execute(std::string_view sql, const std::vector<Value>& params) override {
    Owned stmt(prepare(sql));
    Query q(c_, stmt.get(), "application statement", nullptr, nullptr);
    bind_all(q, params);
    q.run();
    return sqlite3_changes64(c_.db);
  }

  std::vector<std::vector<Value>> query(std::string_view sql, const std::vector<Value>& params) override {
    Owned stmt(prepare(sql));
    Query q(c_, stmt.get(), "application statement", nullptr, nullptr);
    bind_all(q, params);
    return q.values();
  }

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  using Owned = std::unique_ptr<sqlite3_stmt, Finalizer>;

  sqlite3_stmt* prepare(std::string_view sql) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(c_.db, sql.data(), static_cast<int>(sql.size()), &stmt, &tail);
    if (rc != SQLITE_OK) throw_error(rc, c_.db, "prepare failed");
    if (!stmt) throw UsageError("Transaction::execute: empty statement", "sqlite");
    if (tail && std::string_view(tail).find_first_not_of(" \t\r\n;") != std::string_view::npos) {
      sqlite3_finalize(stmt);
      throw UsageError("Transaction::execute takes one statement at a time", "sqlite");
    }
    return stmt;
  }

  static void bind_all(Query& q, const std::vector<Value>& params) {
    for (std::size_t i = 0; i < params.size(); ++i) q.bind_positional(static_cast<int>(i + 1), params[i]);
  }

  Connection& c_;
};

}  // namespace

void SqliteSqlFeatures::run_body_and_commit(Connection& c, const std::function<void(Transaction&)>& body) {
  try {
    SqliteTransaction tx(c);
    body(tx);
    exec(c, sql::kCommit);
  } catch (...) {
    rollback(c);
    throw;
  }
}

bool SqliteSqlFeatures::run_in_transaction_lock(std::string_view, std::chrono::milliseconds wait,
                                                const std::function<void(Transaction&)>& body) {
  auto c = service_.borrow();
  // BEGIN IMMEDIATE takes SQLite's database-wide write lock: it excludes every other writer of
  // the file, which is a (coarser) superset of a named transaction lock.
  c->busy_deadline = SteadyClock::now() + std::max(wait, std::chrono::milliseconds::zero());
  const int rc = sqlite3_exec(c->db, sql::kBeginImmediate.text, nullptr, nullptr, nullptr);
  if ((rc & 0xff) == SQLITE_BUSY) return false;
  if (rc != SQLITE_OK) throw_error(rc, c->db, sql::kBeginImmediate.text);
  run_body_and_commit(*c, body);
  return true;
}

void SqliteSqlFeatures::run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                                const std::function<void(Transaction&)>& body) {
  auto c = service_.borrow();
  // Holding the write lock from the check to the commit means no other process can take the
  // lease over in between: a takeover is itself a write.
  exec(*c, sql::kBeginImmediate);
  bool held = false;
  try {
    for (const auto* check : {&sql::kGuardExclusive, &sql::kGuardReader}) {
      if (service_.query(*c, *check, {{"name", name}, {"secret", secret}, {"fence", fence}}).step()) held = true;
    }
  } catch (...) {
    rollback(*c);
    throw;
  }
  const bool file_replaced = held && !service_.file_is_ours();  // then the lease and this write are in an orphan
  if (!held || file_replaced) {
    rollback(*c);
    throw LeaseLostError("sqlite: lease '" + std::string(name) + "' with fence " + std::to_string(fence) +
                             (file_replaced ? " was held in a file since deleted or replaced at " + service_.options_.path
                                            : std::string(" is no longer held")) +
                             "; guarded write rolled back",
                         "sqlite");
  }
  run_body_and_commit(*c, body);
}

bool SqliteSqlFeatures::compare_and_set(const VersionedUpdate& update) {
  const dblock::sql::BuiltStatement statement =
      dblock::sql::versioned_update(update, &service::quote_identifier, "sqlite");
  auto c = service_.borrow();
  SqliteTransaction tx(*c);
  return tx.execute(statement.sql, statement.params) == 1;
}

std::optional<std::int64_t> SqliteSqlFeatures::read_version(std::string_view table, std::string_view id_column,
                                                        const Value& id, std::string_view version_column) {
  const std::string text = dblock::sql::read_version_query(table, id_column, version_column, &service::quote_identifier);
  auto c = service_.borrow();
  SqliteTransaction tx(*c);
  return dblock::sql::read_version_result(tx.query(text, {id}), "sqlite");
}

}  // namespace dblock::sqlite
