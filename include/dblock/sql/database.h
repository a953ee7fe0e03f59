// dblock/sql/database.h — what only a SQL service offers, on a LockManager whose service is one
// (SQLite, PostgreSQL, MariaDB): the guard, transaction locks, row locks on application tables and
// optimistic version-column compare-and-set. As SOCI keeps a backend's own calls on its backend
// handle, these live here, and LockManager keeps the calls every service answers.
//
//   auto locks = dblock::open("postgresql://app@db/app");
//   dblock::sql::Database db(*locks);  // UnsupportedError on a service without SQL (Redis, ZooKeeper)
//   db.run_guarded(*lease, [&](dblock::Transaction& tx) { tx.execute("UPDATE ...", {...}); });
//
// A Database is a view of its manager's service: cheap to make and copy, thread-safe as the
// manager, usable while the manager lives. Every call runs on the manager's own connections,
// bounded as LockManager's calls are (ManagerOptions::call_timeout, a wait, a lease's safe-until).
#ifndef DBLOCK_SQL_DATABASE_H_
#define DBLOCK_SQL_DATABASE_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>

#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/sql/features.h"

namespace dblock::sql {

class Database {
 public:
  // Throws UnsupportedError naming the service when it has no SQL features.
  explicit Database(LockManager& manager);

  // Transaction lock: runs `body` inside a transaction that holds the lock for `name` (SQLite:
  // BEGIN IMMEDIATE, which excludes every other writer of the database file: every lease in the
  // file waits, and one whose TTL is shorter than the transaction is lost). Returns false if the
  // lock was not obtained within `wait`.
  bool run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                               const std::function<void(Transaction&)>& body);

  // Guarded write: runs `body` in a transaction that commits only while `lease` is still held with
  // its fence (checked inside the transaction, on the service's clock). Throws LeaseLostError,
  // writing nothing, if it is not. The service decides, not the local lost() flag.
  // REQUIRES: lease was acquired from this manager.
  void run_guarded(const Lease& lease, const std::function<void(Transaction&)>& body);

  // Optimistic locking: one compare-and-set statement; false when the version did not match.
  bool compare_and_set(const VersionedUpdate& update);
  std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column, const Value& id,
                                           std::string_view version_column);

  // Row locks on application tables: runs `body` in a transaction holding the rows `request`
  // selects (by keys and/or where conditions, see RowLockRequest) FOR UPDATE (or FOR SHARE), with
  // NOWAIT, SKIP LOCKED or a wait timeout. Returns false when NOWAIT met a locked row or the wait
  // timed out (body not run). Throws UnsupportedError where the service has none (SQLite),
  // UsageError for bad identifiers or a request with neither keys nor where.
  bool with_locked_rows(const RowLockRequest& request, const RowsBody& body);

 private:
  std::shared_ptr<detail::ManagerCore> core_;
  SqlFeatures* features_;
};

}  // namespace dblock::sql

#endif  // DBLOCK_SQL_DATABASE_H_
