// The PostgreSQL lock service. Internal; the public face is dblock/postgresql/postgresql.h.
//
// Connections: a pool for lease statements (each used by one thread at a time), one LISTEN
// connection owned by the listener's thread, and one dedicated connection per held session lock.
//
// Capabilities: FairQueue, Maintenance, AuditLog and MultiAcquire here; WakeEvents (listener.h),
// SessionLocks (session_locks.h), SqlFeatures with RowLocks (sql_features.h). docs/backends/
// postgresql.md explains the queue marker, the grants and the wake channels. No HolderProbe: with
// events, no waiter polls the holder (the release that makes it first wakes or names it).
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_POSTGRESQL_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_POSTGRESQL_SERVICE_H_

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "connection.h"
#include "dblock/errors.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/thread_annotations.h"
#include "listener.h"
#include "session_locks.h"
#include "sql_features.h"

namespace dblock::postgresql {

class PostgresService final : public LeaseService,
                              public FairQueue,
                              public GrantEvents,
                              public Maintenance,
                              public AuditLog,
                              public MultiAcquire {
 public:
  explicit PostgresService(Options options);

  std::string_view name() const override { return kServiceName; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  // The row expires on the server's clock within the drift margin of the engine's safe-until:
  // nothing to drop early.
  void lease_lost(const LeaseKey&) noexcept override {}
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  FairQueue* fair_queue() noexcept override { return this; }
  WakeEvents* wake_events() noexcept override { return context_.options().listen ? &listener_ : nullptr; }
  GrantEvents* grant_events() noexcept override { return context_.options().listen ? this : nullptr; }
  Maintenance* maintenance() noexcept override { return this; }
  AuditLog* audit_log() noexcept override { return this; }
  MultiAcquire* multi_acquire() noexcept override { return this; }
  SessionLocks* session_locks() noexcept override { return &session_locks_; }
  SqlFeatures* sql_features() noexcept override { return &sql_features_; }

  // One transaction: every name's unqueued acquire statement (as try_acquire's), in the order
  // given (the engine's: sorted), committed only if every name was granted, else rolled back
  // (nothing taken). Lock waits end on the server by the call's deadline.
  std::vector<AcquireResult> try_acquire_all(const std::vector<AcquireRequest>& requests) override;

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;

  void migrate(bool create) override;
  int schema_version() override;
  std::size_t reap(std::size_t batch) override;
  std::optional<std::chrono::microseconds> oldest_unreaped() override;

  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

 private:
  // One attempt, joining or refreshing the queue when `queue` and refused.
  Attempt attempt(const AcquireRequest& request, bool queue, const Place& place);
  // try_acquire_all's transaction on `c`: the results, or none when a name was refused.
  std::vector<AcquireResult> take_all(Connection& c, const std::vector<AcquireRequest>& requests);
  // Sets lock_timeout for the rest of `tx` to what is left of the call's deadline (none without one).
  void bound_lock_waits(pqxx::work& tx);
  // Joins or refreshes the queue after a refused attempt; fills `out`'s ticket and position.
  void join_queue(Connection& c, const AcquireRequest& request, std::int64_t ticket, const Place& place, Attempt& out);
  dblock::sql::Rows exec(Connection& c, const dblock::sql::Statement& s, const dblock::sql::Args& args = {}) {
    return context_.exec(c, s, args);
  }
  // A permit's attempt (`ticket` 0: not queued): kLockPermitRow and the acquire in one transaction.
  dblock::sql::Rows take_permit(Connection& c, const AcquireRequest& request, std::int64_t ticket);
  // After a refused shared attempt: the UsageError when live readers hold other permits.
  void check_permits(Connection& c, const AcquireRequest& request);
  void set_persistence(pqxx::work& tx);
  // The quoted lease tables whose persistence differs from Options::unlogged (none when unset).
  std::vector<std::string> tables_to_switch(pqxx::transaction_base& tx);
  bool schema_current(bool create);
  int read_schema_version(pqxx::transaction_base& tx);
  std::optional<LeaseGrant> confirm_grant(std::string_view name, const OwnerSecret& secret,
                                          const LeaseGrant& claimed) override;
  TimeoutError migration_lock_timeout(MigrationLockKey key, std::chrono::milliseconds waited);

  // Names whose release by this service just woke a queued waiter, and when. For a while
  // afterwards the name's queue marker stands (the woken waiter's entry lives at least a second),
  // so an unqueued exclusive attempt on it (typically the releasing thread taking the name again)
  // would be refused: a waiting acquire joins the queue at once instead, one statement fewer on
  // the server at the moment the woken waiter needs it. Never a question of correctness: joining
  // the queue grants nothing, and a waiter that finds the name free after joining attempts again
  // at once (holder_remaining 0), which is all a stale entry costs. An entry is used once.
  void note_released_to_queue(std::string_view name);
  bool take_released_to_queue(std::string_view name);

  Context context_;
  NotifyListener listener_;
  PgSessionLocks session_locks_;
  PgSqlFeatures sql_features_;

  service::Mutex released_mutex_;
  std::map<std::string, std::chrono::steady_clock::time_point, std::less<>> released_to_queue_ DBLOCK_GUARDED_BY(released_mutex_);

  // The reaper's cursor: the last lease row (in expiry index order) of the current pass; no expiry
  // means '-infinity' (and, with an empty name, the start of a pass). reap_mutex_ is held for a
  // whole reap() call, so the reaper thread and LockManager::reap() take turns on the cursor.
  struct ReapCursor {
    std::optional<std::int64_t> after_expiry_us;
    std::string after_name;
  };
  service::Mutex reap_mutex_;
  ReapCursor reap_cursor_ DBLOCK_GUARDED_BY(reap_mutex_);
};

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_POSTGRESQL_SERVICE_H_
