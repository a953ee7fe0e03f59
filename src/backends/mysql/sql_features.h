// MariaDB's SQL features: the guard (LOCK IN SHARE MODE on the lease row), transaction locks
// (GET_LOCK around the transaction), row locks on application tables (NOWAIT, SKIP LOCKED, a
// millisecond wait bound) and optimistic compare-and-set. Internal. Thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_SQL_FEATURES_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_SQL_FEATURES_H_

#include <optional>

#include "connection.h"
#include "dblock/sql/features.h"

namespace dblock::mysql {

class MySqlFeatures final : public SqlFeatures, public RowLocks {
 public:
  explicit MySqlFeatures(Context& context) : context_(context) {}

  bool run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                               const std::function<void(Transaction&)>& body) override;
  void run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                   const std::function<void(Transaction&)>& body) override;
  bool compare_and_set(const VersionedUpdate& update) override;
  std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column, const Value& id,
                                           std::string_view version_column) override;
  RowLocks* row_locks() noexcept override { return this; }

  bool run_with_locked_rows(const RowLockRequest& request, const RowsBody& body) override;

 private:
  using Borrowed = dblock::service::Pool<Connection>::Borrowed;

  // Runs `body` inside the transaction open on `c`, then commits (rolls back if body throws).
  // `end` / `abort`: statements ending the transaction (with `args`), or nullopt for plain
  // COMMIT / ROLLBACK. A COMMIT whose reply was lost is reported in doubt.
  void finish_transaction(Borrowed& c, const std::function<void(Transaction&)>& body,
                          const dblock::sql::Statement* end, const dblock::sql::Statement* abort, const Args& args);

  Context& context_;
};

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_SQL_FEATURES_H_
