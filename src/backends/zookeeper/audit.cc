#include "audit.h"

#include <charconv>
#include <vector>

namespace dblock::zookeeper {

namespace {

constexpr std::string_view kVersion = "dblock-audit-1\n";

void field(std::string& out, std::string_view value) {
  out += std::to_string(value.size());
  out += ':';
  out += value;
}

// The next field of `data` from `at`; nullopt when malformed.
std::optional<std::string_view> next_field(std::string_view data, std::size_t& at) {
  const std::size_t colon = data.find(':', at);
  if (colon == std::string_view::npos) return std::nullopt;
  std::size_t length = 0;
  const auto [end, error] = std::from_chars(data.data() + at, data.data() + colon, length);
  if (error != std::errc() || end != data.data() + colon || length > data.size() - colon - 1) return std::nullopt;
  at = colon + 1 + length;
  return data.substr(colon + 1, length);
}

}  // namespace

std::string encode_record(const ForceReleaseRecord& record) {
  std::string out(kVersion);
  field(out, record.name);
  field(out, record.by);
  field(out, record.evicted);
  field(out, record.mode == LockMode::kShared ? "shared" : "exclusive");
  field(out, std::to_string(record.old_fence));
  return out;
}

std::optional<ForceReleaseRecord> decode_record(std::string_view data) {
  if (data.substr(0, kVersion.size()) != kVersion) return std::nullopt;
  std::size_t at = kVersion.size();
  std::vector<std::string_view> fields;
  for (int i = 0; i < 5; ++i) {
    const auto f = next_field(data, at);
    if (!f) return std::nullopt;
    fields.push_back(*f);
  }
  ForceReleaseRecord record;
  record.name = std::string(fields[0]);
  record.by = std::string(fields[1]);
  record.evicted = std::string(fields[2]);
  record.mode = fields[3] == "shared" ? LockMode::kShared : LockMode::kExclusive;
  const auto [end, error] = std::from_chars(fields[4].data(), fields[4].data() + fields[4].size(), record.old_fence);
  if (error != std::errc() || end != fields[4].data() + fields[4].size()) return std::nullopt;
  return record;
}

}  // namespace dblock::zookeeper
