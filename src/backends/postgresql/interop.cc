// dblock/postgresql/interop.h: the same checks and locks as the backend, on the application's
// transaction.
#include "dblock/postgresql/interop.h"

#include "dblock/errors.h"
#include "dblock/postgresql/postgresql.h"
#include "error_map.h"
#include "internal.h"

namespace dblock::postgresql {

namespace {
std::string timeout_text(std::chrono::milliseconds wait) {
  return wait >= std::chrono::hours(24 * 365) ? "0" : std::to_string(wait.count()) + "ms";
}
}  // namespace

void guard(pqxx::transaction_base& tx, const Lease& lease, std::string_view table_prefix) {
  detail::validate_table_prefix(table_prefix);
  if (!lease.held()) throw UsageError("guard needs a held lease", "postgresql");
  // The fence identifies the acquisition (fences are never reused), so no secret is needed here.
  const std::string table = detail::quote_identifier(std::string(table_prefix) +
                                                     (lease.mode() == LockMode::kShared ? "readers" : "leases"));
  pqxx::result r;
  try {
    r = tx.exec_params("SELECT 1 FROM " + table +
                           " WHERE name = $1 AND fence = $2 AND expires_at > clock_timestamp()" +
                           (lease.mode() == LockMode::kShared ? "" : " AND owner_secret IS NOT NULL") + " FOR SHARE",
                       lease.name(), lease.fence());
  } catch (...) {
    rethrow_translated("guard");
  }
  if (r.empty()) {
    throw LeaseLostError("postgresql: lease '" + lease.name() + "' with fence " + std::to_string(lease.fence()) +
                             " is no longer held",
                         "postgresql");
  }
}

bool xact_lock(pqxx::transaction_base& tx, std::string_view name, std::chrono::milliseconds wait, LockMode mode) {
  const std::int64_t key = advisory_key(name);
  const bool shared = mode == LockMode::kShared;
  try {
    if (wait <= std::chrono::milliseconds::zero()) {
      return tx.exec_params1(shared ? "SELECT pg_try_advisory_xact_lock_shared($1)" : "SELECT pg_try_advisory_xact_lock($1)",
                             key)[0]
          .as<bool>();
    }
    tx.exec_params("SELECT set_config('lock_timeout', $1, true)", timeout_text(wait));
    tx.exec_params(shared ? "SELECT pg_advisory_xact_lock_shared($1)" : "SELECT pg_advisory_xact_lock($1)", key);
    return true;
  } catch (const pqxx::sql_error& e) {
    if (e.sqlstate() == "55P03") return false;
    rethrow_translated("transaction lock");
  } catch (...) {
    rethrow_translated("transaction lock");
  }
}

bool lock_rows(pqxx::transaction_base& tx, const RowLockRequest& request, pqxx::result& rows) {
  detail::validate_identifier(request.table, "table");
  detail::validate_identifier(request.key_column, "key column");
  if (request.keys.empty()) throw UsageError("lock_rows: no keys", "postgresql");
  std::string columns;
  for (const auto& col : request.columns) {
    detail::validate_identifier(col, "column");
    columns += (columns.empty() ? "" : ", ") + detail::quote_identifier(col);
  }
  std::string statement = "SELECT " + (columns.empty() ? std::string("*") : columns) + " FROM " +
                          detail::quote_identifier(request.table) + " WHERE " +
                          detail::quote_identifier(request.key_column) + " IN (";
  std::vector<std::optional<std::string>> values;
  for (std::size_t i = 0; i < request.keys.size(); ++i) {
    statement += (i ? ", $" : "$") + std::to_string(i + 1);
    const Value& v = request.keys[i];
    if (std::holds_alternative<std::monostate>(v)) values.emplace_back(std::nullopt);
    else if (auto* n = std::get_if<std::int64_t>(&v)) values.emplace_back(std::to_string(*n));
    else if (auto* d = std::get_if<double>(&v)) values.emplace_back(std::to_string(*d));
    else values.emplace_back(std::get<std::string>(v));
  }
  statement += ")";
  if (request.limit > 0) statement += " LIMIT " + std::to_string(request.limit);
  statement += request.shared ? " FOR SHARE" : " FOR UPDATE";
  if (request.wait == RowLockWait::kNoWait) statement += " NOWAIT";
  if (request.wait == RowLockWait::kSkipLocked) statement += " SKIP LOCKED";
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v ? v->c_str() : nullptr);
  try {
    if (request.wait == RowLockWait::kWait && request.wait_timeout > std::chrono::milliseconds::zero()) {
      tx.exec_params("SELECT set_config('lock_timeout', $1, true)", timeout_text(request.wait_timeout));
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
