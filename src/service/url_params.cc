#include "dblock/service/url_params.h"

#include <algorithm>

#include "dblock/errors.h"

namespace dblock::service {

namespace {
// A key as it may appear in a message: at most 64 bytes.
std::string shown(std::string_view key) { return std::string(key.substr(0, 64)); }
}  // namespace

UrlParams::UrlParams(const Url& url, std::string_view service) : service_(service) {
  for (const auto& [key, value] : url.params) {
    if (key.empty()) throw UsageError(service_ + " URL: a query parameter has no name", service_);
    if (find(key) != nullptr) throw UsageError(service_ + " URL: parameter '" + shown(key) + "' given twice", service_);
    params_.push_back(Param{key, value, false});
  }
}

UrlParams::Param* UrlParams::find(std::string_view key) {
  auto it = std::find_if(params_.begin(), params_.end(), [&](const Param& p) { return p.key == key; });
  return it == params_.end() ? nullptr : &*it;
}

void UrlParams::malformed(std::string_view key, std::string_view expected) const {
  throw UsageError(service_ + " URL: parameter '" + shown(key) + "' must be " + std::string(expected), service_);
}

std::optional<std::string> UrlParams::text(std::string_view key) {
  known_.emplace_back(key);
  Param* p = find(key);
  if (p == nullptr) return std::nullopt;
  p->taken = true;
  return p->value;
}

std::optional<bool> UrlParams::boolean(std::string_view key) {
  std::optional<std::string> v = text(key);
  if (!v) return std::nullopt;
  if (*v == "1" || *v == "true" || *v == "on" || *v == "yes") return true;
  if (*v == "0" || *v == "false" || *v == "off" || *v == "no") return false;
  malformed(key, "0 or 1 (or true/false, on/off, yes/no)");
}

std::optional<std::int64_t> UrlParams::integer(std::string_view key, std::int64_t min, std::int64_t max) {
  std::optional<std::string> v = text(key);
  if (!v) return std::nullopt;
  const bool digits = !v->empty() && v->size() <= 18 &&
                      std::all_of(v->begin(), v->end(), [](char c) { return c >= '0' && c <= '9'; });
  const std::int64_t n = digits ? std::stoll(*v) : -1;
  if (!digits || n < min || n > max) {
    malformed(key, "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]");
  }
  return n;
}

std::vector<std::pair<std::string, std::string>> UrlParams::take_if(
    const std::function<bool(std::string_view key)>& accept) {
  std::vector<std::pair<std::string, std::string>> out;
  for (Param& p : params_) {
    if (p.taken || !accept(p.key)) continue;
    p.taken = true;
    out.emplace_back(p.key, p.value);
  }
  return out;
}

void UrlParams::finish() const {
  for (const Param& p : params_) {
    if (p.taken) continue;
    std::string known;
    for (const std::string& k : known_) known += (known.empty() ? "" : ", ") + k;
    throw UsageError(service_ + " URL: unknown parameter '" + shown(p.key) + "'" +
                         (known.empty() ? std::string(" (it takes none)") : " (known: " + known + ")"),
                     service_);
  }
}

}  // namespace dblock::service
