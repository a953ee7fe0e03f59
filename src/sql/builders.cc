#include "builders.h"

#include "dblock/errors.h"
#include "internal.h"

namespace dblock::sql {

BuiltStatement versioned_update(const VersionedUpdate& update, QuoteIdentifier quote, std::string_view backend) {
  detail::validate_identifier(update.table, "table");
  detail::validate_identifier(update.id_column, "id column");
  detail::validate_identifier(update.version_column, "version column");
  if (update.set.empty()) throw UsageError("compare_and_set: nothing to set", std::string(backend));
  BuiltStatement out;
  out.sql = "UPDATE " + quote(update.table) + " SET ";
  for (const auto& [column, value] : update.set) {
    detail::validate_identifier(column, "column");
    if (column == update.version_column) {
      throw UsageError("compare_and_set: the version column is set by dblock", std::string(backend));
    }
    out.sql += quote(column) + " = ?, ";
    out.params.push_back(value);
  }
  const std::string version = quote(update.version_column);
  out.sql += version + " = " + version + " + 1 WHERE " + quote(update.id_column) + " = ? AND " + version + " = ?";
  out.params.push_back(update.id);
  out.params.emplace_back(std::in_place_type<std::int64_t>, update.expected_version);
  return out;
}

std::string read_version_query(std::string_view table, std::string_view id_column, std::string_view version_column,
                               QuoteIdentifier quote) {
  detail::validate_identifier(table, "table");
  detail::validate_identifier(id_column, "id column");
  detail::validate_identifier(version_column, "version column");
  return "SELECT " + quote(version_column) + " FROM " + quote(table) + " WHERE " + quote(id_column) + " = ?";
}

std::string row_lock_query(const RowLockRequest& request, QuoteIdentifier quote, std::string_view shared_clause,
                           std::string_view backend) {
  detail::validate_identifier(request.table, "table");
  detail::validate_identifier(request.key_column, "key column");
  if (request.keys.empty()) throw UsageError("row lock: no keys", std::string(backend));
  std::string columns;
  for (const auto& col : request.columns) {
    detail::validate_identifier(col, "column");
    columns += (columns.empty() ? "" : ", ") + quote(col);
  }
  std::string sql = "SELECT " + (columns.empty() ? std::string("*") : columns) + " FROM " + quote(request.table) +
                    " WHERE " + quote(request.key_column) + " IN (";
  for (std::size_t i = 0; i < request.keys.size(); ++i) sql += (i ? ", ?" : "?");
  sql += ")";
  if (request.limit > 0) sql += " LIMIT " + std::to_string(request.limit);
  sql += request.shared ? " " + std::string(shared_clause) : std::string(" FOR UPDATE");
  if (request.wait == RowLockWait::kNoWait) sql += " NOWAIT";
  if (request.wait == RowLockWait::kSkipLocked) sql += " SKIP LOCKED";
  return sql;
}

}  // namespace dblock::sql
