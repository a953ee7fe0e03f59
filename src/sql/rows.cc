#include "dblock/service/sql/rows.h"

#include <algorithm>
#include <stdexcept>

#include "dblock/errors.h"

namespace dblock::sql {

bool is_null(const Value& v) { return std::holds_alternative<std::monostate>(v); }

std::int64_t as_int(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (auto* s = std::get_if<std::string>(&v)) return std::stoll(*s);
  return 0;
}

const Value& Row::at(std::string_view column) const {
  if (columns_) {
    for (std::size_t i = 0; i < columns_->size() && i < values_.size(); ++i) {
      if ((*columns_)[i] == column) return values_[i];
    }
  }
  std::string have;
  if (columns_) {
    for (const std::string& c : *columns_) have += (have.empty() ? "'" : ", '") + c + "'";
  }
  throw std::logic_error("sql: no column '" + std::string(column) + "' in the row (columns: " + have + ")");
}

Rows relabel(const Rows& rows, std::span<const char* const> names) {
  const Columns columns = std::make_shared<const std::vector<std::string>>(names.begin(), names.end());
  Rows out;
  out.reserve(rows.size());
  for (const Row& row : rows) out.emplace_back(columns, row.values());
  return out;
}

std::vector<std::vector<Value>> values_of(const Rows& rows) {
  std::vector<std::vector<Value>> out;
  out.reserve(rows.size());
  for (const Row& row : rows) out.push_back(row.values());
  return out;
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
  info.name = row.get<std::string>("name");
  info.mode = row.get<std::string>("mode") == "shared" ? LockMode::kShared : LockMode::kExclusive;
  const bool shared = info.mode == LockMode::kShared;
  info.holder = row.get<std::string>(shared ? "reader_holders" : "holder");
  info.fence = row.get<std::int64_t>("fence");
  info.acquired_at_us = row.get<std::int64_t>("acquired_at_us");
  info.expires_at_us = row.get<std::int64_t>("expires_at_us");
  info.expires_in_us = row.get<std::int64_t>("expires_in_us");
  info.renewals = row.get<std::int64_t>("renewals");
  info.holders = shared ? row.get<int>("readers") : 1;
  if (shared) info.permits = row.get<int>("permits");
  return info;
}

std::optional<std::chrono::microseconds> optional_us(const Rows& rows) {
  if (rows.empty()) return std::nullopt;
  const std::optional<std::int64_t> us = rows.front().get<std::optional<std::int64_t>>("oldest_us");
  if (!us) return std::nullopt;
  return std::chrono::microseconds(*us);
}

void set_waiters(std::vector<LeaseInfo>& leases, const Rows& counts) {
  for (LeaseInfo& info : leases) {
    info.waiters = 0;
    for (const Row& row : counts) {
      if (row.get<std::string>("name") == info.name) info.waiters = row.get<int>("waiters");
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
  record.name = row.get<std::string>("name");
  record.at_us = row.get<std::int64_t>("at_us");
  record.by = row.get<std::string>("by_holder");
  record.by_account = row.get<std::string>("by_account");
  record.evicted = row.get<std::string>("holder");
  record.mode = row.get<std::string>("mode") == "shared" ? LockMode::kShared : LockMode::kExclusive;
  record.old_fence = row.get<std::int64_t>("old_fence");
  record.new_fence = row.get<std::int64_t>("new_fence");
  return record;
}

}  // namespace dblock::sql
