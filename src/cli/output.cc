#include "output.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <ctime>

#include <nlohmann/json.hpp>

#include "args.h"

namespace dblock::cli {
namespace {

// Length of the valid UTF-8 sequence starting at text[i], or 0 if it is not valid (overlong
// forms, surrogates and code points above U+10FFFF are invalid).
std::size_t utf8_sequence_length(std::string_view text, std::size_t i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char b0 = byte(i);
  std::size_t len = 0;
  std::uint32_t cp = 0;
  if (b0 < 0x80) {
    return 1;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    return 0;
  }
  if (i + len > text.size()) {
    return 0;
  }
  for (std::size_t k = 1; k < len; ++k) {
    unsigned char b = byte(i + k);
    if ((b & 0xC0) != 0x80) {
      return 0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  static constexpr std::array<std::uint32_t, 5> kMin = {0, 0, 0x80, 0x800, 0x10000};
  if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
    return 0;
  }
  return len;
}

std::string iso_utc(std::int64_t us) {
  std::time_t seconds = static_cast<std::time_t>(us / 1'000'000);
  std::tm tm{};
  if (gmtime_r(&seconds, &tm) == nullptr) {
    return "?";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>((us % 1'000'000) / 1'000));
  return buf;
}

// Terminal columns of `text`, counting one per UTF-8 code point (good enough for names).
std::size_t display_width(std::string_view text) {
  return static_cast<std::size_t>(
      std::count_if(text.begin(), text.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// A lease a session bounds (ZooKeeper's nodes) has no expiry time to show.
constexpr const char* kWithSession = "with its session";

std::string expires_in_text(const LeaseInfo& info) {
  if (info.bound == LeaseBound::kSession) return kWithSession;
  return format_duration(std::chrono::milliseconds(info.expires_in_us / 1'000));
}

}  // namespace

std::string expiry_phrase(const LeaseInfo& info) {
  if (info.bound == LeaseBound::kSession) return "ends with its holder's session";
  return "expires in " + expires_in_text(info);
}

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  auto hex = [&](const char* format, unsigned value) {
    char buf[16];
    std::snprintf(buf, sizeof buf, format, value);
    out += buf;
  };
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const std::size_t len = utf8_sequence_length(text, i);
    if (len == 0) {
      hex("\\x%02x", c);  // not UTF-8
      ++i;
      continue;
    }
    std::uint32_t cp = c;
    if (len == 2) cp = ((c & 0x1Fu) << 6) | (static_cast<unsigned char>(text[i + 1]) & 0x3Fu);
    if (len == 3) {
      cp = ((c & 0x0Fu) << 12) | ((static_cast<unsigned char>(text[i + 1]) & 0x3Fu) << 6) |
           (static_cast<unsigned char>(text[i + 2]) & 0x3Fu);
    }
    const bool control = cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F);
    const bool bidi = cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x202A && cp <= 0x202E) ||
                      (cp >= 0x2066 && cp <= 0x2069);
    if (control || bidi) {
      hex(cp < 0x80 ? "\\x%02x" : "\\u%04x", cp);
    } else if (c == '\\') {
      out += "\\\\";
    } else {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

namespace {

// One line of JSON: keys in the order given, invalid UTF-8 as U+FFFD (names and holders are
// whatever the service stored).
std::string dumped(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

const char* mode_name(LockMode mode) noexcept {
  switch (mode) {
    case LockMode::kExclusive: return "exclusive";
    case LockMode::kShared: return "shared";
  }
  return "unknown";
}

namespace {

// "2", or "2/3" for permits held of a semaphore's N.
std::string holders_text(const LeaseInfo& info) {
  const std::string held = std::to_string(info.holders);
  return info.permits > 0 ? held + "/" + std::to_string(info.permits) : held;
}

}  // namespace

std::string lease_json(const LeaseInfo& info) {
  nlohmann::ordered_json object = {{"name", info.name},
                 {"mode", mode_name(info.mode)},
                 {"holder", info.holder},
                 {"fence", info.fence},
                 {"acquired_at_us", info.acquired_at_us},
                 {"expires_at_us", info.expires_at_us},
                 {"expires_in_us", info.expires_in_us},
                 {"renewals", info.renewals},
                 {"holders", info.holders},
                 {"permits", info.permits}};
  if (info.waiters >= 0) object["waiters"] = info.waiters;  // unknown: left out
  object["bound"] = info.bound == LeaseBound::kSession ? "session" : "ttl";  // session: no expiry times
  return dumped(object);
}

namespace {

// A JSON array of `items` rendered by `one`, one per line, with a trailing newline.
template <typename T, typename F>
std::string json_array(const std::vector<T>& items, F one) {
  if (items.empty()) return "[]\n";
  std::string out = "[\n";
  for (std::size_t i = 0; i < items.size(); ++i) {
    out += "  " + one(items[i]);
    out += i + 1 < items.size() ? ",\n" : "\n";
  }
  return out + "]\n";
}

// `rows` (the first one the header) as left-aligned columns two spaces apart.
template <std::size_t N>
std::string aligned(const std::vector<std::array<std::string, N>>& rows) {
  std::array<std::size_t, N> width{};
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < N; ++c) width[c] = std::max(width[c], display_width(row[c]));
  }
  std::string out;
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t c = 0; c < N; ++c) {
      line += row[c];
      if (c + 1 < N) line.append(width[c] - display_width(row[c]) + 2, ' ');
    }
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string leases_json(const std::vector<LeaseInfo>& infos) { return json_array(infos, lease_json); }

std::string leases_table(const std::vector<LeaseInfo>& infos) {
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"NAME", "MODE", "HOLDER", "FENCE", "EXPIRES_IN", "HOLDERS"});
  for (const LeaseInfo& info : infos) {
    rows.push_back({terminal_text(info.name), mode_name(info.mode), terminal_text(info.holder), std::to_string(info.fence),
                    expires_in_text(info), holders_text(info)});
  }
  return aligned(rows);
}

std::string force_release_json(const ForceReleaseRecord& record) {
  return dumped({{"name", record.name},
                 {"at_us", record.at_us},
                 {"by", record.by},
                 {"by_account", record.by_account},
                 {"evicted", record.evicted},
                 {"mode", mode_name(record.mode)},
                 {"old_fence", record.old_fence},
                 {"new_fence", record.new_fence}});
}

std::string leader_json(std::string_view name, const Leader& leader) {
  return dumped({{"name", std::string(name)}, {"leader", leader.holder}, {"term", leader.term}});
}

std::string force_releases_json(const std::vector<ForceReleaseRecord>& records) {
  return json_array(records, force_release_json);
}

std::string force_releases_table(const std::vector<ForceReleaseRecord>& records) {
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"AT", "NAME", "BY", "EVICTED", "MODE", "FENCE"});
  for (const ForceReleaseRecord& r : records) {
    const std::string by = r.by_account.empty() ? r.by : r.by + " (" + r.by_account + ")";
    rows.push_back({iso_utc(r.at_us), terminal_text(r.name), terminal_text(by), terminal_text(r.evicted),
                    mode_name(r.mode), std::to_string(r.old_fence) + "->" + std::to_string(r.new_fence)});
  }
  return aligned(rows);
}

std::string force_release_text(const ForceReleaseRecord& r) {
  std::string by = terminal_text(r.by);
  if (!r.by_account.empty()) by += " (account " + terminal_text(r.by_account) + ")";
  return "force-released: " + iso_utc(r.at_us) + " by " + by + ", evicted " + terminal_text(r.evicted) + " (" +
         mode_name(r.mode) + ", fence " + std::to_string(r.old_fence) + " -> " + std::to_string(r.new_fence) + ")\n";
}

std::string lease_text(const LeaseInfo& info) {
  std::string out;
  out += "name:        " + terminal_text(info.name) + "\n";
  out += "mode:        " + std::string(mode_name(info.mode)) + "\n";
  out += "holder:      " + terminal_text(info.holder) + "\n";
  out += "fence:       " + std::to_string(info.fence) + "\n";
  // A time of 0: the service does not know it (another client's lock on Redis).
  const auto when = [](std::int64_t us) { return us == 0 ? std::string("unknown") : iso_utc(us) + " (backend clock)"; };
  out += "acquired at: " + when(info.acquired_at_us) + "\n";
  out += "expires at:  " +
         (info.bound == LeaseBound::kSession ? std::string("when the holder's session ends") : when(info.expires_at_us)) +
         "\n";
  out += "expires in:  " + expires_in_text(info) + "\n";
  out += "renewals:    " + std::to_string(info.renewals) + "\n";
  out += "holders:     " + holders_text(info) + "\n";
  return out;
}

}  // namespace dblock::cli
