// PostgreSQL's SQL features: the guard, transaction locks (pg_advisory_xact_lock), row locks on
// application tables and optimistic compare-and-set, on the service's pooled connections.
// Internal. Thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_FEATURES_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_FEATURES_H_

#include "connection.h"
#include "dblock/sql/features.h"

namespace dblock::postgresql {

class PgSqlFeatures final : public SqlFeatures, public RowLocks {
 public:
  explicit PgSqlFeatures(Context& context) : context_(context) {}

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
  Context& context_;
};

// Application statements on a libpqxx transaction (`?` placeholders become $n).
class PgTransaction final : public Transaction {
 public:
  explicit PgTransaction(pqxx::transaction_base& tx) : tx_(tx) {}
  std::int64_t execute(std::string_view sql, const std::vector<Value>& params) override;
  std::vector<std::vector<Value>> query(std::string_view sql, const std::vector<Value>& params) override;

 private:
  pqxx::result run(std::string_view sql, const std::vector<Value>& params);
  pqxx::transaction_base& tx_;
};

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_SQL_FEATURES_H_
