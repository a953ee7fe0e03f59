// dblock/zookeeper/zookeeper.h: options from a zookeeper:// URL, and the factory.
#include <algorithm>

#include "dblock/errors.h"
#include "dblock/schemes.h"
#include "dblock/service/url_params.h"
#include "dblock/url.h"
#include "paths.h"
#include "zookeeper_service.h"

namespace dblock::zookeeper {

namespace {

constexpr std::chrono::milliseconds kShortestSession{1'000};
constexpr std::chrono::milliseconds kLongestSession{60'000};

void validate(const Options& options) {
  if (options.hosts.empty()) throw UsageError("zookeeper: no host", kServiceName);
  if (options.session_timeout < kShortestSession || options.session_timeout > kLongestSession) {
    throw UsageError("zookeeper: session_timeout must be 1000 to 60000 milliseconds", kServiceName);
  }
  if (options.connect_timeout <= std::chrono::milliseconds::zero()) {
    throw UsageError("zookeeper: connect_timeout must be positive", kServiceName);
  }
  if (!options.chroot.empty()) validate_path(options.chroot, "chroot");
  if (!options.base.empty()) {
    validate_path(options.base, "base");
    if (options.base == "/") throw UsageError("zookeeper: base must name a node below the root, not \"/\"", kServiceName);
  }
  const std::size_t colon = options.digest.find(':');
  if (!options.digest.empty() && (colon == 0 || colon == std::string::npos || colon + 1 == options.digest.size())) {
    throw UsageError("zookeeper: digest credentials must be user:password, both non-empty", kServiceName);
  }
}

// The digest identity of the URL's user and password ("" for none). ZooKeeper's digest scheme
// reads the user up to the first ':', so a user may not contain one; a password may.
std::string digest_of(const Url& url) {
  if (url.user.empty() && url.password.empty()) return "";
  if (url.user.empty() || url.password.empty()) {
    throw UsageError("zookeeper: digest authentication needs both a user and a password in the URL", kServiceName);
  }
  if (url.user.find(':') != std::string::npos) {
    throw UsageError("zookeeper: the URL's user must not contain ':' (digest authentication)", kServiceName);
  }
  return url.user + ":" + url.password;
}

// chroot + base, the absolute path the lock containers live under.
std::string root_of(const Options& options, const std::string& table_prefix) {
  const std::string chroot = options.chroot == "/" ? std::string() : options.chroot;
  const std::string root = chroot + base_path(options, table_prefix);
  if (root == "/zookeeper" || root.rfind("/zookeeper/", 0) == 0) {
    throw UsageError("zookeeper: base (with the chroot) is under /zookeeper, which the server reserves", kServiceName);
  }
  return root;
}

Layout layout_of(const std::string& text) {
  if (text == "rw") return Layout::kReadWrite;
  if (text == "curator-mutex") return Layout::kCuratorMutex;
  throw UsageError("zookeeper: parameter 'layout' must be rw or curator-mutex", kServiceName);
}

std::string connect_string(const Url& url) {
  std::string out;
  for (const Url::Host& host : url.hosts) {
    if (!out.empty()) out += ',';
    out += host.host + ":" + std::to_string(host.port != 0 ? host.port : 2181);
  }
  return out;
}

}  // namespace

std::unique_ptr<LeaseService> make_service(const Options& options, const std::string& table_prefix) {
  validate(options);
  return std::make_unique<ZooKeeperService>(options, root_of(options, table_prefix));
}

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  return make_service(url, ServiceContext{table_prefix, Options{}.session_timeout});
}

std::unique_ptr<LeaseService> make_service(const Url& url, const ServiceContext& context) {
  Options options;
  service::UrlParams params(url, kServiceName);
  // A dead holder's node lives as long as its session: as long as a lease of the default TTL,
  // unless the URL says otherwise (the server clamps it to its own bounds in turn).
  options.session_timeout = std::clamp(context.default_ttl, kShortestSession, kLongestSession);
  if (auto ms = params.integer("session_timeout", kShortestSession.count(), kLongestSession.count())) {
    options.session_timeout = std::chrono::milliseconds(*ms);
  }
  if (auto s = params.integer("connect_timeout", 1, 3600)) options.connect_timeout = std::chrono::seconds(*s);
  if (auto base = params.text("base")) {
    if (base->empty()) throw UsageError("zookeeper: parameter 'base' is empty", kServiceName);
    options.base = *base;
  }
  if (auto layout = params.text("layout")) options.layout = layout_of(*layout);
  options.force_foreign = params.boolean("force_foreign").value_or(false);
  params.finish();
  options.digest = digest_of(url);
  options.hosts = connect_string(url);
  if (!url.path.empty()) options.chroot = "/" + url.path;
  return make_service(options, context.table_prefix);
}

}  // namespace dblock::zookeeper
