#include "sql_features.h"

#include <cppconn/exception.h>
#include <cppconn/resultset.h>

#include <cstdio>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/sql/builders.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::mysql {

namespace {

using dblock::sql::as_int;
using dblock::sql::is_null;

// Application statements, prepared on the transaction's connection (cached there).
class MyTransaction final : public Transaction {
 public:
  MyTransaction(const Context& context, Connection& c) : context_(context), c_(c) {}

  std::int64_t execute(std::string_view sql, const std::vector<Value>& params) override {
    try {
      return bind(sql, params).executeUpdate();
    } catch (...) {
      rethrow_translated("statement failed");
    }
  }

  std::vector<std::vector<Value>> query(std::string_view sql, const std::vector<Value>& params) override {
    try {
      std::unique_ptr<::sql::ResultSet> rs(bind(sql, params).executeQuery());
      return fetch_values(*rs);
    } catch (...) {
      rethrow_translated("statement failed");
    }
  }

 private:
  ::sql::PreparedStatement& bind(std::string_view sql, const std::vector<Value>& params) {
    ::sql::PreparedStatement& ps = context_.app_statement(c_, sql);
    for (std::size_t i = 0; i < params.size(); ++i) bind_value(ps, static_cast<unsigned>(i + 1), params[i]);
    return ps;
  }

  const Context& context_;
  Connection& c_;
};

// The prefix that bounds a row lock's wait in milliseconds (sql::kWaitBoundFormat), or "".
std::string wait_bound(const RowLockRequest& request) {
  if (request.wait != RowLockWait::kWait || request.wait_timeout <= std::chrono::milliseconds::zero()) return "";
  const auto ms = request.wait_timeout.count();
  char prefix[160];
  std::snprintf(prefix, sizeof(prefix), sql::kWaitBoundFormat, static_cast<long long>(ms / 1000),
                static_cast<long long>(ms % 1000), static_cast<long long>((ms + 999) / 1000));
  return prefix;
}

}  // namespace

bool MySqlFeatures::run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                                            const std::function<void(Transaction&)>& body) {
  check_name(name);
  const std::string key = lock_key(context_.options().database, name);
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);  // the whole transaction, the application's statements included
  try {
    Rows rows = context_.query(*c, sql::kXactBegin, {{"key", key}, {"timeout_s", lock_seconds(wait)}});
    const Row& row = rows.at(0);
    if (row.is_null("got")) {
      c.discard();
      throw Error("mysql: GET_LOCK failed for '" + std::string(name) + "'", kServiceName);
    }
    if (!row.get<bool>("got")) return false;
  } catch (const std::exception& e) {
    if (is_broken(*c, e)) c.discard();
    rethrow_translated("transaction lock");
  }
  finish_transaction(c, body, &sql::kXactCommit, &sql::kXactRollback, {{"key", key}});
  return true;
}

void MySqlFeatures::run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                                const std::function<void(Transaction&)>& body) {
  check_name(name);
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);  // the whole transaction, the application's statements included
  bool held = false;
  try {
    Rows rows = context_.query(*c, sql::kGuardBegin,
                               {{"name", std::string(name)}, {"secret", secret.hex()}, {"fence", fence}});
    held = rows.at(0).get<bool>("held");
    if (!held) c->plain->execute(sql::kRollback.text);
  } catch (const std::exception& e) {
    c.discard();  // the transaction may be open: never hand this connection to anyone else
    rethrow_translated("guard");
  }
  if (!held) {
    throw LeaseLostError("mysql: lease '" + std::string(name) + "' with fence " + std::to_string(fence) +
                             " is no longer held; guarded write rolled back",
                         kServiceName);
  }
  finish_transaction(c, body, nullptr, nullptr, {});
}

bool MySqlFeatures::run_with_locked_rows(const RowLockRequest& request, const RowsBody& body) {
  // innodb_lock_wait_timeout counts whole seconds (MariaDB's FOR UPDATE WAIT n too), so the
  // millisecond bound comes from max_statement_time, which also interrupts a lock wait.
  dblock::sql::BuiltStatement statement =
      dblock::sql::row_lock_query(request, &quote_identifier, "LOCK IN SHARE MODE", kServiceName);
  statement.sql = wait_bound(request) + statement.sql;
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);  // the whole transaction, the application's statements included
  std::vector<std::vector<Value>> rows;
  bool discarded = false;
  try {
    c->plain->execute(sql::kStartTransaction.text);
    MyTransaction t(context_, *c);
    rows = t.query(statement.sql, statement.params);
  } catch (const std::exception& e) {
    discarded = is_broken(*c, e);
    if (!discarded) {
      try {
        c->plain->execute(sql::kRollback.text);
      } catch (...) {
        discarded = true;
      }
    }
    if (discarded) c.discard();
    // NOWAIT met a locked row, or the wait ran out: 1205 (lock wait), 1969 (max_statement_time).
    if (dynamic_cast<const TimeoutError*>(&e) != nullptr && !discarded) return false;
    rethrow_translated("row lock");
  }
  finish_transaction(c, [&](Transaction& t) { body(t, rows); }, nullptr, nullptr, {});
  return true;
}

bool MySqlFeatures::compare_and_set(const VersionedUpdate& update) {
  const dblock::sql::BuiltStatement statement = dblock::sql::versioned_update(update, &quote_identifier, kServiceName);
  // Not retried on a fresh connection: if the reply was lost, a retry could not tell "applied"
  // from "lost the race", and reporting false would make the caller apply its change twice.
  return context_.connections().once(
      [&](Connection& c) {
        const auto watch = context_.watch(c);
        MyTransaction t(context_, c);
        return t.execute(statement.sql, statement.params) == 1;
      },
      "compare-and-set");
}

std::optional<std::int64_t> MySqlFeatures::read_version(std::string_view table, std::string_view id_column,
                                                        const Value& id, std::string_view version_column) {
  const std::string statement = dblock::sql::read_version_query(table, id_column, version_column, &quote_identifier);
  return context_.connections().idempotent([&](Connection& c) -> std::optional<std::int64_t> {
    const auto watch = context_.watch(c);
    MyTransaction t(context_, c);
    return dblock::sql::read_version_result(t.query(statement, {id}), kServiceName);
  });
}

void MySqlFeatures::finish_transaction(Borrowed& c, const std::function<void(Transaction&)>& body,
                                       const dblock::sql::Statement* end, const dblock::sql::Statement* abort,
                                       const Args& args) {
  bool committing = false;
  try {
    MyTransaction t(context_, *c);
    body(t);
    committing = true;
    if (end != nullptr) {
      context_.update(*c, *end, args);
    } else {
      c->plain->execute(sql::kCommit.text);
    }
  } catch (const std::exception& e) {
    const bool broken = is_broken(*c, e);
    if (broken) {
      c.discard();  // the server rolls back (and frees GET_LOCKs) when it notices
    } else {
      try {
        if (abort != nullptr) {
          context_.update(*c, *abort, args);
        } else {
          c->plain->execute(sql::kRollback.text);
        }
      } catch (...) {
        c.discard();
      }
    }
    if (committing && broken) {
      throw InDoubtError(std::string("mysql: the connection broke during COMMIT; outcome unknown: ") + e.what(),
                         kServiceName);
    }
    if (dynamic_cast<const ::sql::SQLException*>(&e)) rethrow_translated("transaction");
    throw;
  } catch (...) {
    c.discard();  // a transaction may be open: never reuse the connection
    throw;
  }
}

}  // namespace dblock::mysql
