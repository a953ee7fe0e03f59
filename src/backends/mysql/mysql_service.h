// The MariaDB lock service. Internal; the public face is dblock/mysql/mysql.h.
//
// Connections: a pool for lease statements (each used by one thread at a time), one beacon
// connection owned by the beacon thread (beacons.h), and one dedicated connection per held
// session lock (session_locks.h). Every lease operation but acquire_all (a round trip per name,
// in one transaction) is one round trip (see sql.h).
//
// Capabilities: FairQueue, NativeWait (with beacons on), HolderProbe, Maintenance, AuditLog and
// MultiAcquire here; SessionLocks and SqlFeatures with RowLocks in their own files.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_MYSQL_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_MYSQL_SERVICE_H_

#include "beacons.h"
#include "connection.h"
#include "dblock/errors.h"
#include "dblock/service/capabilities.h"
#include "session_locks.h"
#include "sql_features.h"

namespace dblock::mysql {

class MysqlService final : public LeaseService,
                           public FairQueue,
                           public NativeWait,
                           public HolderProbe,
                           public Maintenance,
                           public AuditLog,
                           public MultiAcquire {
 public:
  explicit MysqlService(Options options);

  std::string_view name() const override { return kServiceName; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  // The row expires on the server's clock within the drift margin of the engine's safe-until;
  // the beacon that advertises the lease to waiters goes now.
  void lease_lost(const LeaseKey& lease) noexcept override;
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  FairQueue* fair_queue() noexcept override { return this; }
  // Waiters block server-side on the holder's beacon; none with beacon=0 (they poll).
  NativeWait* native_wait() noexcept override { return context_.options().beacon ? this : nullptr; }
  HolderProbe* holder_probe() noexcept override { return this; }
  Maintenance* maintenance() noexcept override { return this; }
  AuditLog* audit_log() noexcept override { return this; }
  MultiAcquire* multi_acquire() noexcept override { return this; }
  SessionLocks* session_locks() noexcept override { return &session_locks_; }
  SqlFeatures* sql_features() noexcept override { return &sql_features_; }

  // One transaction: every name's unqueued acquire statement (as try_acquire's; shared: its
  // in-transaction form), in the order given (the engine's: sorted), committed only if every name
  // was granted, else rolled back (nothing taken). Beacons as for try_acquire.
  std::vector<AcquireResult> try_acquire_all(const std::vector<AcquireRequest>& requests) override;

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;

  Turn wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                     std::chrono::milliseconds max_wait) override;

  std::chrono::milliseconds holder_remaining(std::string_view name, const OwnerSecret& waiter) override;

  void migrate(bool create) override;
  int schema_version() override;
  std::size_t reap(std::size_t batch) override;
  std::optional<std::chrono::microseconds> oldest_unreaped() override;

  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

 private:
  // One attempt, joining or refreshing the queue when `queue` and refused.
  Attempt attempt(const AcquireRequest& request, bool queue, const Place& place);
  // try_acquire_all's transaction, open on `c`: commits and returns the results, or rolls back
  // and returns none when a name was refused.
  std::vector<AcquireResult> take_all(Connection& c, const std::vector<AcquireRequest>& requests);
  // One name's unqueued acquire inside the transaction open on `c`.
  AcquireResult take_in_transaction(Connection& c, const AcquireRequest& request);
  // Rolls back the transaction open on `c` after `failure`, unless `failure` broke `c` (the pool
  // drops it); throws ConnectionError (the pool then drops `c`) when the rollback fails.
  void roll_back_or_drop(Connection& c, const std::exception& failure);
  int current_version(Connection& c);
  bool schema_current(bool create);
  TimeoutError migration_lock_timeout(Connection& c, const std::string& key, std::chrono::seconds waited);
  // The GET_LOCK key a granting release holds until its commit is durable (see sql.h).
  std::string grant_gate(std::string_view name) const;

  Context context_;
  Beacons beacons_;
  MySessionLocks session_locks_;
  MySqlFeatures sql_features_;
};

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_MYSQL_SERVICE_H_
