// dblock/redis/redis.h: options from a redis:// URL, and the factory.
#include <algorithm>

#include "dblock/errors.h"
#include "dblock/service/url_params.h"
#include "dblock/url.h"
#include "redis_service.h"
#include "redlock_service.h"

namespace dblock::redis {

namespace {

// The characters a non-empty prefix must end in. Without one, two namespaces could share a key:
// prefix "app_a" with name "bc" is prefix "app_ab" with name "c". Ending in one of these, two
// prefixes share keys only when one extends the other ("app:" and "app:jobs:"), a nesting README
// warns of. Refused rather than completed: adding the separator would move every lock of a
// running fleet, and a rolling upgrade would then have two holders of each name.
constexpr std::string_view kSeparators = ":_-./";

void validate_prefix(std::string_view prefix) {
  if (prefix.size() > 128) throw UsageError("redis: the prefix is longer than 128 bytes", kServiceName);
  for (char c : prefix) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) throw UsageError("redis: the prefix contains a control character", kServiceName);
    if (c == '{' || c == '}') {
      throw UsageError("redis: the prefix contains '{' or '}' (they would change the key's cluster slot)",
                       kServiceName);
    }
  }
  if (!prefix.empty() && kSeparators.find(prefix.back()) == std::string_view::npos) {
    throw UsageError("redis: the prefix '" + std::string(prefix) +
                         "' does not end in a separator (one of : _ - . /): without one, its keys could be another "
                         "prefix's ('app_a' + 'bc' is 'app_ab' + 'c'); end it in one, e.g. prefix=" +
                         std::string(prefix) +
                         ": (a new prefix moves every lock: stop every client of the old one first)",
                     kServiceName);
  }
}

int database_of(const std::string& path) {
  if (path.empty()) return 0;
  const bool digits = path.size() <= 5 && std::all_of(path.begin(), path.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits || std::stoi(path) > 65535) {
    throw UsageError("redis: the URL's path must be a database number (0-65535), as in redis://host:6379/0", kServiceName);
  }
  return std::stoi(path);
}

void validate(const Options& options) {
  validate_prefix(options.prefix);
  if (options.host.empty()) throw UsageError("redis: no host", kServiceName);
  if (options.port < 1 || options.port > 65535) throw UsageError("redis: port out of range", kServiceName);
  if (options.database < 0 || options.database > 65535) throw UsageError("redis: database out of range", kServiceName);
  if (options.connect_timeout <= std::chrono::milliseconds::zero()) {
    throw UsageError("redis: connect_timeout must be positive", kServiceName);
  }
}

// The options a redis:// or redlock:// URL gives every node (all but the host and port).
Options common_options(const Url& url, const std::string& table_prefix) {
  Options options;
  service::UrlParams params(url, kServiceName);
  options.prefix = params.text("prefix").value_or(table_prefix);
  if (auto s = params.integer("connect_timeout", 1, 3600)) options.connect_timeout = std::chrono::seconds(*s);
  options.listen = params.boolean("listen").value_or(true);
  params.finish();
  options.user = url.user;
  options.password = url.password;
  options.database = database_of(url.path);
  return options;
}

Options at(Options options, const Url::Host& host) {
  options.host = host.host;
  if (host.port != 0) options.port = host.port;
  return options;
}

}  // namespace

std::unique_ptr<LeaseService> make_service(const Options& options) {
  validate(options);
  return std::make_unique<RedisService>(options);
}

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  const Options options = common_options(url, table_prefix);
  if (url.hosts.size() != 1) {
    throw UsageError("redis: a redis:// URL names exactly one host (several independent masters: redlock://)",
                     kServiceName);
  }
  return make_service(at(options, url.hosts[0]));
}

std::unique_ptr<LeaseService> make_redlock_service(const std::vector<Options>& nodes) {
  if (nodes.size() != 3 && nodes.size() != 5) {
    throw UsageError("redlock: needs 3 or 5 independent masters, not " + std::to_string(nodes.size()), kServiceName);
  }
  for (const Options& node : nodes) validate(node);
  return std::make_unique<RedlockService>(nodes);
}

std::unique_ptr<LeaseService> make_redlock_service(const Url& url, const std::string& table_prefix) {
  const Options options = common_options(url, table_prefix);
  std::vector<Options> nodes;
  for (const Url::Host& host : url.hosts) nodes.push_back(at(options, host));
  return make_redlock_service(nodes);
}

}  // namespace dblock::redis
