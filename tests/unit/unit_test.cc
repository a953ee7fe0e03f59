// Unit tests of backend-independent pieces: URLs, names, secrets, retry.
#include <catch2/catch.hpp>

#include <set>

#include "dblock/dblock.h"

using namespace dblock;

TEST_CASE("url: sqlite absolute and relative", "[unit][url]") {
  auto abs = parse_url("sqlite:///var/lib/app/locks.db?busy_timeout=100");
  CHECK(abs.scheme == "sqlite");
  CHECK(abs.path == "/var/lib/app/locks.db");
  CHECK(abs.param("busy_timeout") == "100");
  auto rel = parse_url("sqlite:locks.db");
  CHECK(rel.path == "locks.db");
  CHECK(parse_url("SQLITE:///a%20b.db").path == "/a b.db");
  CHECK_THROWS_AS(parse_url("sqlite:"), UsageError);
  CHECK_THROWS_AS(parse_url("sqlite://host/x.db"), UsageError);
}

TEST_CASE("url: network URLs, hosts, credentials and redaction", "[unit][url]") {
  auto pg = parse_url("postgresql://alice:s%40cret@db.example:5433/app?sslmode=require&application_name=x");
  CHECK(pg.scheme == "postgresql");
  CHECK(pg.user == "alice");
  CHECK(pg.password == "s@cret");
  REQUIRE(pg.hosts.size() == 1);
  CHECK(pg.hosts[0].host == "db.example");
  CHECK(pg.hosts[0].port == 5433);
  CHECK(pg.path == "app");
  CHECK(pg.param("sslmode") == "require");
  CHECK(pg.redacted().find("s@cret") == std::string::npos);
  CHECK(pg.redacted().find("s%40cret") == std::string::npos);
  CHECK(pg.redacted().find("***") != std::string::npos);
  // Aliases are open()'s (its scheme table), not the parser's: the scheme stays as written.
  CHECK(parse_url("postgres://h/db").scheme == "postgres");

  auto redlock = parse_url("redlock://h1:7001,h2:7002,[::1]:7003");
  REQUIRE(redlock.hosts.size() == 3);
  CHECK(redlock.hosts[2].host == "::1");
  CHECK(redlock.hosts[2].port == 7003);
  auto zk = parse_url("zookeeper://z1:2181,z2:2181/app/locks");
  CHECK(zk.hosts.size() == 2);
  CHECK(zk.path == "app/locks");
  CHECK(parse_url("mysql://u:p@h/db?socket=/run/mysqld.sock").param("socket") == "/run/mysqld.sock");
}

TEST_CASE("url: malformed inputs are UsageErrors that never echo the password", "[unit][url]") {
  for (const char* bad : {"", "noscheme", ":nothing", "postgresql:/one-slash", "postgresql://h:0/db",
                          "postgresql://h:65536/db", "postgresql://h:12ab/db", "postgresql://[::1/db",
                          "mysql://u:pw@:3306/db", "postgresql://h/db?=x", "postgresql://h/%zz", "pg\nsql://h"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_url(bad), UsageError);
  }
  try {
    parse_url("postgresql://u:topsecret@h:99999/db");
    FAIL("no error");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("topsecret") == std::string::npos);
  }
}

TEST_CASE("names: limits and encoding", "[unit][names]") {
  CHECK_NOTHROW(validate_lock_name("a"));
  CHECK_NOTHROW(validate_lock_name(std::string(kMaxNameBytes, 'a')));
  CHECK_NOTHROW(validate_lock_name("orders/123 ключ 🔒"));
  CHECK_THROWS_AS(validate_lock_name(""), UsageError);
  CHECK_THROWS_AS(validate_lock_name(std::string(kMaxNameBytes + 1, 'a')), UsageError);
  CHECK_THROWS_AS(validate_lock_name("tab\there"), UsageError);
  CHECK_THROWS_AS(validate_lock_name(std::string("\xc0\xaf", 2)), UsageError);      // overlong '/'
  CHECK_THROWS_AS(validate_lock_name(std::string("\xed\xa0\x80", 3)), UsageError);  // surrogate
  CHECK_THROWS_AS(validate_lock_name(std::string("\xe2\x82", 2)), UsageError);      // truncated
  CHECK_THROWS_AS(validate_lock_name("next\xc2\x85line"), UsageError);               // C1 control U+0085
  CHECK_THROWS_AS(validate_lock_name("csi\xc2\x9b"), UsageError);                    // C1 control U+009B
  CHECK_NOTHROW(validate_lock_name("nbsp\xc2\xa0ok"));                               // U+00A0 is printable
}

TEST_CASE("secrets: 128 bits, distinct", "[unit][secret]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    auto s = OwnerSecret::generate();
    CHECK(s.hex().size() == 32);
    seen.insert(s.hex());
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("retry_optimistic: bounded, retries retryable errors only", "[unit][retry]") {
  int calls = 0;
  CHECK(retry_optimistic([&] { return ++calls == 3; }, RetryOptions{5, std::chrono::milliseconds(1), std::chrono::milliseconds(1)}));
  CHECK(calls == 3);
  calls = 0;
  CHECK_FALSE(retry_optimistic([&] { ++calls; return false; }, RetryOptions{4, std::chrono::milliseconds(0), std::chrono::milliseconds(1)}));
  CHECK(calls == 4);
  calls = 0;
  CHECK(retry_optimistic(
      [&] {
        if (++calls < 2) throw Error("serialization failure", "x", "40001", true);
        return true;
      },
      RetryOptions{3, std::chrono::milliseconds(0), std::chrono::milliseconds(1)}));
  CHECK_THROWS_AS(retry_optimistic([&]() -> bool { throw ConnectionError("down"); }), ConnectionError);
  CHECK_THROWS_AS(retry_optimistic([] { return true; }, RetryOptions{0}), UsageError);
}
