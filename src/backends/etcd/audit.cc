#include "audit.h"

#include <cstdio>
#include <sstream>
#include <vector>

namespace dblock::etcd {

namespace {

constexpr std::string_view kVersion = "dblock-force-release-1";

}  // namespace

std::string audit_prefix(std::string_view prefix) { return std::string(prefix) + "\x7f" "audit/"; }

bool is_audit_key(std::string_view key, std::string_view prefix) {
  const std::string start = audit_prefix(prefix);
  return key.substr(0, start.size()) == start;
}

std::string audit_key(std::string_view prefix, std::string_view name, std::int64_t old_fence) {
  char fence[24];
  std::snprintf(fence, sizeof(fence), "/%016llx", static_cast<unsigned long long>(old_fence));
  return audit_prefix(prefix) + std::string(name) + fence;
}

std::string encode_record(const ForceReleaseRecord& r) {
  std::ostringstream out;
  out << kVersion << '\n'
      << r.name << '\n'
      << r.at_us << '\n'
      << r.by << '\n'
      << r.by_account << '\n'
      << r.evicted << '\n'
      << r.old_fence;
  if (r.mode == LockMode::kShared) out << "\nshared";  // an eighth line only for shared holders
  return out.str();
}

std::optional<ForceReleaseRecord> decode_record(const mvccpb::KeyValue& kv) {
  std::vector<std::string> fields;
  std::istringstream in(kv.value());
  for (std::string line; std::getline(in, line);) fields.push_back(line);
  if (fields.size() < 7 || fields.size() > 8 || fields[0] != kVersion) return std::nullopt;
  if (fields.size() == 8 && fields[7] != "shared") return std::nullopt;
  ForceReleaseRecord r;
  try {
    r.name = fields[1];
    r.at_us = std::stoll(fields[2]);
    r.by = fields[3];
    r.by_account = fields[4];
    r.evicted = fields[5];
    r.old_fence = std::stoll(fields[6]);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  r.mode = fields.size() == 8 ? LockMode::kShared : LockMode::kExclusive;
  r.new_fence = kv.create_revision();
  return r;
}

}  // namespace dblock::etcd
