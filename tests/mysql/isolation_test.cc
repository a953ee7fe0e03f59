// MariaDB: what other accounts and other lock names cannot do to dblock's leases. A read-only
// account cannot lock lease rows; a lock wait ends by the call's deadline, on the server too;
// lock names and dblock's own GET_LOCK keys live in key spaces that never meet; force-release
// without the audit grant is refused even when there is nothing to evict.
#include <catch2/catch.hpp>
#include <cppconn/exception.h>

#include <chrono>
#include <string>
#include <unistd.h>

#include "context.h"
#include "dblock/mysql/mysql.h"
#include "raw.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;

namespace {

// An account of its own for one case, dropped when the case ends.
struct Account {
  std::string user;
  std::string account;  // 'user'@'127.0.0.1'
  std::unique_ptr<::sql::Connection> admin = raw();

  explicit Account(const std::string& kind) : user("dblock_" + kind + "_" + std::to_string(::getpid())) {
    account = "'" + user + "'@'127.0.0.1'";
    exec(*admin, "DROP USER IF EXISTS " + account);
    exec(*admin, "CREATE USER " + account + " IDENTIFIED BY 'pw'");
  }
  ~Account() {
    try {
      exec(*admin, "DROP USER IF EXISTS " + account);
    } catch (const ::sql::SQLException&) {
    }
  }
  void grant(const std::string& what, const std::string& object) {
    exec(*admin, "GRANT " + what + " ON " + object + " TO " + account);
  }
  std::string object(const std::string& prefix, const std::string& name) const {
    return "`" + test_url().path + "`.`" + prefix + name + "`";
  }
  // The read-only (monitoring) grants docs/backends/mysql.md recommends.
  void grant_read_only(const std::string& prefix) {
    grant("EXECUTE", "PROCEDURE " + object(prefix, "list_leases"));
    grant("EXECUTE", "PROCEDURE " + object(prefix, "force_release_history"));
    grant("SELECT", object(prefix, "schema_version"));
    grant("SELECT", object(prefix, "fence"));
  }
};

void insert_free_row(::sql::Connection& c, const std::string& prefix, const std::string& name) {
  exec(c, "INSERT INTO `" + prefix + "leases` (name, owner_secret, holder, mode, fence, acquired_at, expires_at)"
          " VALUES ('" + name + "', NULL, NULL, 'exclusive', 1, UTC_TIMESTAMP(6), '1970-01-01 00:00:01')");
}

}  // namespace

TEST_CASE("mysql: a read-only account with the documented grants cannot stall acquires or renewals",
          "[mysql][input]") {
  const std::string prefix = unique_prefix();
  auto owner = open_manager({}, prefix);
  auto c = raw();
  insert_free_row(*c, prefix, "free-row");
  ServiceDriver driver(*owner);
  const OwnerSecret secret = OwnerSecret::generate();
  REQUIRE(driver.attempt("renewed", LockMode::kExclusive, secret, 10s).acquired);

  Account monitor("ro");
  monitor.grant_read_only(prefix);
  auto ro = raw(monitor.user, "pw");
  exec(*ro, "SET SESSION TRANSACTION ISOLATION LEVEL SERIALIZABLE");
  exec(*ro, "START TRANSACTION");
  // Every locking read it might try on the lease tables is refused: no SELECT on them, and the
  // routines refuse to run inside a transaction.
  for (const std::string table : {"leases", "readers", "waiters", "force_releases"}) {
    CHECK_THROWS_AS(rows_of(*ro, "SELECT * FROM `" + prefix + table + "` FOR UPDATE"), ::sql::SQLException);
    CHECK_THROWS_AS(rows_of(*ro, "SELECT * FROM `" + prefix + table + "` LOCK IN SHARE MODE"), ::sql::SQLException);
  }
  CHECK_THROWS_WITH(rows_of(*ro, "CALL `" + prefix + "list_leases`('')"), Catch::Contains("outside a transaction"));
  CHECK_THROWS_AS(rows_of(*ro, "CALL `" + prefix + "force_release_history`('', 10)"), ::sql::SQLException);
  // What it may read it may lock, but no lease statement writes those rows.
  CHECK_NOTHROW(rows_of(*ro, "SELECT * FROM `" + prefix + "schema_version` FOR UPDATE"));
  CHECK_NOTHROW(rows_of(*ro, "SELECT * FROM `" + prefix + "fence` FOR UPDATE"));
  REQUIRE(scalar(*ro, "SELECT @@in_transaction") == 1);

  // Meanwhile, with its transaction open: an acquire of an existing row, a new one, a renewal.
  auto taken = owner->try_acquire("free-row");
  CHECK(taken);
  auto fresh = owner->try_acquire("new-row");
  CHECK(fresh);
  CHECK(driver.renew("renewed", LockMode::kExclusive, secret, 10s).renewed);
  // And it still monitors, outside a transaction.
  {
    ManagerOptions options;
    options.reaper = false;
    auto reader = open_with(url_as(monitor.user, "pw"), options, prefix);
    CHECK(reader->list().size() == 3);
    CHECK(reader->inspect("renewed"));
    CHECK(reader->force_release_history().empty());
    CHECK_THROWS_AS(reader->try_acquire("not-for-monitors"), PermissionError);
  }
  exec(*ro, "ROLLBACK");
}

TEST_CASE("mysql: a lock wait ends by the call's deadline, on the server too, and says it was a lock wait",
          "[mysql]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto c = raw();
  insert_free_row(*c, prefix, "stalled");
  exec(*c, "START TRANSACTION");
  REQUIRE(rows_of(*c, "SELECT name FROM `" + prefix + "leases` WHERE name = 'stalled' FOR UPDATE").size() == 1);

  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH(manager->acquire("stalled", 1s), Catch::Contains("lock wait"));
  // The call's deadline is the least a call gets (2 s); the margin covers scheduling.
  CHECK(std::chrono::steady_clock::now() - start < 3500ms);
  // No statement of dblock's is left waiting on the server past its bound there (1 s; a socket cut
  // at the call's deadline can leave one that ends by it, where InnoDB's default would wait 50 s).
  auto observer = raw();
  const auto waiting = [&] {
    return scalar(*observer,
                  "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() AND INFO LIKE ?",
                  {"%" + prefix + "leases%"});
  };
  const auto ended = std::chrono::steady_clock::now();
  while (waiting() != 0 && std::chrono::steady_clock::now() - ended < 2500ms) usleep(20'000);
  CHECK(waiting() == 0);
  exec(*c, "ROLLBACK");
  CHECK(manager->try_acquire("stalled"));
}

TEST_CASE("mysql: a 40-hex lock name shares no GET_LOCK key with a long name or with dblock's own keys",
          "[mysql][session]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto c = raw();
  const std::string long_name = "long-" + prefix + std::string(70, 'x');
  const std::string digest = rows_of(*c, "SELECT SHA1(CONCAT(DATABASE(), ':', ?))", {long_name}).at(0).at(0);
  auto held_long = manager->session_lock(long_name, 0ms);
  REQUIRE(held_long);
  CHECK(manager->session_lock(digest, 0ms));
  // dblock's own keys: a name equal to the digest of the migration lock of a new prefix does not
  // keep that prefix's first open (which migrates) from taking the lock.
  const std::string fresh = unique_prefix();
  const std::string migrate_digest =
      rows_of(*c, "SELECT SHA1(CONCAT(DATABASE(), CHAR(0), 'dblock', CHAR(0), ?, CHAR(0), 'migrate', CHAR(0), ''))",
              {fresh})
          .at(0)
          .at(0);
  auto held_internal = manager->session_lock(migrate_digest, 0ms);
  REQUIRE(held_internal);
  const auto start = std::chrono::steady_clock::now();
  CHECK_NOTHROW(open_manager({}, fresh));
  CHECK(std::chrono::steady_clock::now() - start < 10s);  // the lock's own wait is 15 s
  // Short names keep their documented key.
  CHECK(dblock::mysql::lock_key("db", "short") == "db:short");
}

TEST_CASE("mysql: force-release without the audit grant is refused, also when nothing is held", "[mysql][input]") {
  const std::string prefix = unique_prefix();
  auto owner = open_manager({}, prefix);
  auto held = owner->try_acquire("held");
  REQUIRE(held);
  Account runtime("rtf");
  for (const char* table : {"leases", "readers", "waiters", "schema_version"}) {
    runtime.grant("SELECT, INSERT, UPDATE, DELETE", runtime.object(prefix, table));
  }
  runtime.grant("SELECT, INSERT", runtime.object(prefix, "fence"));
  ManagerOptions options;
  options.auto_migrate = false;
  auto manager = open_with(url_as(runtime.user, "pw"), options, prefix);
  CHECK_THROWS_AS(manager->force_release("never-held"), PermissionError);
  CHECK_THROWS_AS(manager->force_release("held"), PermissionError);
  CHECK_FALSE(held->lost());
  CHECK(owner->inspect("held"));
}

}  // namespace dblock::testing
