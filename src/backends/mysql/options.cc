// dblock/mysql/mysql.h: options from a mysql:// or mariadb:// URL, and the factory.
#include "dblock/errors.h"
#include "dblock/service/url_params.h"
#include "dblock/url.h"
#include "mysql_service.h"

namespace dblock::mysql {

std::unique_ptr<LeaseService> make_service(const Options& options) { return std::make_unique<MysqlService>(options); }

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  Options options;
  options.table_prefix = table_prefix;
  for (std::size_t i = 0; i < url.hosts.size(); ++i) {
    Options::Endpoint e{url.hosts[i].host, url.hosts[i].port ? url.hosts[i].port : 3306};
    if (i == 0) {
      options.host = e.host;
      options.port = e.port;
    } else {
      options.more_hosts.push_back(std::move(e));
    }
  }
  options.user = url.user;
  options.password = url.password;
  options.database = url.path;
  if (options.database.empty() || options.database.find('/') != std::string::npos) {
    throw UsageError("mysql URL: expected mysql://[user[:password]@]host[:port]/database", kServiceName);
  }
  service::UrlParams params(url, kServiceName);
  options.socket = params.text("socket").value_or("");
  options.connect_timeout_s = static_cast<int>(params.integer("connect_timeout", 1, 3600).value_or(options.connect_timeout_s));
  options.read_timeout_s = static_cast<int>(params.integer("read_timeout", 0, 86400).value_or(0));
  options.write_timeout_s = static_cast<int>(params.integer("write_timeout", 0, 86400).value_or(0));
  options.ssl_ca = params.text("ssl_ca").value_or("");
  options.ssl_cert = params.text("ssl_cert").value_or("");
  options.ssl_key = params.text("ssl_key").value_or("");
  options.ssl_verify = params.boolean("ssl_verify").value_or(false);
  options.beacon = params.boolean("beacon").value_or(true);
  if (auto us = params.integer("beacon_delay_us", 0, 60'000'000)) options.beacon_delay = std::chrono::microseconds(*us);
  params.finish();
  return make_service(options);
}

}  // namespace dblock::mysql
