#include "dblock/lock_manager.h"

#include "dblock/errors.h"
#include "manager_core.h"

namespace dblock {

namespace {
std::chrono::steady_clock::time_point deadline_after(std::chrono::milliseconds wait) {
  auto now = std::chrono::steady_clock::now();
  if (wait == kWaitForever) return std::chrono::steady_clock::time_point::max();
  // Saturate instead of overflowing for absurdly long waits.
  if (wait > std::chrono::hours(24 * 365 * 100)) return std::chrono::steady_clock::time_point::max();
  return now + wait;
}
}  // namespace

LockManager::LockManager(std::unique_ptr<Backend> backend, ManagerOptions options)
    : core_(std::make_shared<detail::ManagerCore>(std::move(backend), std::move(options))) {
  core_->start();
}

LockManager::~LockManager() { core_->shutdown(); }

std::optional<Lease> LockManager::try_acquire(std::string_view name, const AcquireOptions& options) {
  return core_->acquire(name, std::chrono::steady_clock::now(), /*try_once=*/true, options);
}

std::optional<Lease> LockManager::acquire(std::string_view name, std::chrono::milliseconds wait,
                                          const AcquireOptions& options) {
  if (wait <= std::chrono::milliseconds::zero()) return try_acquire(name, options);
  return core_->acquire(name, deadline_after(wait), /*try_once=*/false, options);
}

std::optional<Lease> LockManager::acquire_until(std::string_view name,
                                                std::chrono::steady_clock::time_point deadline,
                                                const AcquireOptions& options) {
  if (deadline <= std::chrono::steady_clock::now()) return try_acquire(name, options);
  return core_->acquire(name, deadline, /*try_once=*/false, options);
}

std::vector<LeaseInfo> LockManager::list() { return core_->backend().list(std::nullopt); }

std::optional<LeaseInfo> LockManager::inspect(std::string_view name) {
  validate_lock_name(name);
  auto rows = core_->backend().list(name);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

bool LockManager::force_release(std::string_view name) {
  validate_lock_name(name);
  return core_->backend().force_release(name);
}

std::size_t LockManager::reap(std::size_t max_rows) {
  std::size_t total = 0;
  const auto batch = static_cast<std::size_t>(core_->options().reaper_batch);
  // Bounded: every pass deletes rows or ends the loop.
  while (total < max_rows) {
    std::size_t n = core_->backend().reap(std::min(batch, max_rows - total));
    total += n;
    if (n == 0 || n < std::min(batch, max_rows - total + n)) break;
  }
  return total;
}

void LockManager::migrate() { core_->backend().migrate(true); }
int LockManager::schema_version() { return core_->backend().schema_version(); }

bool LockManager::run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                                          const std::function<void(Transaction&)>& body) {
  validate_lock_name(name);
  return core_->backend().run_in_transaction_lock(name, wait, body);
}

void LockManager::run_guarded(const Lease& lease, const std::function<void(Transaction&)>& body) {
  if (!lease.held()) throw UsageError("run_guarded needs a held lease");
  // The backend's check inside the transaction is the authority; the local lost() flag is not
  // consulted (it can only be more pessimistic, never safer).
  core_->backend().run_guarded(lease.name(), lease.fence(), lease.state_secret(), body);
}

bool LockManager::compare_and_set(const VersionedUpdate& update) { return core_->backend().compare_and_set(update); }

std::optional<std::int64_t> LockManager::read_version(std::string_view table, std::string_view id_column,
                                                      const Value& id, std::string_view version_column) {
  return core_->backend().read_version(table, id_column, id, version_column);
}

std::optional<SessionLock> LockManager::session_lock(std::string_view name, std::chrono::milliseconds wait,
                                                     const SessionLockOptions& options) {
  require_session_locks();
  return core_->session_lock(name, wait, options);
}

bool LockManager::with_locked_rows(
    const RowLockRequest& request,
    const std::function<void(Transaction&, const std::vector<std::vector<Value>>& rows)>& body) {
  return core_->backend().run_with_locked_rows(request, body);
}

void LockManager::require_session_locks() const {
  if (!core_->backend().capabilities().session_locks) {
    throw UnsupportedError("session locks (locks that die with the connection) are not supported by the " +
                               std::string(core_->backend().name()) +
                               " backend; use a lease (the default mode) instead",
                           std::string(core_->backend().name()));
  }
}

std::string_view LockManager::backend_name() const { return core_->backend().name(); }
Capabilities LockManager::capabilities() const { return core_->backend().capabilities(); }
const ManagerOptions& LockManager::options() const { return core_->options(); }
Backend& LockManager::backend() { return core_->backend(); }

}  // namespace dblock
