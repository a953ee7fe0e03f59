#include "dblock/service/sql/rows.h"

#include <algorithm>

#include "dblock/errors.h"

namespace dblock::sql {

bool is_null(const Value& v) { return std::holds_alternative<std::monostate>(v); }

std::int64_t as_int(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (auto* s = std::get_if<std::string>(&v)) return std::stoll(*s);
  return 0;
}

std::string printable(std::string text) {
  for (char& ch : text) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?';
  }
  return text;
}

std::string as_string(const Value& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return {};
}

std::chrono::milliseconds remaining_ms(std::int64_t us) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::microseconds(us < 0 ? 0 : us));
}

LeaseInfo lease_info(const Row& row) {
  LeaseInfo info;
  info.name = as_string(row.at(0));
  info.mode = as_string(row.at(1)) == "shared" ? LockMode::kShared : LockMode::kExclusive;
  info.holder = as_string(info.mode == LockMode::kShared ? row.at(9) : row.at(2));
  info.fence = as_int(row.at(3));
  info.acquired_at_us = as_int(row.at(4));
  info.expires_at_us = as_int(row.at(5));
  info.expires_in_us = as_int(row.at(6));
  info.renewals = as_int(row.at(7));
  info.holders = info.mode == LockMode::kShared ? static_cast<int>(as_int(row.at(8))) : 1;
  if (info.mode == LockMode::kShared) info.permits = static_cast<int>(as_int(row.at(10)));
  return info;
}

std::optional<std::chrono::microseconds> optional_us(const Rows& rows) {
  if (rows.empty() || is_null(rows[0].at(0))) return std::nullopt;
  return std::chrono::microseconds(as_int(rows[0][0]));
}

void set_waiters(std::vector<LeaseInfo>& leases, const Rows& counts) {
  for (LeaseInfo& info : leases) {
    info.waiters = 0;
    for (const Row& row : counts) {
      if (as_string(row.at(0)) == info.name) info.waiters = static_cast<int>(as_int(row.at(1)));
    }
  }
}

void set_waiters_if_readable(std::vector<LeaseInfo>& leases, const std::function<Rows()>& read) {
  try {
    set_waiters(leases, read());
  } catch (const PermissionError&) {
  }
}

ForceReleaseRecord force_release_record(const Row& row) {
  ForceReleaseRecord record;
  record.name = as_string(row.at(0));
  record.at_us = as_int(row.at(1));
  record.by = as_string(row.at(2));
  record.by_account = as_string(row.at(3));
  record.evicted = as_string(row.at(4));
  record.mode = as_string(row.at(5)) == "shared" ? LockMode::kShared : LockMode::kExclusive;
  record.old_fence = as_int(row.at(6));
  record.new_fence = as_int(row.at(7));
  return record;
}

}  // namespace dblock::sql
