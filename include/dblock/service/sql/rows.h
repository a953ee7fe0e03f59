// Result rows as dblock Values, and what list() makes of them.
#ifndef DBLOCK_SERVICE_SQL_ROWS_H_
#define DBLOCK_SERVICE_SQL_ROWS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "dblock/service/lease_service.h"
#include "dblock/sql/features.h"

namespace dblock::sql {

using Row = std::vector<Value>;
using Rows = std::vector<Row>;

bool is_null(const Value& v);
// Integers as they are; doubles truncated; decimal text parsed; NULL is 0.
std::int64_t as_int(const Value& v);
// Text as it is; integers in decimal; NULL is "".
std::string as_string(const Value& v);
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

// One row of every dialect's list statement: name, mode, holder, fence, acquired_at_us,
// expires_at_us, expires_in_us, renewals, live readers, readers' holders, permits (NULL: none).
LeaseInfo lease_info(const Row& row);

// The single microsecond value of every dialect's oldest-unreaped statement; nullopt for NULL
// (nothing expired) or no row.
std::optional<std::chrono::microseconds> optional_us(const Rows& rows);

// Sets each lease's waiters from `counts`, rows of every dialect's waiter-count statement (name,
// live waiters); a name without a row has none.
void set_waiters(std::vector<LeaseInfo>& leases, const Rows& counts);
// set_waiters from what `read` returns; a PermissionError (a monitoring role with the documented
// grants, without SELECT on the waiters table) leaves them unknown (-1).
void set_waiters_if_readable(std::vector<LeaseInfo>& leases, const std::function<Rows()>& read);

// One row of every dialect's force-release history statement: name, at_us, by_holder, by_account,
// holder, mode, old_fence, new_fence.
ForceReleaseRecord force_release_record(const Row& row);

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_ROWS_H_
