// dblock/sql/features.h — what only SQL services offer: the guard, transaction locks, row locks
// on application tables and optimistic version-column compare-and-set.
//
// Applications reach these through LockManager (run_guarded, run_in_transaction_lock,
// with_locked_rows, compare_and_set). A SQL service implements SqlFeatures and returns it from
// LeaseService::sql_features(); row locks are a capability of their own (SQLite has none).
// Thread safety as for LeaseService; a Transaction is used by one thread, inside its callback.
#ifndef DBLOCK_SQL_FEATURES_H_
#define DBLOCK_SQL_FEATURES_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "dblock/lease_info.h"

namespace dblock {

// A value bound to a statement parameter or read from a result column.
using Value = std::variant<std::monostate, std::int64_t, double, std::string>;

// A transaction opened by the service on the caller's behalf. Valid only inside the callback;
// not thread-safe. Statements are always prepared, `?` marks parameters.
class Transaction {
 public:
  virtual ~Transaction() = default;
  // Runs one statement; returns the number of rows changed.
  virtual std::int64_t execute(std::string_view sql, const std::vector<Value>& params = {}) = 0;
  // Runs one query; returns all rows.
  virtual std::vector<std::vector<Value>> query(std::string_view sql, const std::vector<Value>& params = {}) = 0;
};

// One optimistic compare-and-set: UPDATE table SET set..., version = version + 1
//                                   WHERE id_column = id AND version_column = expected_version.
// Table and column names are validated as identifiers and quoted.
struct VersionedUpdate {
  std::string table;
  std::string id_column = "id";
  Value id;
  std::string version_column = "version";
  std::int64_t expected_version = 0;
  std::vector<std::pair<std::string, Value>> set;
};

// How a row lock waits for rows another transaction has locked.
enum class RowLockWait {
  kWait,        // block, up to RowLockRequest::wait_timeout (0: the server's default)
  kNoWait,      // FOR UPDATE NOWAIT: fail at once (with_locked_rows returns false)
  kSkipLocked,  // FOR UPDATE SKIP LOCKED: return only the rows nobody has locked
};

// One row lock on an application table, run as
//   SELECT <columns> FROM table
//     WHERE key_column IN (keys...) AND c1 = ? AND c2 IS NULL ...   (keys, then where, ANDed)
//     [ORDER BY o1, o2 DESC ...] [LIMIT limit]
//     FOR UPDATE|FOR SHARE [NOWAIT|SKIP LOCKED]
// Rows are chosen by `keys`, by `where`, or by both; a request with neither is a UsageError, as
// is a table or column name that is not a plain identifier (all are validated, then quoted;
// values are always bound as parameters, never spliced). Nothing is sent then.
//
// A job queue, each worker taking the next 10 pending jobs that no other worker holds:
//   RowLockRequest next{.table = "jobs", .where = {{"state", "pending"}}, .order_by = {"id"},
//                       .wait = RowLockWait::kSkipLocked, .limit = 10};
//   manager.with_locked_rows(next, [](Transaction& tx, const auto& rows) { /* run, mark done */ });
// Rows stay locked until the body returns (commit) or throws (rollback); a second worker running
// the same request meanwhile skips them and gets the next 10. An index on the where and order_by
// columns keeps the scan short.
// Every member has a default (`{}` for the lists), so designated initialisers may leave any out
// without -Wmissing-field-initializers warnings.
struct RowLockRequest {
  std::string table{};
  std::string key_column = "id";
  std::vector<Value> keys{};                          // key_column IN (keys...); may be empty if where is not
  std::vector<std::pair<std::string, Value>> where{};  // column = value, ANDed; NULL (Value{}): IS NULL
  std::vector<std::string> order_by{};                // ascending columns; "-col": col descending
  std::vector<std::string> columns{};                 // empty: all columns (*)
  bool shared = false;                                // FOR SHARE instead of FOR UPDATE
  RowLockWait wait = RowLockWait::kWait;
  std::chrono::milliseconds wait_timeout{0};          // kWait only; 0 = server default
  std::size_t limit = 0;                              // 0: no LIMIT
};

using RowsBody = std::function<void(Transaction&, const std::vector<std::vector<Value>>& rows)>;

// Row locks on application tables (SELECT ... FOR UPDATE).
class RowLocks {
 public:
  virtual ~RowLocks() = default;
  // Opens a transaction, locks the rows, runs `body` with them, commits (rolls back if body
  // throws). Returns false when kNoWait met a locked row or kWait ran out of wait_timeout
  // (nothing is run then).
  virtual bool run_with_locked_rows(const RowLockRequest& request, const RowsBody& body) = 0;
};

class SqlFeatures {
 public:
  virtual ~SqlFeatures() = default;

  // A transaction-scoped lock: opens a transaction holding the lock for `name` (waiting up to
  // `wait`), runs `body`, commits; rolls back if body throws. Returns false if the lock was not
  // obtained within `wait`.
  virtual bool run_in_transaction_lock(std::string_view name, std::chrono::milliseconds wait,
                                       const std::function<void(Transaction&)>& body) = 0;
  // Guarded write: opens a write transaction, verifies inside it that `name` is still held with
  // `fence` by `secret` (unexpired on the service clock), runs `body`, commits. Throws
  // LeaseLostError (after rolling back, nothing written) if the lease is not held.
  virtual void run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                           const std::function<void(Transaction&)>& body) = 0;
  // Optimistic locking: one compare-and-set statement; false when the version did not match.
  virtual bool compare_and_set(const VersionedUpdate& update) = 0;
  virtual std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column,
                                                   const Value& id, std::string_view version_column) = 0;

  // Row locks, or nullptr when the service has none.
  virtual RowLocks* row_locks() noexcept { return nullptr; }
};

}  // namespace dblock

#endif  // DBLOCK_SQL_FEATURES_H_
