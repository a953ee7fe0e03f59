// SQLite: the conformance suite's context (what every build runs; the SQLite cases beside it, in
// sqlite_test.cc and the files next to it, run in the plain build only).
#include "sqlite_context.h"

#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <cstdlib>
#include <string>

#include "context.h"
#include "process.h"

namespace dblock::testing {

namespace {
// One database file for the whole test process (children reach it through the same URL).
const std::string& database_dir() {
  static TempDir dir;  // children get the URL from the environment and never create their own
  return dir.path();
}
}  // namespace

std::string stored_owner_in(const std::string& path, const std::string& prefix, const std::string& table,
                            const std::string& name) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  sqlite3_stmt* stmt = nullptr;
  const std::string text = "SELECT lower(hex(owner_secret)) FROM \"" + prefix + table + "\" WHERE name = ?";
  REQUIRE(sqlite3_prepare_v2(db, text.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
  sqlite3_bind_text(stmt, 1, name.c_str(), -1, SQLITE_TRANSIENT);
  std::string out;
  if (sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0)) {
    out = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

const Context& context() {
  static Context ctx = [] {
    Context c;
    c.expects = {.sql_features = true, .multi_acquire = true, .hold_at_least = true, .maintenance = true};
    c.backend = "sqlite";
    c.accounts = false;
    // Children (multi-process cases) inherit the URL through the environment.
    const char* url = std::getenv("DBLOCK_TEST_SQLITE_URL");
    c.url = url && *url ? url : "sqlite://" + database_dir() + "/conformance.db";
    setenv("DBLOCK_TEST_SQLITE_URL", c.url.c_str(), 1);
    c.stored_owner = [path = c.url.substr(std::string("sqlite://").size())](
                         const std::string& prefix, const std::string& table, const std::string& name) {
      return stored_owner_in(path, prefix, table, name);
    };
    return c;
  }();
  return ctx;
}

}  // namespace dblock::testing
