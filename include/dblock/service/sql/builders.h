// Statements on the application's own tables, the same in every dialect but for identifier
// quoting: optimistic compare-and-set and row locks. The only SQL built at run time; everything
// dblock runs on its own tables is in a service's sql.h.
//
// Every identifier is validated (validate_identifier) before it is quoted; values are always
// '?' parameters, never spliced.
#ifndef DBLOCK_SERVICE_SQL_BUILDERS_H_
#define DBLOCK_SERVICE_SQL_BUILDERS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/sql/features.h"

namespace dblock::sql {

// Quotes a validated identifier in the backend's dialect ("x" or `x`).
using QuoteIdentifier = std::string (*)(std::string_view);

struct BuiltStatement {
  std::string sql;
  std::vector<Value> params;
};

// UPDATE t SET c1 = ?, ..., v = v + 1 WHERE id = ? AND v = ?, with its parameters. Throws
// UsageError (naming `backend`) for bad identifiers, an empty set, or a set of the version column.
BuiltStatement versioned_update(const VersionedUpdate& update, QuoteIdentifier quote, std::string_view backend);

// SELECT v FROM t WHERE id = ?. Throws UsageError for bad identifiers.
std::string read_version_query(std::string_view table, std::string_view id_column, std::string_view version_column,
                               QuoteIdentifier quote);
// The version read_version_query's rows carry (its one column); nullopt for no row. Throws
// UsageError (naming `backend`) for a version that is not an integer.
std::optional<std::int64_t> read_version_result(const std::vector<std::vector<Value>>& rows,
                                                std::string_view backend);

// SELECT cols FROM t WHERE key IN (?, ...) AND c = ? AND d IS NULL ... [ORDER BY ...] [LIMIT n]
// FOR UPDATE|<shared_clause> [NOWAIT|SKIP LOCKED], with its parameters (the keys, then the
// where values that are not NULL). `shared_clause` is the dialect's shared row lock ("FOR SHARE",
// "LOCK IN SHARE MODE"). The wait timeout is the caller's (dialects differ). Throws UsageError
// (naming `backend` where the fault is the request's shape) for bad identifiers, or for neither
// keys nor where conditions.
BuiltStatement row_lock_query(const RowLockRequest& request, QuoteIdentifier quote, std::string_view shared_clause,
                              std::string_view backend);

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_BUILDERS_H_
