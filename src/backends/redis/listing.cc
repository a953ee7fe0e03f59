#include "listing.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "dblock/errors.h"
#include "keys.h"
#include "script_calls.h"
#include "scripts.h"

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

using Described = DescribeReply::Entry;

LeaseInfo lease_info(const Described& e, std::string name, std::int64_t now_us) {
  LeaseInfo info;
  info.name = std::move(name);
  info.mode = e.mode == "s" ? LockMode::kShared : LockMode::kExclusive;
  info.holder = e.kind == Described::kForeign      ? "(another client's lock)"
                : e.kind == Described::kUnreadable ? "(unreadable lease: " + std::string(e.holder) + ")"
                                                   : std::string(e.holder);
  info.fence = e.fence;
  info.acquired_at_us = e.acquired_at_us;
  info.expires_at_us = e.expires_at_us;
  info.expires_in_us = info.expires_at_us == 0 ? 0 : info.expires_at_us - now_us;
  info.renewals = e.renewals;
  info.holders = e.holders;
  info.permits = e.permits;
  info.waiters = e.waiters;
  return info;
}

// A stream entry's fields as name -> value (the last of a repeated name).
std::map<std::string, std::string, std::less<>> fields_of(const ReplyView& fields) {
  std::map<std::string, std::string, std::less<>> out;
  for (std::size_t i = 0; i + 1 < fields.size(); i += 2) out[std::string(fields[i].text())] = std::string(fields[i + 1].text());
  return out;
}

// A decimal int64 (an optional '-', then digits), exactly; nullopt for anything else.
std::optional<std::int64_t> int64_of(std::string_view text) {
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [at, error] = std::from_chars(text.data(), end, v);
  if (text.empty() || error != std::errc() || at != end) return std::nullopt;
  return v;
}

// One audit entry as a record; one whose numbers cannot be read (or of another shape) is a record
// of its name, if any, whose `evicted` says what is wrong, its numbers 0.
ForceReleaseRecord record_of(const StreamEntry& entry) {
  ForceReleaseRecord r;
  const std::string id(entry.id);
  if (!entry.fields) {
    r.evicted = "(unreadable record " + id + ": not an entry of fields)";
    return r;
  }
  const auto fields = fields_of(*entry.fields);
  const auto text = [&](std::string_view name) {
    const auto it = fields.find(name);
    return it == fields.end() ? std::string() : it->second;
  };
  r.name = text("name");
  r.by = text("by");
  r.evicted = text("evicted");
  r.mode = text("mode") == "s" ? LockMode::kShared : LockMode::kExclusive;
  std::string bad;
  for (const auto& [name, out] : {std::pair<const char*, std::int64_t*>{"at", &r.at_us}, {"old", &r.old_fence},
                                  {"new", &r.new_fence}}) {
    const std::optional<std::int64_t> v = int64_of(text(name));
    if (v) {
      *out = *v;
    } else {
      bad += std::string(bad.empty() ? "" : ", ") + "'" + name + "'";
    }
  }
  if (!bad.empty()) {
    r.at_us = r.old_fence = r.new_fence = 0;
    r.evicted = "(unreadable record " + id + ": " + bad + " not a 64-bit integer)";
  }
  return r;
}

void describe_batch(Node& node, const std::vector<std::string>& keys, std::string_view prefix, bool foreign_too,
                    std::vector<LeaseInfo>& out) {
  std::vector<std::string> script_keys;
  for (const std::string& key : keys) {
    const LockKeys k = LockKeys::listed(prefix, std::string_view(key).substr(prefix.size()));
    script_keys.insert(script_keys.end(), {k.lease, k.queue, k.queue_info});
  }
  const Reply r = node.eval(node.scripts().describe, script_keys, {}, Repeat::kSafe);
  const DescribeReply reply = DescribeReply::read(r, keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const Described& e = reply.entries[i];
    if (e.kind == Described::kLease || e.kind == Described::kUnreadable || (e.kind == Described::kForeign && foreign_too)) {
      out.push_back(lease_info(e, keys[i].substr(prefix.size()), reply.now_us));
    }
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
    const ScanPage scanned = ScanPage::read(page);
    cursor = scanned.cursor.empty() ? "0" : std::string(scanned.cursor);
    for (const std::string_view key : scanned.keys) {
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
    std::string_view last_id;
    for (std::size_t i = 0; i < page.size(); ++i) {
      const StreamEntry entry = StreamEntry::read(page[i]);
      last_id = entry.id;
      if (out.size() >= limit) continue;
      ForceReleaseRecord r = record_of(entry);
      if (!name || r.name == *name) out.push_back(std::move(r));
    }
    if (page.size() < 1000 || last_id.empty()) break;
    end = "(" + std::string(last_id);
  }
  return out;
}

}  // namespace dblock::redis

namespace dblock::redis {

void check_permissions(Node& node, std::string_view prefix, SteadyClock::time_point deadline) {
  static const Script probe("acl-check", std::string(scripts::kPermissions));
  const LockKeys k(prefix, "x");
  const std::string latch = k.latch(std::string(40, '0')), audit = audit_key(prefix), channel = release_channel(prefix);
  node.eval(probe, {},
            {k.lease, k.fence, k.queue, k.queue_info, latch, audit, channel, node.options().listen ? "1" : "0",
             node.options().database != 0 ? "1" : "0"},
            Repeat::kSafe, deadline);
}

}  // namespace dblock::redis
