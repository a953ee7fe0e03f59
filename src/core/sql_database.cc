// The SQL-only calls (dblock/sql/database.h): the manager's SqlFeatures, each call under the
// deadline LockManager's calls get.
#include "dblock/sql/database.h"

#include <string>

#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"
#include "internal.h"
#include "manager_core.h"

namespace dblock::sql {
namespace {


}  // namespace

Database::Database(LockManager& manager) : core_(manager.core_), features_(core_->service().sql_features()) {
  if (features_ == nullptr) {
    detail::unsupported(core_->service(), "SQL (guarded writes, transaction and row locks, compare-and-set)");
  }
}

bool Database::run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                                       const std::function<void(Transaction&)>& body) {
  validate_lock_name(name);
  const auto waits_until = detail::wait_deadline(wait);
  const service::CallDeadlineScope call(core_->call_timeout_after(waits_until));
  return features_->run_in_transaction_lock(name, wait, body);
}

void Database::run_guarded(const Lease& lease, const std::function<void(Transaction&)>& body) {
  core_->run_guarded(*features_, lease, body);
}

bool Database::compare_and_set(const VersionedUpdate& update) {
  const service::CallDeadlineScope call(core_->call_timeout_after());
  return features_->compare_and_set(update);
}

std::optional<std::int64_t> Database::read_version(std::string_view table, std::string_view id_column,
                                                   const Value& id, std::string_view version_column) {
  const service::CallDeadlineScope call(core_->call_timeout_after());
  return features_->read_version(table, id_column, id, version_column);
}

bool Database::with_locked_rows(const RowLockRequest& request, const RowsBody& body) {
  RowLocks* rows = features_->row_locks();
  if (rows == nullptr) detail::unsupported(core_->service(), "a row lock (SELECT ... FOR UPDATE)");
  // Waiting on the server's default lock timeout (wait_timeout 0) gets call_timeout alone.
  const bool waits = request.wait == RowLockWait::kWait;
  const auto waits_until = detail::wait_deadline(waits ? request.wait_timeout : std::chrono::milliseconds::zero());
  const service::CallDeadlineScope call(core_->call_timeout_after(waits_until));
  return rows->run_with_locked_rows(request, body);
}

}  // namespace dblock::sql

namespace dblock::detail {

void ManagerCore::run_guarded(SqlFeatures& sql, const Lease& lease, const std::function<void(Transaction&)>& body) {
  if (!lease.unreleased()) {
    (void)lease.name();  // an empty handle: UsageError "empty Lease handle"
    const char* state = lease.shut_down() ? "released by the LockManager's shutdown" : "released";
    throw UsageError(std::string("run_guarded needs a held lease; this one is ") + state);
  }
  // The service's check inside the transaction is the authority; the local lost() flag is not
  // consulted (it can only be more pessimistic, never safer). The whole transaction is one call,
  // bounded by the lease's safe-until: the guard's row lock keeps renewals out until it ends, so
  // the lease cannot be extended meanwhile.
  const service::CallDeadlineScope call(lease.safe_until());
  try {
    sql.run_guarded(lease.name(), lease.fence(), lease.owner_secret(), body);
  } catch (const LeaseLostError& e) {
    learned_lost(lease.shared_state(), std::string("a guarded write found the lease lost: ") + e.what());
    throw;
  }
}

}  // namespace dblock::detail
