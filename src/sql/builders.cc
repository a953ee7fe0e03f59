#include "dblock/service/sql/builders.h"

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"

namespace dblock::sql {

BuiltStatement versioned_update(const VersionedUpdate& update, QuoteIdentifier quote, std::string_view backend) {
  service::validate_identifier(update.table, "table");
  service::validate_identifier(update.id_column, "id column");
  service::validate_identifier(update.version_column, "version column");
  if (update.set.empty()) throw UsageError("compare_and_set: nothing to set", std::string(backend));
  BuiltStatement out;
  out.sql = "UPDATE " + quote(update.table) + " SET ";
  for (const auto& [column, value] : update.set) {
    service::validate_identifier(column, "column");
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
  service::validate_identifier(table, "table");
  service::validate_identifier(id_column, "id column");
  service::validate_identifier(version_column, "version column");
  return "SELECT " + quote(version_column) + " FROM " + quote(table) + " WHERE " + quote(id_column) + " = ?";
}

std::optional<std::int64_t> read_version_result(const std::vector<std::vector<Value>>& rows,
                                                std::string_view backend) {
  if (rows.empty()) return std::nullopt;
  if (auto* v = std::get_if<std::int64_t>(&rows.front().front())) return *v;
  throw UsageError("read_version: version column is not an integer", std::string(backend));
}

namespace {

// "a, b" or "*".
std::string select_list(const std::vector<std::string>& columns, QuoteIdentifier quote) {
  std::string out;
  for (const auto& column : columns) {
    service::validate_identifier(column, "column");
    out += (out.empty() ? "" : ", ") + quote(column);
  }
  return out.empty() ? "*" : out;
}

// The conditions of a row lock, ANDed: key IN (?, ...), then col = ? or col IS NULL.
std::string row_conditions(const RowLockRequest& request, QuoteIdentifier quote, std::vector<Value>& params) {
  std::string out;
  if (!request.keys.empty()) {
    service::validate_identifier(request.key_column, "key column");
    out = quote(request.key_column) + " IN (";
    for (std::size_t i = 0; i < request.keys.size(); ++i) out += (i ? ", ?" : "?");
    out += ")";
    params = request.keys;
  }
  for (const auto& [column, value] : request.where) {
    service::validate_identifier(column, "where column");
    out += (out.empty() ? "" : " AND ") + quote(column);
    if (std::holds_alternative<std::monostate>(value)) {
      out += " IS NULL";
    } else {
      out += " = ?";
      params.push_back(value);
    }
  }
  return out;
}

// " ORDER BY a, b DESC" ("-b": descending), or "".
std::string order_clause(const std::vector<std::string>& order_by, QuoteIdentifier quote) {
  std::string out;
  for (const auto& entry : order_by) {
    const bool descending = !entry.empty() && entry[0] == '-';
    const std::string_view column = descending ? std::string_view(entry).substr(1) : std::string_view(entry);
    service::validate_identifier(column, "order_by column");
    out += (out.empty() ? " ORDER BY " : ", ") + quote(column) + (descending ? " DESC" : "");
  }
  return out;
}

}  // namespace

BuiltStatement row_lock_query(const RowLockRequest& request, QuoteIdentifier quote, std::string_view shared_clause,
                              std::string_view backend) {
  service::validate_identifier(request.table, "table");
  if (request.keys.empty() && request.where.empty()) {
    throw UsageError("row lock on '" + request.table +
                         "': no rows chosen; set keys (key_column IN keys) or where (column = value conditions)",
                     std::string(backend));
  }
  BuiltStatement out;
  out.sql = "SELECT " + select_list(request.columns, quote) + " FROM " + quote(request.table) + " WHERE " +
            row_conditions(request, quote, out.params) + order_clause(request.order_by, quote);
  if (request.limit > 0) out.sql.append(" LIMIT ").append(std::to_string(request.limit));
  if (request.shared) {
    out.sql.append(" ").append(shared_clause);
  } else {
    out.sql.append(" FOR UPDATE");
  }
  if (request.wait == RowLockWait::kNoWait) out.sql += " NOWAIT";
  if (request.wait == RowLockWait::kSkipLocked) out.sql += " SKIP LOCKED";
  return out;
}

}  // namespace dblock::sql
