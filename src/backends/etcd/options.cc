// dblock/etcd/etcd.h: options from an etcd:// URL, and the factory.
#include "dblock/errors.h"
#include "dblock/etcd/etcd.h"
#include "dblock/service/url_params.h"
#include "dblock/url.h"
#include "error_map.h"
#include "keys.h"
#include "mutex_layout.h"
#include "single_key_layout.h"

namespace dblock::etcd {

namespace {

void validate(const Options& options) {
  validate_prefix(options.prefix);
  if (options.endpoints.empty()) throw UsageError("etcd: no endpoint", kServiceName);
  for (const Options::Endpoint& e : options.endpoints) {
    if (e.host.empty()) throw UsageError("etcd: an endpoint without a host", kServiceName);
    if (e.port < 1 || e.port > 65535) throw UsageError("etcd: port out of range", kServiceName);
  }
  if (options.session_ttl <= std::chrono::seconds::zero()) throw UsageError("etcd: session_ttl must be positive", kServiceName);
  if (options.connect_timeout <= std::chrono::milliseconds::zero()) {
    throw UsageError("etcd: connect_timeout must be positive", kServiceName);
  }
  if (options.user.empty() != options.password.empty()) {
    throw UsageError("etcd: give both a user and a password (etcd auth), or neither", kServiceName);
  }
  const Options::Tls& tls = options.tls;
  if (tls.cert_file.empty() != tls.key_file.empty()) {
    throw UsageError("etcd: give both a client certificate (cert) and its key (key), or neither", kServiceName);
  }
  if (!tls.enabled && !(tls.ca_file.empty() && tls.cert_file.empty())) {
    throw UsageError("etcd: certificate files given without TLS (tls.enabled)", kServiceName);
  }
}

// cacert=, cert=, key= and tls= of the URL: any of the files turns TLS on.
Options::Tls tls_of(service::UrlParams& params) {
  Options::Tls tls;
  tls.ca_file = params.text("cacert").value_or("");
  tls.cert_file = params.text("cert").value_or("");
  tls.key_file = params.text("key").value_or("");
  const bool files = !(tls.ca_file.empty() && tls.cert_file.empty() && tls.key_file.empty());
  const std::optional<bool> asked = params.boolean("tls");
  if (asked == false && files) throw UsageError("etcd: tls=0 with certificate files (cacert, cert, key)", kServiceName);
  tls.enabled = asked.value_or(files);
  return tls;
}

}  // namespace

std::unique_ptr<LeaseService> make_service(const Options& options) {
  validate(options);
  if (options.layout == Options::Layout::kPythonEtcd3) return std::make_unique<SingleKeyLayout>(options);
  return std::make_unique<MutexLayout>(options);
}

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  Options options;
  service::UrlParams params(url, kServiceName);
  if (std::optional<std::string> layout = params.text("layout")) {
    if (*layout == "python-etcd3") {
      options.layout = Options::Layout::kPythonEtcd3;
    } else if (*layout != "etcd-mutex") {
      throw UsageError("etcd: layout='" + *layout + "' is none of etcd-mutex, python-etcd3", kServiceName);
    }
  }
  const std::string default_prefix = options.layout == Options::Layout::kPythonEtcd3 ? "/locks/" : table_prefix;
  // The URL's path names the namespace as a directory of keys ("locks" is "locks/"); prefix= is
  // the key prefix itself ("" for etcdctl's own namespace).
  if (std::optional<std::string> prefix = params.text("prefix")) {
    if (!url.path.empty()) throw UsageError("etcd: give the prefix as the URL's path or as prefix=, not both", kServiceName);
    options.prefix = *prefix;
  } else {
    options.prefix = url.path.empty() ? default_prefix : url.path + (url.path.back() == '/' ? "" : "/");
  }
  if (auto s = params.integer("connect_timeout", 1, 3600)) options.connect_timeout = std::chrono::seconds(*s);
  if (auto s = params.integer("session_ttl", 1, 3600)) options.session_ttl = std::chrono::seconds(*s);
  options.tls = tls_of(params);
  params.finish();
  options.user = url.user;
  options.password = url.password;
  options.endpoints.clear();
  for (const Url::Host& host : url.hosts) {
    options.endpoints.push_back(Options::Endpoint{host.host, host.port != 0 ? host.port : 2379});
  }
  return make_service(options);
}

}  // namespace dblock::etcd
