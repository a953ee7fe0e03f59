// Validation and quoting of identifiers from configuration (dblock/service/identifiers.h).
#include "dblock/service/identifiers.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace dblock::service {

void validate_table_prefix(std::string_view prefix) {
  bool ok = !prefix.empty() && prefix.size() <= 40 &&
            (prefix[0] == '_' || (prefix[0] >= 'a' && prefix[0] <= 'z'));
  for (char c : prefix) {
    ok = ok && (c == '_' || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'));
  }
  if (!ok) {
    throw UsageError("table prefix '" + std::string(prefix.substr(0, 64)) +
                     "' is invalid: use 1-40 characters of [a-z0-9_], not starting with a digit");
  }
}

void validate_identifier(std::string_view identifier, std::string_view what) {
  auto valid_part = [](std::string_view part) {
    if (part.empty() || part.size() > 63) return false;
    if (!(part[0] == '_' || std::isalpha(static_cast<unsigned char>(part[0])))) return false;
    for (char c : part) {
      if (!(c == '_' || std::isalnum(static_cast<unsigned char>(c)))) return false;
    }
    return true;
  };
  std::size_t dot = identifier.find('.');
  bool ok = dot == std::string_view::npos
                ? valid_part(identifier)
                : valid_part(identifier.substr(0, dot)) && valid_part(identifier.substr(dot + 1));
  if (!ok) {
    throw UsageError(std::string(what) + " '" + std::string(identifier.substr(0, 64)) +
                     "' is not a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, optionally schema.name)");
  }
}

std::string quote_identifier(std::string_view identifier) {
  std::string out = "\"";
  for (char c : identifier) {
    if (c == '.') {
      out += "\".\"";
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

namespace {
std::string described(std::int64_t permits) {
  return permits == 0 ? "shared leases without permits" : std::to_string(permits) + " permits";
}
}  // namespace

UsageError permits_mismatch(std::string_view service, std::string_view name, std::int64_t held, std::int64_t asked) {
  return UsageError(std::string(service) + ": lock '" + std::string(name) + "' is held as " + described(held) +
                        "; this acquire asked for " + described(asked) +
                        " (every holder of a semaphore must ask for the same number of permits)",
                    std::string(service));
}

std::string joined_holders(std::vector<std::string> holders) {
  std::sort(holders.begin(), holders.end());
  std::string out;
  for (const std::string& h : holders) out += (out.empty() ? "" : ",") + h;
  return out;
}

}  // namespace dblock::service
