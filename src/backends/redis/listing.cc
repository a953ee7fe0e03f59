#include "listing.h"

#include <algorithm>

#include "dblock/errors.h"
#include "keys.h"

namespace dblock::redis {

namespace {

// How many keys one SCAN step asks for, and the most one describe script reads.
constexpr const char* kScanCount = "500";
constexpr std::size_t kDescribeBatch = 500;

// `text` with the glob characters of SCAN's MATCH escaped.
std::string glob_escaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// kind, mode, holder, fence, acq, exp, ren, holders, permits, waiters: one lock's entry in
// kDescribe's reply.
constexpr std::size_t kDescribeFields = 10;

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
  info.permits = static_cast<int>(r[at + 8].integer());
  info.waiters = static_cast<int>(r[at + 9].integer());
  return info;
}

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

void describe_batch(Node& node, const std::vector<std::string>& keys, std::string_view prefix, bool foreign_too,
                    std::vector<LeaseInfo>& out) {
  std::vector<std::string> script_keys;
  for (const std::string& key : keys) {
    const LockKeys k(prefix, std::string_view(key).substr(prefix.size()));
    script_keys.insert(script_keys.end(), {k.lease, k.queue, k.queue_info});
  }
  const Reply r = node.eval(node.scripts().describe, script_keys, {}, Repeat::kSafe);
  const std::int64_t now_us = r[0].integer();
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::size_t at = 1 + i * kDescribeFields;
    const std::int64_t kind = r[at].integer();
    if (kind == 1 || (kind == 2 && foreign_too)) out.push_back(lease_info(r, at, keys[i].substr(prefix.size()), now_us));
  }
}

}  // namespace

std::vector<std::string> scan_lease_keys(Node& node, std::string_view prefix) {
  const std::string match = glob_escaped(prefix) + "*";
  std::vector<std::string> out;
  std::string cursor = "0";
  do {
    const Reply page = node.with_connection(
        [&](Connection& c, SteadyClock::time_point deadline) {
          return check_reply(c.command({"SCAN", cursor, "MATCH", match, "COUNT", kScanCount}, deadline), "SCAN");
        },
        Repeat::kSafe);
    cursor = std::string(page[0].text());
    for (std::size_t i = 0; i < page[1].size(); ++i) {
      const std::string_view key = page[1][i].text();
      if (!key.empty() && key.front() != '{') out.emplace_back(key);  // companions begin with '{'
    }
  } while (cursor != "0");
  return out;
}

std::vector<LeaseInfo> describe(Node& node, const std::vector<std::string>& lease_keys, std::string_view prefix,
                                bool foreign_too) {
  std::vector<LeaseInfo> out;
  for (std::size_t at = 0; at < lease_keys.size(); at += kDescribeBatch) {
    const auto end = lease_keys.begin() + static_cast<std::ptrdiff_t>(std::min(lease_keys.size(), at + kDescribeBatch));
    describe_batch(node, std::vector<std::string>(lease_keys.begin() + static_cast<std::ptrdiff_t>(at), end), prefix,
                   foreign_too, out);
  }
  return out;
}

void sort_by_name(std::vector<LeaseInfo>& leases) {
  std::sort(leases.begin(), leases.end(), [](const LeaseInfo& a, const LeaseInfo& b) { return a.name < b.name; });
  leases.erase(std::unique(leases.begin(), leases.end(),
                           [](const LeaseInfo& a, const LeaseInfo& b) { return a.name == b.name; }),
               leases.end());
}

std::vector<ForceReleaseRecord> read_audit(Node& node, std::string_view prefix, std::optional<std::string_view> name,
                                           std::size_t limit) {
  std::vector<ForceReleaseRecord> out;
  const std::string key = audit_key(prefix);
  std::string end = "+";
  while (out.size() < limit) {
    const Reply page = node.with_connection(
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
