// dblock/postgresql/postgresql.h: options from a postgresql:// URL, the factory, advisory keys.
#include <libpq-fe.h>

#include <set>

#include "dblock/errors.h"
#include "dblock/service/url_params.h"
#include "dblock/url.h"
#include "postgresql_service.h"

namespace dblock::postgresql {

namespace {

std::string conninfo_quote(const std::string& value) {
  std::string out = "'";
  for (char ch : value) {
    if (ch == '\'' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "'";
}

// The connection keywords of the libpq this build runs with (PQconndefaults), read once.
const std::set<std::string, std::less<>>& libpq_keywords() {
  static const std::set<std::string, std::less<>> keywords = [] {
    std::set<std::string, std::less<>> out;
    PQconninfoOption* options = PQconndefaults();
    for (PQconninfoOption* o = options; o != nullptr && o->keyword != nullptr; ++o) out.insert(o->keyword);
    PQconninfoFree(options);
    return out;
  }();
  return keywords;
}

// The most connect_timeout may say: an hour. Every connect is also bounded by its call's deadline.
constexpr long kMaxConnectTimeout = 3600;

// connect_timeout as libpq would otherwise read it silently: 0, negatives and junk as "no limit",
// 1 as 2. Here it must be a whole number of seconds from 1 to kMaxConnectTimeout.
void check_connect_timeout(const std::string& value) {
  const bool digits = !value.empty() && value.size() <= 9 &&
                      value.find_first_not_of("0123456789") == std::string::npos;
  const long seconds = digits ? std::stol(value) : 0;
  if (seconds < 1 || seconds > kMaxConnectTimeout) {
    throw UsageError("postgresql: URL parameter connect_timeout must be a whole number of seconds from 1 to " +
                         std::to_string(kMaxConnectTimeout) + ", not '" + value + "'",
                     kServiceName);
  }
}

}  // namespace

std::int64_t advisory_key(std::string_view name) noexcept {
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a 64 offset basis
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ULL;  // FNV-1a 64 prime
  }
  return static_cast<std::int64_t>(hash);
}

MigrationLockKey migration_lock_key(std::string_view table_prefix) noexcept {
  return {0x64626C6B, static_cast<std::int32_t>(static_cast<std::uint64_t>(advisory_key(table_prefix)) & 0x7FFFFFFF)};
}

std::unique_ptr<LeaseService> make_service(const Options& options) {
  return std::make_unique<PostgresService>(options);
}

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  Options options;
  options.table_prefix = table_prefix;
  std::string conninfo;
  auto add = [&](const std::string& key, const std::string& value) { conninfo += key + "=" + conninfo_quote(value) + " "; };
  if (!url.hosts.empty()) {
    std::string hosts, ports;
    for (std::size_t i = 0; i < url.hosts.size(); ++i) {
      hosts += (i ? "," : "") + url.hosts[i].host;
      ports += (i ? "," : "") + (url.hosts[i].port ? std::to_string(url.hosts[i].port) : std::string("5432"));
    }
    add("host", hosts);
    add("port", ports);
  }
  if (!url.user.empty()) add("user", url.user);
  if (!url.password.empty()) add("password", url.password);
  if (!url.path.empty()) add("dbname", url.path);
  service::UrlParams params(url, kServiceName);
  options.unlogged = params.boolean("unlogged");
  options.detect_pooler = params.boolean("detect_pooler").value_or(true);
  options.prepared = params.boolean("prepared").value_or(true);
  options.listen = params.boolean("listen").value_or(true);
  // Every libpq connection parameter passes through; anything else is refused by finish().
  const auto passed = params.take_if([](std::string_view key) { return libpq_keywords().count(key) != 0; });
  bool timeout_given = false, name_given = false, attrs_given = false;
  for (const auto& [key, value] : passed) {
    if (key == "connect_timeout") check_connect_timeout(value);
    timeout_given = timeout_given || key == "connect_timeout";
    name_given = name_given || key == "application_name";
    attrs_given = attrs_given || key == "target_session_attrs";
    add(key, value);
  }
  params.finish();
  if (!timeout_given) add("connect_timeout", "5");
  if (!name_given) add("application_name", "dblock");
  // A list of hosts is a primary and its standbys: look for the writable one (libpq's default,
  // "any", would stop at the first that answers, and dblock refuses a standby).
  if (url.hosts.size() > 1 && !attrs_given) add("target_session_attrs", "read-write");
  options.conninfo = conninfo;
  return make_service(options);
}

}  // namespace dblock::postgresql
