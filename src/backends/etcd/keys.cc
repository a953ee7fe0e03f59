#include "keys.h"

#include <cstdio>

#include "dblock/errors.h"
#include "error_map.h"

namespace dblock::etcd {

std::string lock_prefix(std::string_view prefix, std::string_view name) {
  std::string out(prefix);
  out += name;
  out += '/';
  return out;
}

std::string range_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    if (static_cast<unsigned char>(end.back()) < 0xff) {
      end.back() = static_cast<char>(static_cast<unsigned char>(end.back()) + 1);
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');
}

std::string contender_key(std::string_view lock_prefix, std::int64_t lease) {
  char hex[24];
  std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(lease));
  return std::string(lock_prefix) + hex;
}

std::optional<std::string> lock_name_of(std::string_view key, std::string_view prefix) {
  if (key.size() <= prefix.size() || key.substr(0, prefix.size()) != prefix) return std::nullopt;
  const std::string_view rest = key.substr(prefix.size());
  const std::size_t slash = rest.rfind('/');
  // concurrency.Mutex's "<lease hex>", or dblock's "<lease hex>-<slot>".
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size() || slash + 34 < rest.size()) {
    return std::nullopt;
  }
  for (char c : rest.substr(slash + 1)) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return std::nullopt;
  }
  return std::string(rest.substr(0, slash));
}

void validate_prefix(std::string_view prefix) {
  if (prefix.size() > 128) throw UsageError("etcd: the prefix is longer than 128 bytes", kServiceName);
  for (char c : prefix) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) throw UsageError("etcd: the prefix contains a control character", kServiceName);
  }
  constexpr std::string_view kSeparators = ":_-./";
  if (!prefix.empty() && kSeparators.find(prefix.back()) == std::string_view::npos) {
    throw UsageError("etcd: the prefix '" + std::string(prefix) +
                         "' does not end in a separator (one of : _ - . /): without one, its locks could be another "
                         "prefix's ('app_a' + 'bc' is 'app_ab' + 'c')",
                     kServiceName);
  }
}

}  // namespace dblock::etcd
