// RedisService's read-only admin calls: list/inspect (SCAN, never KEYS) and the force-release
// history (the audit stream).
#include <algorithm>

#include "dblock/errors.h"
#include "redis_service.h"

namespace dblock::redis {

namespace {

// How many keys one SCAN step asks for, and the most one describe script reads.
constexpr const char* kScanCount = "500";

// `text` with the glob characters of SCAN's MATCH escaped.
std::string glob_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// kind, mode, holder, fence, acq, exp, ren, holders: one key's entry in kDescribe's reply.
constexpr std::size_t kDescribeFields = 8;

LeaseInfo lease_info(const ReplyView& r, std::size_t at, std::string name, std::int64_t now_us) {
  LeaseInfo info;
  info.name = std::move(name);
  info.mode = r[at + 1].text() == "s" ? LockMode::kShared : LockMode::kExclusive;
  info.holder = r[at].integer() == 2 ? "(another client's lock)" : std::string(r[at + 2].text());
  info.fence = r[at + 3].integer();
  info.acquired_at_us = r[at + 4].integer();
  info.expires_at_us = r[at + 5].integer();
  info.expires_in_us = info.expires_at_us == 0 ? 0 : info.expires_at_us - now_us;
  info.renewals = r[at + 6].integer();
  info.holders = static_cast<int>(r[at + 7].integer());
  return info;
}

}  // namespace

// Describes `lease_keys` in one script call. Another client's string is listed when
// `foreign_too` (a named inspect, or a prefix that only dblock uses).
std::vector<LeaseInfo> RedisService::describe(const std::vector<std::string>& lease_keys, bool foreign_too) {
  std::vector<LeaseInfo> out;
  if (lease_keys.empty()) return out;
  const Reply r = node_.eval(node_.scripts().describe, lease_keys, {}, Repeat::kSafe);
  const std::int64_t now_us = r[0].integer();
  for (std::size_t i = 0; i < lease_keys.size(); ++i) {
    const std::size_t at = 1 + i * kDescribeFields;
    const std::int64_t kind = r[at].integer();
    if (kind == 1 || (kind == 2 && foreign_too)) {
      out.push_back(lease_info(r, at, lease_keys[i].substr(options_.prefix.size()), now_us));
    }
  }
  return out;
}

std::vector<LeaseInfo> RedisService::list(std::optional<std::string_view> name) {
  if (name) return describe({keys(*name).lease}, true);
  const std::string match = glob_escaped(options_.prefix) + "*";
  std::vector<LeaseInfo> out;
  std::string cursor = "0";
  do {
    std::vector<std::string> batch;
    const Reply page = node_.with_connection(
        [&](Connection& c, SteadyClock::time_point deadline) {
          return check_reply(c.command({"SCAN", cursor, "MATCH", match, "COUNT", kScanCount}, deadline), "SCAN");
        },
        Repeat::kSafe);
    cursor = std::string(page[0].text());
    for (std::size_t i = 0; i < page[1].size(); ++i) {
      const std::string_view key = page[1][i].text();
      if (!key.empty() && key.front() != '{') batch.emplace_back(key);  // companions begin with '{'
    }
    auto described = describe(batch, !options_.prefix.empty());
    std::move(described.begin(), described.end(), std::back_inserter(out));
  } while (cursor != "0");
  std::sort(out.begin(), out.end(), [](const LeaseInfo& a, const LeaseInfo& b) { return a.name < b.name; });
  out.erase(std::unique(out.begin(), out.end(), [](const LeaseInfo& a, const LeaseInfo& b) { return a.name == b.name; }),
            out.end());
  return out;
}

namespace {

std::string field(const ReplyView& fields, std::string_view name) {
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) {
    if (fields[i].text() == name) return std::string(fields[i + 1].text());
  }
  return "";
}

ForceReleaseRecord record_of(const ReplyView& fields) {
  ForceReleaseRecord r;
  r.name = field(fields, "name");
  r.at_us = std::stoll("0" + field(fields, "at"));
  r.by = field(fields, "by");
  r.evicted = field(fields, "evicted");
  r.mode = field(fields, "mode") == "s" ? LockMode::kShared : LockMode::kExclusive;
  r.old_fence = std::stoll("0" + field(fields, "old"));
  r.new_fence = std::stoll("0" + field(fields, "new"));
  return r;
}

}  // namespace

std::vector<ForceReleaseRecord> RedisService::force_releases(std::optional<std::string_view> name, std::size_t limit) {
  std::vector<ForceReleaseRecord> out;
  const std::string key = audit_key(options_.prefix);
  std::string end = "+";
  while (out.size() < limit) {
    const Reply page = node_.with_connection(
        [&](Connection& c, SteadyClock::time_point deadline) {
          return check_reply(c.command({"XREVRANGE", key, end, "-", "COUNT", "1000"}, deadline), "XREVRANGE");
        },
        Repeat::kSafe);
    for (std::size_t i = 0; i < page.size() && out.size() < limit; ++i) {
      ForceReleaseRecord r = record_of(page[i][1]);
      if (!name || r.name == *name) out.push_back(std::move(r));
    }
    if (page.size() < 1000) break;
    end = "(" + std::string(page[page.size() - 1][0].text());
  }
  return out;
}

}  // namespace dblock::redis
