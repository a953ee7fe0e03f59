// SQLite's SQL features: the guard, the transaction lock (BEGIN IMMEDIATE: the whole file) and
// optimistic compare-and-set, on the service's pooled connections. SQLite has no row locks.
// Internal. Thread-safe, as the service.
#ifndef DBLOCK_SRC_BACKENDS_SQLITE_SQL_FEATURES_H_
#define DBLOCK_SRC_BACKENDS_SQLITE_SQL_FEATURES_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>

#include "connection.h"
#include "dblock/sql/features.h"

namespace dblock::sqlite {

class SqliteService;

class SqliteSqlFeatures final : public SqlFeatures {
 public:
  // `service` outlives this (it owns it).
  explicit SqliteSqlFeatures(SqliteService& service) : service_(service) {}

  bool run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                               const std::function<void(Transaction&)>& body) override;
  void run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                   const std::function<void(Transaction&)>& body) override;
  bool compare_and_set(const VersionedUpdate& update) override;
  std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column, const Value& id,
                                           std::string_view version_column) override;

 private:
  // Runs `body` in the transaction open on `c` and commits; rolls back if anything throws.
  void run_body_and_commit(Connection& c, const std::function<void(Transaction&)>& body);

  SqliteService& service_;
};

}  // namespace dblock::sqlite

#endif  // DBLOCK_SRC_BACKENDS_SQLITE_SQL_FEATURES_H_
