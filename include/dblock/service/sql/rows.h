// Result rows read by column name, and what list() makes of them.
//
// Thread safety: Row is a value; rows of one result share their column names (immutable).
#ifndef DBLOCK_SERVICE_SQL_ROWS_H_
#define DBLOCK_SERVICE_SQL_ROWS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "dblock/service/lease_service.h"
#include "dblock/sql/features.h"

namespace dblock::sql {

bool is_null(const Value& v);
// Integers as they are; doubles truncated; decimal text parsed; NULL is 0.
std::int64_t as_int(const Value& v);
// Text as it is; integers in decimal; NULL is "".
std::string as_string(const Value& v);

using Columns = std::shared_ptr<const std::vector<std::string>>;

// One result row: its values, read by the names the statement gave its columns.
class Row {
 public:
  Row() = default;
  Row(Columns columns, std::vector<Value> values) : columns_(std::move(columns)), values_(std::move(values)) {}

  // The value of `column`. Throws std::logic_error naming the columns the row has when it has no
  // such column (a statement and its reader out of step).
  const Value& at(std::string_view column) const;
  bool is_null(std::string_view column) const { return sql::is_null(at(column)); }
  // at(column) as T: std::int64_t and other integers (as_int), bool (non-zero), double,
  // std::string (as_string), std::optional<std::int64_t> (nullopt for NULL).
  template <class T>
  T get(std::string_view column) const;

  // The values in the statement's order: for handing a row on unread (an application's query).
  const std::vector<Value>& values() const { return values_; }

 private:
  Columns columns_;
  std::vector<Value> values_;
};
using Rows = std::vector<Row>;

template <class T>
T Row::get(std::string_view column) const {
  const Value& v = at(column);
  if constexpr (std::is_same_v<T, std::string>) {
    return as_string(v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return as_int(v) != 0;
  } else if constexpr (std::is_same_v<T, double>) {
    if (const double* d = std::get_if<double>(&v)) return *d;
    return static_cast<double>(as_int(v));
  } else if constexpr (std::is_same_v<T, std::optional<std::int64_t>>) {
    return sql::is_null(v) ? std::nullopt : std::optional<std::int64_t>(as_int(v));
  } else {
    static_assert(std::is_integral_v<T>, "Row::get: an integer, bool, double, std::string or optional<int64_t>");
    return static_cast<T>(as_int(v));
  }
}

// `rows` with their columns named `names` in order: the result of a routine whose columns the
// service's own migration fixed without naming them. A row with fewer values lacks the last
// names (reading one throws, as for any missing column).
Rows relabel(const Rows& rows, std::span<const char* const> names);

// The values of `rows`, for an application that reads its own statement's columns by position.
std::vector<std::vector<Value>> values_of(const Rows& rows);
// A name the server supplied (a role, an application), for an error message: control characters
// shown as '?'.
std::string printable(std::string text);

// A holder's remaining time the server reported in microseconds, in whole milliseconds; negative
// (free or expired) as zero.
std::chrono::milliseconds remaining_ms(std::int64_t us);

// Each of `rows` made into a T by `parse` (lease_info, force_release_record).
template <class T>
std::vector<T> parse_rows(const Rows& rows, T (*parse)(const Row&)) {
  std::vector<T> out;
  out.reserve(rows.size());
  for (const Row& row : rows) out.push_back(parse(row));
  return out;
}

// One row of every dialect's list statement, columns name, mode, holder, fence, acquired_at_us,
// expires_at_us, expires_in_us, renewals, readers (live readers), reader_holders, permits (NULL:
// none).
LeaseInfo lease_info(const Row& row);

// The single microsecond value (column oldest_us) of every dialect's oldest-unreaped statement;
// nullopt for NULL (nothing expired) or no row.
std::optional<std::chrono::microseconds> optional_us(const Rows& rows);

// Sets each lease's waiters from `counts`, rows of every dialect's waiter-count statement (name,
// waiters); a name without a row has none.
void set_waiters(std::vector<LeaseInfo>& leases, const Rows& counts);
// set_waiters from what `read` returns; a PermissionError (a monitoring role with the documented
// grants, without SELECT on the waiters table) leaves them unknown (-1).
void set_waiters_if_readable(std::vector<LeaseInfo>& leases, const std::function<Rows()>& read);

// One row of every dialect's force-release history statement, columns name, at_us, by_holder,
// by_account, holder, mode, old_fence, new_fence.
ForceReleaseRecord force_release_record(const Row& row);

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_ROWS_H_
