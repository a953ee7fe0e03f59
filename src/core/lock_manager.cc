#include "dblock/lock_manager.h"

#include <algorithm>

#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"
#include "internal.h"
#include "manager_core.h"

namespace dblock {

namespace {

constexpr std::size_t kMaxHistoryRows = 1'000'000;  // fits every dialect's LIMIT parameter



}  // namespace

LockManager::LockManager(std::unique_ptr<LeaseService> service, ManagerOptions options)
    : core_(std::make_shared<detail::ManagerCore>(std::move(service), std::move(options))) {
  core_->start();
}

LockManager::~LockManager() { core_->shutdown(); }

LeaseService& LockManager::service() noexcept { return core_->service(); }

std::optional<Lease> LockManager::try_acquire(std::string_view name, const AcquireOptions& options) {
  return core_->acquire(name, std::chrono::steady_clock::now(), /*try_once=*/true, options);
}

std::optional<Lease> LockManager::acquire(std::string_view name, std::chrono::milliseconds wait,
                                          const AcquireOptions& options) {
  if (wait <= std::chrono::milliseconds::zero()) return try_acquire(name, options);
  return core_->acquire(name, detail::wait_deadline(wait), /*try_once=*/false, options);
}

namespace {

// Releases `leases` newest first; what each release reports does not change the caller's outcome.
void give_back(std::vector<Lease>& leases) noexcept {
  while (!leases.empty()) {
    try {
      leases.back().release();
    } catch (...) {
      // The lease ends on the service at its expiry at the latest.
    }
    leases.pop_back();
  }
}

}  // namespace

std::optional<std::vector<Lease>> LockManager::acquire_all(std::vector<std::string> names,
                                                           std::chrono::milliseconds wait,
                                                           const AcquireOptions& options) {
  if (names.empty()) throw UsageError("acquire_all: no lock names");
  std::sort(names.begin(), names.end());
  if (auto twice = std::adjacent_find(names.begin(), names.end()); twice != names.end()) {
    throw UsageError("acquire_all: the lock name '" + *twice + "' is given twice");
  }
  for (const auto& name : names) validate_lock_name(name);
  const bool once = wait <= std::chrono::milliseconds::zero();
  const auto deadline = once ? std::chrono::steady_clock::now() : detail::wait_deadline(wait);
  if (std::optional<std::vector<Lease>> all = core_->acquire_all_at_once(names, deadline, once, options)) {
    if (all->empty()) return std::nullopt;  // a single try, refused
    return all;
  }
  std::vector<Lease> held;
  try {
    for (const auto& name : names) {
      std::optional<Lease> lease = once ? try_acquire(name, options) : acquire_until(name, deadline, options);
      if (!lease) {
        give_back(held);
        return std::nullopt;
      }
      held.push_back(std::move(*lease));
    }
  } catch (...) {
    give_back(held);
    throw;
  }
  return held;
}

std::optional<Lease> LockManager::acquire_until(std::string_view name,
                                                std::chrono::steady_clock::time_point deadline,
                                                const AcquireOptions& options) {
  if (deadline <= std::chrono::steady_clock::now()) return try_acquire(name, options);
  return core_->acquire(name, deadline, /*try_once=*/false, options);
}

std::vector<LeaseInfo> LockManager::list() {
  const service::CallDeadlineScope call(core_->call_timeout_after());
  return core_->service().list(std::nullopt);
}

std::optional<LeaseInfo> LockManager::inspect(std::string_view name) {
  validate_lock_name(name);
  const service::CallDeadlineScope call(core_->call_timeout_after());
  auto rows = core_->service().list(name);
  if (rows.empty()) return std::nullopt;
  return rows.front();
}

bool LockManager::force_release(std::string_view name) {
  validate_lock_name(name);
  const service::CallDeadlineScope call(core_->call_timeout_after());
  return core_->service().force_release(name, core_->holder());
}

std::vector<ForceReleaseRecord> LockManager::force_release_history(std::optional<std::string_view> name,
                                                                   std::size_t limit) {
  if (name) validate_lock_name(*name);
  AuditLog* log = core_->service().audit_log();
  if (log == nullptr) detail::unsupported(core_->service(), "a record of force-releases");
  const service::CallDeadlineScope call(core_->call_timeout_after());
  return log->force_releases(name, std::min<std::size_t>(limit, kMaxHistoryRows));
}

std::size_t LockManager::reap(std::size_t max_rows) {
  Maintenance* maintenance = core_->service().maintenance();
  if (maintenance == nullptr) return 0;
  std::size_t total = 0;
  const auto batch = static_cast<std::size_t>(core_->options().reaper_batch);
  // Bounded: every pass deletes rows or ends the loop.
  while (total < max_rows) {
    const std::size_t limit = std::min(batch, max_rows - total);
    const service::CallDeadlineScope call(core_->call_timeout_after());
    const std::size_t n = maintenance->reap(limit);
    core_->metrics().reaped(n);
    total += n;
    if (n < limit) break;
  }
  return total;
}

std::optional<std::chrono::microseconds> LockManager::oldest_unreaped() {
  Maintenance* maintenance = core_->service().maintenance();
  if (maintenance == nullptr) return std::nullopt;
  const service::CallDeadlineScope call(core_->call_timeout_after());
  return maintenance->oldest_unreaped();
}

void LockManager::migrate() {
  Maintenance* maintenance = core_->service().maintenance();
  if (maintenance == nullptr) return;
  const service::CallDeadlineScope call(core_->migration_deadline());
  maintenance->migrate(true);
}

int LockManager::schema_version() {
  Maintenance* maintenance = core_->service().maintenance();
  if (maintenance == nullptr) return 0;
  const service::CallDeadlineScope call(core_->call_timeout_after());
  return maintenance->schema_version();
}

std::optional<SessionLock> LockManager::session_lock(std::string_view name, std::chrono::milliseconds wait,
                                                     const SessionLockOptions& options) {
  return core_->session_lock(name, wait, options);
}


void LockManager::require_session_locks() const {
  if (core_->service().session_locks() == nullptr) detail::throw_no_session_locks(core_->service());
}

std::string_view LockManager::backend_name() const { return core_->service().name(); }

Capabilities LockManager::capabilities() const {
  LeaseService& service = core_->service();
  SqlFeatures* sql = service.sql_features();
  Capabilities caps;
  caps.shared_leases = service.traits().shared_leases;
  caps.permits = service.traits().permits;
  caps.hold_at_least = service.traits().hold_at_least;
  caps.notifications = service.wake_events() != nullptr;
  caps.session_locks = service.session_locks() != nullptr;
  caps.transaction_locks = sql != nullptr;
  caps.row_locks = sql != nullptr && sql->row_locks() != nullptr;
  caps.optimistic = sql != nullptr;
  caps.guard = sql != nullptr;
  return caps;
}

const ManagerOptions& LockManager::options() const { return core_->options(); }

MetricsSnapshot LockManager::metrics() const { return core_->metrics_snapshot(); }

}  // namespace dblock
