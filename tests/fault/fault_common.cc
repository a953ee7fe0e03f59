#include "fault_common.h"

#include <time.h>

#include <cstdlib>
#include <sstream>
#include <typeinfo>

namespace dblock::fault {

std::int64_t mono_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::int64_t to_mono_ns(std::chrono::steady_clock::time_point t) {
  // libstdc++'s steady_clock is CLOCK_MONOTONIC; its epoch is the clock's zero.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

Dialect dialect_of(std::string_view url) {
  auto colon = url.find(':');
  std::string scheme(url.substr(0, colon == std::string_view::npos ? 0 : colon));
  if (scheme == "sqlite") return Dialect::kSqlite;
  if (scheme == "postgresql" || scheme == "postgres") return Dialect::kPostgresql;
  if (scheme == "mysql" || scheme == "mariadb") return Dialect::kMysql;
  if (scheme == "redis") return Dialect::kRedis;
  if (scheme == "redlock") return Dialect::kRedlock;
  if (scheme == "zookeeper") return Dialect::kZookeeper;
  if (scheme == "etcd") return Dialect::kEtcd;
  throw UsageError("fault harness: unsupported URL scheme '" + scheme + "'");
}

const char* dialect_name(Dialect d) {
  switch (d) {
    case Dialect::kSqlite: return "sqlite";
    case Dialect::kPostgresql: return "postgresql";
    case Dialect::kMysql: return "mariadb";
    case Dialect::kRedis: return "redis";
    case Dialect::kRedlock: return "redlock";
    case Dialect::kZookeeper: return "zookeeper";
    case Dialect::kEtcd: return "etcd";
  }
  return "?";
}

std::string resource_url(Dialect d, const std::string& url, const std::string& work) {
  return is_sql(d) ? url : "sqlite://" + work + "/resource.db";
}

std::string with_param(const std::string& url, const std::string& key, const std::string& value) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + key + "=" + value;
}

std::int64_t as_int(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (auto* s = std::get_if<std::string>(&v)) return std::strtoll(s->c_str(), nullptr, 10);
  return 0;
}

std::string as_text(const Value& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return std::to_string(*d);
  return "";
}

ResourceSql resource_sql(Dialect d, const std::string& prefix) {
  const std::string r = prefix + "resource";
  const std::string o = prefix + "ops";
  ResourceSql s;
  switch (d) {
    case Dialect::kSqlite:
      s.create = {"CREATE TABLE " + r + " (id INTEGER PRIMARY KEY, last_fence INTEGER NOT NULL, value INTEGER NOT NULL)",
                  "CREATE TABLE " + o + " (seq INTEGER PRIMARY KEY AUTOINCREMENT, op_id TEXT NOT NULL,"
                  " fence INTEGER NOT NULL, client INTEGER NOT NULL, t_ns INTEGER NOT NULL)"};
      s.server_version = "SELECT sqlite_version()";
      break;
    case Dialect::kPostgresql:
      s.create = {"CREATE TABLE " + r + " (id INTEGER PRIMARY KEY, last_fence BIGINT NOT NULL, value BIGINT NOT NULL)",
                  "CREATE TABLE " + o + " (seq BIGSERIAL PRIMARY KEY, op_id TEXT NOT NULL,"
                  " fence BIGINT NOT NULL, client INTEGER NOT NULL, t_ns BIGINT NOT NULL)"};
      s.server_version = "SELECT current_setting('server_version')";
      break;
    case Dialect::kMysql:
      s.create = {"CREATE TABLE " + r + " (id INTEGER PRIMARY KEY, last_fence BIGINT NOT NULL, value BIGINT NOT NULL)"
                  " ENGINE=InnoDB",
                  "CREATE TABLE " + o + " (seq BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, op_id VARCHAR(64) NOT NULL,"
                  " fence BIGINT NOT NULL, client INTEGER NOT NULL, t_ns BIGINT NOT NULL) ENGINE=InnoDB"};
      s.server_version = "SELECT VERSION()";
      break;
    case Dialect::kRedis:
    case Dialect::kRedlock:
    case Dialect::kZookeeper:
    case Dialect::kEtcd:
      throw UsageError("fault harness: Redis, ZooKeeper and etcd keep no SQL resource (the resource is an SQLite file)");
  }
  s.create.push_back("INSERT INTO " + r + " (id, last_fence, value) VALUES (1, 0, 0)");
  s.guarded_update = "UPDATE " + r + " SET last_fence = ?, value = value + 1 WHERE id = 1 AND last_fence < ?";
  s.unfenced_update = "UPDATE " + r + " SET last_fence = ?, value = value + 1 WHERE id = 1";
  s.insert_op = "INSERT INTO " + o + " (op_id, fence, client, t_ns) VALUES (?, ?, ?, ?)";
  s.select_ops = "SELECT seq, op_id, fence, client FROM " + o + " ORDER BY seq";
  s.select_resource = "SELECT last_fence, value FROM " + r + " WHERE id = 1";
  return s;
}

std::optional<LogLine> parse_log_line(std::string_view line) {
  std::istringstream in{std::string(line)};
  LogLine out;
  if (!(in >> out.type)) return std::nullopt;
  std::string f;
  while (in >> f) out.fields.push_back(f);
  return out;
}

const std::vector<std::string>& fault_kinds() {
  static const std::vector<std::string> kinds = {
      "none",           "client-kill", "client-stop", "session-kill", "conn-kill", "pubsub-kill", "server-restart",
      "server-restart-aof", "server-stop", "relay-stall", "reply-cut", "conn-full", "pgbouncer", "writer-kill", "disk-full",
      "node-kill",      "node-kill-two", "node-restart", "node-restart-two", "node-restart-empty",
      "node-restart-empty-two", "node-stop", "session-expire", "leader-kill",
      "leader-stop",    "quorum-loss",   "failover",    "busy-script"};
  return kinds;
}

std::string error_class(const std::exception& e) {
  if (dynamic_cast<const UnsupportedError*>(&e)) return "UnsupportedError";
  if (dynamic_cast<const UsageError*>(&e)) return "UsageError";
  if (dynamic_cast<const ConnectionError*>(&e)) return "ConnectionError";
  if (dynamic_cast<const TimeoutError*>(&e)) return "TimeoutError";
  if (dynamic_cast<const LeaseLostError*>(&e)) return "LeaseLostError";
  if (dynamic_cast<const InDoubtError*>(&e)) return "InDoubtError";
  if (dynamic_cast<const SchemaError*>(&e)) return "SchemaError";
  if (dynamic_cast<const Error*>(&e)) return "Error";
  return "std::exception";
}

}  // namespace dblock::fault
