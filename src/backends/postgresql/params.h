// Parameter plumbing shared by the PostgreSQL backend and its interop functions. Internal.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_PARAMS_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_PARAMS_H_

#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/sql/features.h"

namespace dblock::postgresql {

inline std::string uuid_text(const OwnerSecret& secret) {
  std::string hex = secret.hex();
  return hex.substr(0, 8) + "-" + hex.substr(8, 4) + "-" + hex.substr(12, 4) + "-" + hex.substr(16, 4) + "-" +
         hex.substr(20);
}

// Statement parameters in text form; nullopt is SQL NULL.
class Params {
 public:
  Params& add(std::string_view text) {
    values_.emplace_back(std::string(text));
    return *this;
  }
  Params& add(std::int64_t v) {
    values_.emplace_back(std::to_string(v));
    return *this;
  }
  Params& add(const OwnerSecret& secret) {
    values_.emplace_back(uuid_text(secret));
    return *this;
  }
  Params& add_null() {
    values_.emplace_back(std::nullopt);
    return *this;
  }
  Params& add_value(const Value& value) {
    if (std::holds_alternative<std::monostate>(value)) return add_null();
    if (auto* i = std::get_if<std::int64_t>(&value)) return add(*i);
    if (auto* d = std::get_if<double>(&value)) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", *d);
      return add(std::string_view(buf));
    }
    return add(std::string_view(std::get<std::string>(value)));
  }
  std::vector<const char*> pointers() const {
    std::vector<const char*> out;
    for (const auto& v : values_) out.push_back(v ? v->c_str() : nullptr);
    return out;
  }

 private:
  std::vector<std::optional<std::string>> values_;
};


// Turns the portable `?` placeholders of Transaction::execute into $1, $2, ... outside quotes.
inline std::string number_placeholders(std::string_view sql) {
  std::string out;
  int n = 0;
  char quote = 0;
  for (char c : sql) {
    if (quote) {
      if (c == quote) quote = 0;
      out += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

// The lock_timeout setting for a wait: "<n>ms", or "0" (no limit) for waits of a year or more
// (kWaitForever).
inline std::string lock_timeout_text(std::chrono::milliseconds wait) {
  return wait >= std::chrono::hours(24 * 365) ? std::string("0") : std::to_string(wait.count()) + "ms";
}

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_PARAMS_H_
