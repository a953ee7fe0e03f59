// PostgreSQL: the conformance suite's context (what every build runs; the PostgreSQL cases beside
// it, in postgresql_test.cc, run in the plain build only).
#include "postgresql_context.h"

#include <pqxx/pqxx>

#include <memory>
#include <string>

#include "context.h"
#include "dblock/postgresql/postgresql.h"
#include "environment.h"

namespace dblock::testing {

std::string conninfo() {
  auto url = parse_url(env("DBLOCK_TEST_POSTGRESQL_URL"));
  return "host=" + url.hosts.at(0).host + " port=" + std::to_string(url.hosts.at(0).port) + " user=" + url.user +
         " dbname=" + url.path;
}

namespace {
// A run that opted out passes without running anything.
const bool kOptedOut = exit_if_opted_out("postgresql_test", "DBLOCK_TEST_POSTGRESQL_URL", "DBLOCK_TEST_SKIP_POSTGRESQL");
}  // namespace

const Context& context() {
  static Context ctx = [] {
    Context c = server_context("postgresql", "DBLOCK_TEST_POSTGRESQL_URL", "DBLOCK_TEST_SKIP_POSTGRESQL",
                               "DBLOCK_TEST_PG_SCRIPT", "DBLOCK_TEST_PG_STATE", "fast");
    c.expects = {.sql_features = true, .session_locks = true, .row_locks = true, .multi_acquire = true,
                 .hold_at_least = true, .maintenance = true};
    c.guard_create = "CREATE TABLE IF NOT EXISTS {T} (id bigint PRIMARY KEY, fence bigint)";
    c.relay_params = "detect_pooler=0";  // the relay hides the client's socket, as a pooler would
    c.hold_migration_lock = [](const std::string& prefix) {
      auto bystander = std::make_shared<pqxx::connection>(conninfo());
      pqxx::nontransaction tx(*bystander);
      const auto key = dblock::postgresql::migration_lock_key(prefix);
      tx.exec_params("SELECT pg_advisory_lock($1, $2)", key.class_id, key.object_id);
      return Context::HeldByBystander{bystander, "backend pid " + std::to_string(bystander->backendpid())};
    };
    c.stored_owner = [](const std::string& prefix, const std::string& table, const std::string& name) {
      pqxx::connection raw(conninfo());
      pqxx::nontransaction tx(raw);
      const pqxx::result r = tx.exec_params("SELECT coalesce(replace(owner_secret::text, '-', ''), '') FROM " +
                                                tx.quote_name(prefix + table) + " WHERE name = $1",
                                            name);
      return r.empty() ? std::string() : r[0][0].as<std::string>();
    };
    return c;
  }();
  return ctx;
}

}  // namespace dblock::testing
