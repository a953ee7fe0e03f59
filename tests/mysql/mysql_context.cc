// MariaDB: the conformance suite's context and the raw connections of raw.h (what every build
// runs; the MariaDB cases, in mysql_test.cc and isolation_test.cc, run in the plain build only).
#include <catch2/catch.hpp>
#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>

#include <memory>
#include <string>
#include <vector>

#include "context.h"
#include "environment.h"
#include "raw.h"

namespace dblock::testing {

namespace {
// A run that opted out passes without running anything.
const bool kOptedOut = exit_if_opted_out("mysql_test", "DBLOCK_TEST_MYSQL_URL", "DBLOCK_TEST_SKIP_MYSQL");
}  // namespace

Context::HeldByBystander hold_migration_lock(const std::string& prefix);  // below, with the raw connections

const Context& context() {
  static Context ctx = [] {
    Context c = server_context("mysql", "DBLOCK_TEST_MYSQL_URL", "DBLOCK_TEST_SKIP_MYSQL", "DBLOCK_TEST_MARIADB_SCRIPT",
                               "DBLOCK_TEST_MARIADB_STATE");
    c.expects = {.sql_features = true, .session_locks = true, .row_locks = true, .multi_acquire = true,
                 .hold_at_least = true, .maintenance = true};
    c.guard_create = "CREATE TABLE IF NOT EXISTS {T} (id BIGINT PRIMARY KEY, fence BIGINT) ENGINE=InnoDB";
    c.hold_migration_lock = hold_migration_lock;
    c.stored_owner = stored_owner;
    return c;
  }();
  return ctx;
}

// The helpers declared in raw.h.

Url test_url() { return parse_url(context().url); }

// A raw Connector/C++ connection to the test database (as the URL's user unless given).
std::unique_ptr<::sql::Connection> raw(const std::string& user, const std::string& password) {
  Url url = test_url();
  ::sql::ConnectOptionsMap o;
  o["hostName"] = ::sql::SQLString(url.hosts.at(0).host);
  o["port"] = url.hosts.at(0).port;
  o["userName"] = ::sql::SQLString(user.empty() ? url.user : user);
  o["password"] = ::sql::SQLString(user.empty() ? url.password : password);
  o["schema"] = ::sql::SQLString(url.path);
  o["OPT_RECONNECT"] = false;
  o["OPT_CHARSET_NAME"] = ::sql::SQLString("utf8mb4");
  return std::unique_ptr<::sql::Connection>(get_driver_instance()->connect(o));
}

void exec(::sql::Connection& c, const std::string& statement) {
  std::unique_ptr<::sql::Statement> s(c.createStatement());
  s->execute(statement);
}

std::vector<std::vector<std::string>> rows_of(::sql::Connection& c, const std::string& statement,
                                              const std::vector<std::string>& params) {
  std::unique_ptr<::sql::PreparedStatement> ps(c.prepareStatement(statement));
  for (std::size_t i = 0; i < params.size(); ++i) ps->setString(static_cast<unsigned>(i + 1), params[i]);
  std::unique_ptr<::sql::ResultSet> rs(ps->executeQuery());
  std::vector<std::vector<std::string>> out;
  const unsigned n = rs->getMetaData()->getColumnCount();
  while (rs->next()) {
    std::vector<std::string> row;
    for (unsigned i = 1; i <= n; ++i) row.push_back(rs->isNull(i) ? "NULL" : std::string(rs->getString(i)));
    out.push_back(std::move(row));
  }
  return out;
}

std::int64_t scalar(::sql::Connection& c, const std::string& statement, const std::vector<std::string>& params) {
  auto rows = rows_of(c, statement, params);
  REQUIRE(rows.size() == 1);
  return rows[0][0] == "NULL" ? -1 : std::stoll(rows[0][0]);
}

// Any account that can connect can take any GET_LOCK name; dblock's key is derived from the
// database, the prefix and the kind (src/backends/mysql/keys.cc).
Context::HeldByBystander hold_migration_lock(const std::string& prefix) {
  std::shared_ptr<::sql::Connection> bystander = raw();
  const std::string key = rows_of(*bystander,
                                  "SELECT CONCAT(LEFT(DATABASE(), 22), ':', CHAR(31), SHA1(CONCAT(DATABASE(), CHAR(0), 'dblock',"
                                  " CHAR(0), ?, CHAR(0), 'migrate', CHAR(0), '')))",
                                  {prefix})
                              .at(0)
                              .at(0);
  REQUIRE(scalar(*bystander, "SELECT GET_LOCK(?, 0)", {key}) == 1);
  return {bystander, "connection " + std::to_string(scalar(*bystander, "SELECT CONNECTION_ID()"))};
}

std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name) {
  auto c = raw();
  const auto rows = rows_of(*c, "SELECT LOWER(HEX(owner_secret)) FROM `" + prefix + table + "` WHERE name = ?", {name});
  return rows.empty() || rows[0][0] == "NULL" ? std::string() : rows[0][0];
}

}  // namespace dblock::testing
