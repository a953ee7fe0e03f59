// The one rule every service applies to its URL's query parameters: a parameter the service does
// not know, a malformed value, or a parameter given twice is a UsageError that names the parameter
// (never its value: it may be a secret).
//
//   UrlParams params(url, "mysql");
//   options.socket = params.text("socket").value_or("");
//   options.beacon = params.boolean("beacon").value_or(true);
//   params.finish();  // throws for whatever was not asked for
#ifndef DBLOCK_SERVICE_URL_PARAMS_H_
#define DBLOCK_SERVICE_URL_PARAMS_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/url.h"

namespace dblock::service {

class UrlParams {
 public:
  // Throws UsageError when a parameter is given twice or has an empty name.
  UrlParams(const Url& url, std::string_view service);

  // Each takes the parameter (nullopt when absent). Throws UsageError naming it when malformed.
  std::optional<std::string> text(std::string_view key);
  // 1/0, true/false, on/off, yes/no.
  std::optional<bool> boolean(std::string_view key);
  // A decimal integer in [min, max].
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t min, std::int64_t max);

  // Takes every remaining parameter that `accept` says yes to, in URL order.
  std::vector<std::pair<std::string, std::string>> take_if(const std::function<bool(std::string_view key)>& accept);

  // Throws UsageError naming the first parameter nobody took, and listing the known ones.
  void finish() const;

 private:
  struct Param {
    std::string key;
    std::string value;
    bool taken = false;
  };
  Param* find(std::string_view key);
  [[noreturn]] void malformed(std::string_view key, std::string_view expected) const;

  std::string service_;
  std::vector<Param> params_;
  std::vector<std::string> known_;  // every key asked for, for the error message
};

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_URL_PARAMS_H_
