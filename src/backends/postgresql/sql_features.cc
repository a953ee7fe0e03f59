#include "sql_features.h"

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/sql/builders.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::postgresql {

namespace {

using Borrowed = dblock::service::Pool<Connection>::Borrowed;

void discard_if_broken(Borrowed& c, const std::exception& e) {
  if (broken(*c, e)) c.discard();
}

// Runs `body` in `tx` and commits; on failure aborts, drops a broken connection, and rethrows
// (driver errors translated).
template <class Body>
void run_body_and_commit(Borrowed& c, pqxx::work& tx, Body&& body) {
  try {
    PgTransaction t(tx);
    body(t);
    tx.commit();
  } catch (const std::exception& e) {
    discard_if_broken(c, e);
    try {
      tx.abort();
    } catch (...) {
    }
    if (dynamic_cast<const pqxx::failure*>(&e) || dynamic_cast<const pqxx::sql_error*>(&e)) {
      rethrow_translated("transaction");
    }
    throw;
  }
}

}  // namespace

std::int64_t PgTransaction::execute(std::string_view sql, const std::vector<Value>& params) {
  return run(sql, params).affected_rows();
}

std::vector<std::vector<Value>> PgTransaction::query(std::string_view sql, const std::vector<Value>& params) {
  return values_of(run(sql, params));
}

pqxx::result PgTransaction::run(std::string_view sql, const std::vector<Value>& params) {
  Params p;
  for (const auto& v : params) p.add_value(v);
  auto ptrs = p.pointers();
  try {
    return tx_.exec_params(number_placeholders(sql), pqxx::prepare::make_dynamic_params(ptrs));
  } catch (...) {
    rethrow_translated("statement failed");
  }
}

bool PgSqlFeatures::run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                                            const std::function<void(Transaction&)>& body) {
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);  // the whole transaction, the application's statements included
  const std::int64_t key = advisory_key(name);
  std::optional<pqxx::work> tx;
  try {
    tx.emplace(*c->conn);
    bool granted;
    if (wait <= std::chrono::milliseconds::zero()) {
      granted = context_.exec(*tx, sql::kXactTry, {{"key", key}}).at(0).get<bool>("got");
    } else {
      granted = context_.exec(*tx, sql::kXactWait, {{"key", key}, {"lock_timeout", lock_timeout_text(wait)}})
                    .at(0)
                    .get<bool>("got");
    }
    if (!granted) {
      tx->abort();
      return false;
    }
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "55P03") return false;  // the transaction aborts and releases nothing
    discard_if_broken(c, e);
    rethrow_translated("transaction lock");
  } catch (const std::exception& e) {
    discard_if_broken(c, e);
    rethrow_translated("transaction lock");
  }
  run_body_and_commit(c, *tx, [&](PgTransaction& t) { body(t); });
  return true;
}

void PgSqlFeatures::run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                                const std::function<void(Transaction&)>& body) {
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);  // the whole transaction, the application's statements included
  std::optional<pqxx::work> tx;
  bool held = false;
  try {
    tx.emplace(*c->conn);
    const dblock::sql::Args args{{"name", name}, {"secret", secret}, {"fence", fence}};
    for (const auto* check : {&sql::kGuardExclusive, &sql::kGuardReader}) {
      if (!context_.exec(*tx, *check, args).empty()) held = true;
    }
  } catch (const std::exception& e) {
    discard_if_broken(c, e);
    rethrow_translated("guard");
  }
  if (!held) {
    tx->abort();
    throw LeaseLostError("postgresql: lease '" + std::string(name) + "' with fence " + std::to_string(fence) +
                             " is no longer held; guarded write rolled back",
                         kServiceName);
  }
  run_body_and_commit(c, *tx, [&](PgTransaction& t) { body(t); });
}

bool PgSqlFeatures::run_with_locked_rows(const RowLockRequest& request, const RowsBody& body) {
  const dblock::sql::BuiltStatement statement =
      dblock::sql::row_lock_query(request, &service::quote_identifier, "FOR SHARE", kServiceName);
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);  // the whole transaction, the application's statements included
  std::optional<pqxx::work> tx;
  std::vector<std::vector<Value>> rows;
  try {
    tx.emplace(*c->conn);
    if (request.wait == RowLockWait::kWait && request.wait_timeout > std::chrono::milliseconds::zero()) {
      context_.exec(*tx, sql::kSetLocalLockTimeout, {{"lock_timeout", lock_timeout_text(request.wait_timeout)}});
    }
    PgTransaction t(*tx);
    rows = t.query(statement.sql, statement.params);
  } catch (const TimeoutError&) {
    return false;  // 55P03: NOWAIT met a locked row, or lock_timeout ran out
  } catch (const std::exception& e) {
    discard_if_broken(c, e);
    rethrow_translated("row lock");
  }
  run_body_and_commit(c, *tx, [&](PgTransaction& t) { body(t, rows); });
  return true;
}

bool PgSqlFeatures::compare_and_set(const VersionedUpdate& update) {
  const dblock::sql::BuiltStatement statement =
      dblock::sql::versioned_update(update, &service::quote_identifier, kServiceName);
  // Not retried: an UPDATE whose reply was lost may have been applied, and repeating it would
  // report a conflict for our own write. The caller learns "in doubt" instead.
  return context_.connections().once(
      [&](Connection& c) {
        const auto watch = context_.watch(c);
        pqxx::nontransaction tx(*c.conn);
        PgTransaction t(tx);
        return t.execute(statement.sql, statement.params) == 1;
      },
      "compare-and-set");
}

std::optional<std::int64_t> PgSqlFeatures::read_version(std::string_view table, std::string_view id_column,
                                                        const Value& id, std::string_view version_column) {
  const std::string statement =
      dblock::sql::read_version_query(table, id_column, version_column, &service::quote_identifier);
  return context_.connections().idempotent([&](Connection& c) -> std::optional<std::int64_t> {
    const auto watch = context_.watch(c);
    pqxx::nontransaction tx(*c.conn);
    PgTransaction t(tx);
    return dblock::sql::read_version_result(t.query(statement, {id}), kServiceName);
  });
}

}  // namespace dblock::postgresql
