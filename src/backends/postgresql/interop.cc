// dblock/postgresql/interop.h: the same checks and locks as the backend, on the application's
// transaction.
#include "dblock/postgresql/interop.h"

#include "connection.h"
#include "dblock/errors.h"
#include "dblock/postgresql/postgresql.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/sql/builders.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::postgresql {

void guard(pqxx::transaction_base& tx, const Lease& lease, std::string_view table_prefix) {
  service::validate_table_prefix(table_prefix);
  if (!lease.held()) {
    // A lease known lost here is lost on the server too (or will be by its expiry); a released
    // or empty handle is misuse.
    if (lease.hold_count() > 0) throw LeaseLostError("guard: lease '" + lease.name() + "' was lost", kServiceName);
    throw UsageError("guard needs a held lease", kServiceName);
  }
  // The same check the service's own guard makes (sql::kGuardExclusive / kGuardReader).
  const auto& check = lease.mode() == LockMode::kShared ? sql::kGuardReader : sql::kGuardExclusive;
  dblock::sql::Rows r;
  try {
    r = exec_text(tx, dblock::sql::render(check.text, tables(std::string(table_prefix))),
                  {{"name", lease.name()}, {"secret", lease.owner_secret()}, {"fence", lease.fence()}}, check.name);
  } catch (...) {
    rethrow_translated("guard");
  }
  if (r.empty()) {
    throw LeaseLostError("postgresql: lease '" + lease.name() + "' with fence " + std::to_string(lease.fence()) +
                             " is no longer held",
                         kServiceName);
  }
}

bool xact_lock(pqxx::transaction_base& tx, std::string_view name, std::chrono::milliseconds wait, LockMode mode) {
  const std::int64_t key = advisory_key(name);
  const bool shared = mode == LockMode::kShared;
  try {
    if (wait <= std::chrono::milliseconds::zero()) {
      const auto& statement = shared ? sql::kXactTryShared : sql::kXactTry;
      return exec_text(tx, statement.text, {{"key", key}}, statement.name).at(0).get<bool>("got");
    }
    exec_text(tx, sql::kSetLocalLockTimeout.text, {{"lock_timeout", lock_timeout_text(wait)}},
              sql::kSetLocalLockTimeout.name);
    const auto& statement = shared ? sql::kXactLockShared : sql::kXactLock;
    exec_text(tx, statement.text, {{"key", key}}, statement.name);
    return true;
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "55P03") return false;
    rethrow_translated("transaction lock");
  } catch (...) {
    rethrow_translated("transaction lock");
  }
}

bool lock_rows(pqxx::transaction_base& tx, const RowLockRequest& request, pqxx::result& rows) {
  const dblock::sql::BuiltStatement built =
      dblock::sql::row_lock_query(request, &service::quote_identifier, "FOR SHARE", "postgresql");
  const std::string statement = number_placeholders(built.sql);
  Params params;
  for (const Value& value : built.params) params.add_value(value);
  const std::vector<const char*> ptrs = params.pointers();
  try {
    if (request.wait == RowLockWait::kWait && request.wait_timeout > std::chrono::milliseconds::zero()) {
      exec_text(tx, sql::kSetLocalLockTimeout.text, {{"lock_timeout", lock_timeout_text(request.wait_timeout)}},
                sql::kSetLocalLockTimeout.name);
    }
    rows = tx.exec_params(statement, pqxx::prepare::make_dynamic_params(ptrs));
    return true;
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "55P03") return false;
    rethrow_translated("row lock");
  } catch (...) {
    rethrow_translated("row lock");
  }
}

}  // namespace dblock::postgresql
