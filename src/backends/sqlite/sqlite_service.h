// The embedded SQLite lock service. Internal; the public face is dblock/sqlite/sqlite.h.
//
// Concurrency: a pool of connections, each used by one thread at a time (separate connections let
// the renewal thread proceed while another thread waits on the write lock). Cross-process
// exclusion comes from SQLite's own file locking in WAL mode; every state change is one statement
// or one BEGIN IMMEDIATE transaction, so it is atomic against other processes.
//
// Capabilities: FairQueue, HolderProbe, NativeWait (waiters sleep in the kernel on the lock file's
// wake file, wake_file.h; without it they poll), Maintenance, AuditLog, MultiAcquire, SqlFeatures
// (no row locks, no session locks). Files: sqlite_service.cc (leases, the queue,
// maintenance), sql_features.cc (guard, transaction lock, compare-and-set), options.cc (URL).
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_SQLITE_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_SQLITE_SERVICE_H_

#include <algorithm>

#include "connection.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/pool.h"
#include "dblock/service/sql/statement.h"
#include "dblock/sql/features.h"
#include "dblock/sqlite/sqlite.h"
#include "lock_file/holder_mark.h"
#include "lock_file/lock_file.h"
#include "lock_file/wake_file.h"
#include "sql_features.h"

namespace dblock::sqlite {

class SqliteService final : public LeaseService,
                            public FairQueue,
                            public HolderProbe,
                            public NativeWait,
                            public Maintenance,
                            public AuditLog,
                            public MultiAcquire {
 public:
  explicit SqliteService(Options options);

  std::string_view name() const override { return "sqlite"; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  // The row expires on the lock file's clock within the drift margin of the engine's safe-until;
  // the holder mark (holder_mark.h) closes now.
  void lease_lost(const LeaseKey& lease) noexcept override;
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  FairQueue* fair_queue() noexcept override { return this; }
  HolderProbe* holder_probe() noexcept override { return this; }
  NativeWait* native_wait() noexcept override { return wake_ ? this : nullptr; }
  std::vector<std::string> degraded() const override;
  Maintenance* maintenance() noexcept override { return this; }
  AuditLog* audit_log() noexcept override { return this; }
  MultiAcquire* multi_acquire() noexcept override { return this; }
  SqlFeatures* sql_features() noexcept override { return &sql_features_; }

  // One BEGIN IMMEDIATE transaction: every name's acquire, committed only if all were granted.
  std::vector<AcquireResult> try_acquire_all(const std::vector<AcquireRequest>& requests) override;

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;

  std::chrono::milliseconds holder_remaining(std::string_view name, const OwnerSecret& waiter) override;
  // Sleeps on the name's wake slot until it may be this waiter's turn (first in line, the name
  // free) or `max_wait` passes; kUnavailable when the lock file could not be read (the engine
  // polls then). Never grants: the engine's next attempt takes the lease through the row.
  Turn wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                     std::chrono::milliseconds max_wait) override;

  void migrate(bool create) override;
  int schema_version() override;
  std::size_t reap(std::size_t batch) override;
  std::optional<std::chrono::microseconds> oldest_unreaped() override;

  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

 private:
  friend class SqliteSqlFeatures;  // its connections, statements and file check


  using Borrowed = dblock::service::Pool<Connection>::Borrowed;

  // A pooled connection whose busy handler waits for the write lock for the busy timeout, never
  // past the call's deadline (an acquire's wait, which the engine gives at least 2 s).
  Borrowed borrow() { return borrow_until(std::min(SteadyClock::now() + options_.busy_timeout, call_deadline())); }
  // A pooled connection whose busy handler waits for the write lock until `busy_until`.
  Borrowed borrow_until(SteadyClock::time_point busy_until);
  // For a renewal or a release: waits for the write lock until the call's deadline (the lease's
  // safe-until, set by the engine), not just the busy timeout, so that a crowd of waiters cannot
  // make the holder's own write lose; the busy timeout when no call deadline is set.
  Borrowed borrow_for_lease();
  Query query(Connection& c, const dblock::sql::Statement& statement) { return sqlite::query(c, registry_, statement); }
  Query query(Connection& c, const dblock::sql::Statement& statement, const dblock::sql::Args& args) {
    return sqlite::query(c, registry_, statement, args);
  }
  // The holder mark first (holder_mark.h: refused without touching the row when the name is held
  // on a replaced file), then one acquire statement (or transaction, for shared leases, unless
  // `in_transaction`: one is open on `c`); `ticket` 0: not queued. The mark is kept only when
  // acquired.
  AcquireResult take(Connection& c, const AcquireRequest& request, std::int64_t ticket, bool in_transaction = false);
  AcquireResult take_row(Connection& c, const AcquireRequest& request, std::int64_t ticket, bool in_transaction);
  // After a refused shared acquire: the UsageError when live readers were granted under other
  // permits than `request` asks for.
  void check_permits(Connection& c, const AcquireRequest& request);
  // require_our_file() for an acquired lease, dropping its mark when it throws.
  void confirm_grant(const AcquireRequest& request);
  Position position_on(Connection& c, std::string_view name, const OwnerSecret& secret, std::int64_t ticket);
  int read_schema_version(Connection& c);
  // The reap statements, each deleting at most `batch` rows; how many rows they deleted.
  std::size_t reap_on(Connection& c, std::size_t batch);
  // True while the path still names the file this service opened (not deleted, moved away or
  // replaced). Leases live in that file: on another one they mean nothing.
  bool file_is_ours() const;
  // Throws ConnectionError unless file_is_ours(): an acquire is reported only on the file opened.
  void require_our_file() const;
  // Wakes the processes sleeping on `name`'s wake slot (no-op without a wake file).
  void wake(std::string_view name) const noexcept;

  // Constant after construction.
  const Options options_;
  std::string open_path_;  // options_.path with its directory resolved; set before the first open
  FileIdentity identity_;  // of the file at open_path_ when this service opened it
  const dblock::sql::Registry registry_;
  std::optional<HolderMarks> marks_;  // set in the constructor, after identity_
  std::unique_ptr<WakeFile> wake_;    // set in the constructor; null: waiters poll
  std::string wake_unusable_;         // why wake_ is null (degraded()); set in the constructor

  dblock::service::Pool<Connection> pool_;
  SqliteSqlFeatures sql_features_{*this};
};

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_SQLITE_SERVICE_H_
