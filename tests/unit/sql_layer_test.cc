// The SQL layer's own rules, without a server: statement rendering and the registry, the retry and
// in-doubt policy (on a toy connection type), and the one rule for URL parameters.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "dblock/dblock.h"
#include "dblock/service/retry.h"
#include "dblock/service/sql/args.h"
#include "dblock/service/sql/rows.h"
#include "dblock/service/sql/statement.h"
#include "dblock/service/url_params.h"

namespace dblock::testing {
namespace {

// ---- statements ----

constexpr dblock::sql::Statement kOne{"one", "SELECT x FROM {L} WHERE a = '{L}' AND b = \"{R}\" AND c = {Q}"};
constexpr dblock::sql::Statement kTwo{"two", "DELETE FROM {W}"};
constexpr dblock::sql::Statement kStray{"stray", "SELECT 1"};
constexpr const dblock::sql::Statement* kAll[] = {&kOne, &kTwo};

std::string quoted(std::string_view id) { return "[" + std::string(id) + "]"; }

TEST_CASE("sql: placeholders are filled outside quotes only; unknown letters stay", "[unit][sql]") {
  const auto tables = dblock::sql::lease_tables("p_", &quoted);
  CHECK(dblock::sql::render(kOne.text, tables) ==
        "SELECT x FROM [p_leases] WHERE a = '{L}' AND b = \"{R}\" AND c = {Q}");
  CHECK(dblock::sql::render("{V}{W}{R}", tables) == "[p_schema_version][p_waiters][p_readers]");
}

TEST_CASE("sql: the registry renders every statement once and knows only its own", "[unit][sql]") {
  const dblock::sql::Registry registry(kAll, dblock::sql::lease_tables("p_", &quoted));
  CHECK(registry.size() == 2);
  CHECK(registry.index(kTwo) == 1);
  CHECK(registry.text(kTwo) == "DELETE FROM [p_waiters]");
  CHECK(registry.at(0).name == std::string("one"));
  CHECK_THROWS_AS(registry.index(kStray), std::logic_error);
}

// ---- named parameters and columns ----

TEST_CASE("sql: ':name' parameters are spelled as each driver wants, outside quotes and casts", "[unit][sql]") {
  const std::string_view text = "SELECT :name::text, ':not', \":nor\" FROM t WHERE a = :secret AND b = :name";
  const auto question = dblock::sql::spell_params(text, dblock::sql::ParamStyle::kQuestion);
  CHECK(question.text == "SELECT ?::text, ':not', \":nor\" FROM t WHERE a = ? AND b = ?");
  CHECK(question.params == std::vector<std::string>{"name", "secret", "name"});
  const auto dollar = dblock::sql::spell_params(text, dblock::sql::ParamStyle::kDollar);
  CHECK(dollar.text == "SELECT $1::text, ':not', \":nor\" FROM t WHERE a = $2 AND b = $1");
  CHECK(dollar.params == std::vector<std::string>{"name", "secret"});
  const auto numbered = dblock::sql::spell_params(text, dblock::sql::ParamStyle::kQuestionNumbered);
  CHECK(numbered.text == "SELECT ?1::text, ':not', \":nor\" FROM t WHERE a = ?2 AND b = ?1");
  CHECK(dblock::sql::spell_params("SELECT a::int, b := 1", dblock::sql::ParamStyle::kDollar).params.empty());
}

TEST_CASE("sql: arguments are bound by name; a parameter without one fails loudly", "[unit][sql]") {
  const dblock::sql::Args args{{"secret", std::string("s")}, {"name", "n"}, {"ticket", std::nullopt},
                               {"unused", 1}};
  const auto ordered = args.in_order({"name", "ticket", "secret", "name"}, "probe");
  REQUIRE(ordered.size() == 4);
  CHECK(std::get<std::string>(*ordered[0]) == "n");
  CHECK(std::holds_alternative<std::monostate>(*ordered[1]));
  CHECK(std::get<std::string>(*ordered[2]) == "s");
  CHECK(ordered[3] == ordered[0]);
  CHECK_THROWS_WITH(args.in_order({"name", "fence"}, "probe"), Catch::Contains("probe") && Catch::Contains(":fence"));
  CHECK(std::get<std::int64_t>(dblock::sql::Arg("t", dblock::sql::unless_zero(7)).value) == 7);
  CHECK(std::holds_alternative<std::monostate>(dblock::sql::Arg("t", dblock::sql::unless_zero(0)).value));
}

TEST_CASE("sql: rows are read by column name; a missing column names those there are", "[unit][sql]") {
  const auto columns = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"fence", "holder", "gone"});
  const dblock::sql::Row row(columns, {std::int64_t{42}, std::string("h"), std::monostate{}});
  CHECK(row.get<std::int64_t>("fence") == 42);
  CHECK(row.get<std::string>("holder") == "h");
  CHECK(row.get<bool>("fence"));
  CHECK(row.is_null("gone"));
  CHECK_FALSE(row.get<std::optional<std::int64_t>>("gone").has_value());
  CHECK_THROWS_WITH(row.get<std::int64_t>("expires_at_us"),
                    Catch::Contains("expires_at_us") && Catch::Contains("'fence', 'holder', 'gone'"));
  const char* const names[] = {"a", "b"};
  const dblock::sql::Rows relabelled = dblock::sql::relabel({row}, names);
  CHECK(relabelled.at(0).get<std::int64_t>("a") == 42);
  CHECK_THROWS_AS(relabelled.at(0).get<std::int64_t>("gone"), std::logic_error);  // a third value, unnamed
}

// ---- the retry and in-doubt policy ----

struct ToyConnection {
  int id = 0;
  bool broken = false;
};

// A pool of toy connections that counts what it opened and what came back.
struct Toy {
  int opened = 0;
  int returned = 0;
  dblock::service::Connections<ToyConnection> connections{{
      "toy",
      [this] { return std::make_unique<ToyConnection>(ToyConnection{++opened, false}); },
      [this](ToyConnection& c) {
        ++returned;
        return !c.broken;
      },
      [](ToyConnection& c, const std::exception& e) {
        return c.broken || dynamic_cast<const ConnectionError*>(&e) != nullptr;
      },
      [](const char*) { throw; },  // toy errors are dblock errors already
      3,
  }};
};

TEST_CASE("sql: an idempotent statement is retried once on a fresh connection", "[unit][sql][retry]") {
  Toy toy;
  int calls = 0;
  const int id = toy.connections.idempotent([&](ToyConnection& c) {
    if (++calls == 1) {
      c.broken = true;
      throw ConnectionError("toy: connection reset", "toy");
    }
    return c.id;
  });
  CHECK(calls == 2);
  CHECK(id == 2);  // the broken connection was dropped, not reused
  // Two broken connections in a row: the error reaches the caller.
  CHECK_THROWS_AS(toy.connections.idempotent([](ToyConnection&) -> int {
    throw ConnectionError("toy: down", "toy");
  }),
                  ConnectionError);
}

TEST_CASE("sql: conflicts are retried a bounded number of times", "[unit][sql][retry]") {
  Toy toy;
  int calls = 0;
  CHECK_THROWS_AS(toy.connections.run_resolving_conflicts([&](ToyConnection&) -> int {
    ++calls;
    throw Error("toy: deadlock", "toy", "40P01", /*retryable=*/true);
  }),
                  Error);
  CHECK(calls == 3);
  calls = 0;
  CHECK_THROWS_AS(toy.connections.run_resolving_conflicts([&](ToyConnection&) -> int {
    ++calls;
    throw UsageError("toy: not retryable", "toy");
  }),
                  UsageError);
  CHECK(calls == 1);
}

TEST_CASE("sql: a release whose reply was lost is in doubt when the retry finds nothing", "[unit][sql][retry]") {
  Toy toy;
  int calls = 0;
  auto lost_reply = [&](ToyConnection& c) -> std::optional<bool> {
    if (++calls == 1) {
      c.broken = true;
      throw ConnectionError("toy: reply lost", "toy");
    }
    return std::nullopt;  // the first attempt had deleted the row
  };
  CHECK_THROWS_AS(toy.connections.release(lost_reply, "k"), InDoubtError);
  // Nothing found on the first try is a plain "not held".
  CHECK_FALSE(toy.connections.release([](ToyConnection&) -> std::optional<bool> { return std::nullopt; }, "k"));
  CHECK(toy.connections.release([](ToyConnection&) -> std::optional<bool> { return true; }, "k") == true);
}

TEST_CASE("sql: a statement that must not be repeated reports a lost reply in doubt", "[unit][sql][retry]") {
  Toy toy;
  int calls = 0;
  CHECK_THROWS_AS(toy.connections.once(
                      [&](ToyConnection&) -> bool {
                        ++calls;
                        throw ConnectionError("toy: reply lost", "toy");
                      },
                      "compare-and-set"),
                  InDoubtError);
  CHECK(calls == 1);
}

// ---- URL parameters ----

TEST_CASE("url params: unknown, malformed and repeated parameters name themselves", "[unit][url]") {
  auto params_of = [](const char* url) { return service::UrlParams(parse_url(url), "svc"); };
  {
    auto p = params_of("svc://h/db?flag=yes&n=42&name=x");
    CHECK(p.boolean("flag") == true);
    CHECK(p.integer("n", 1, 100) == 42);
    CHECK(p.text("name") == "x");
    CHECK(p.text("absent") == std::nullopt);
    CHECK_NOTHROW(p.finish());
  }
  {
    auto p = params_of("svc://h/db?flag=maybe");
    CHECK_THROWS_WITH(p.boolean("flag"), Catch::Contains("'flag'"));
  }
  {
    auto p = params_of("svc://h/db?n=1000");
    CHECK_THROWS_WITH(p.integer("n", 1, 100), Catch::Contains("'n'") && Catch::Contains("[1, 100]"));
  }
  {
    auto p = params_of("svc://h/db?known=1&typo=secret-value");
    p.text("known");
    CHECK_THROWS_WITH(p.finish(), Catch::Contains("'typo'") && Catch::Contains("known: known") &&
                                      !Catch::Contains("secret-value"));
  }
  CHECK_THROWS_WITH(params_of("svc://h/db?a=1&a=2"), Catch::Contains("'a' given twice"));
}

TEST_CASE("url: a password is never echoed, however the URL is broken; a NUL is refused", "[unit][url]") {
  // Unencoded delimiters in the password: the URL would split inside it.
  for (const char* url : {"postgresql://app:Qx7/Zk9@db.example:5432/locks", "postgresql://app:Qx7?Zk9@db.example/locks",
                          "mysql://app:Qx7#Zk9@db.example/locks"}) {
    INFO(url);
    CHECK_THROWS_WITH(parse_url(url), !Catch::Contains("Qx7") && !Catch::Contains("Zk9") && Catch::Contains("%2F"));
  }
  CHECK_THROWS_WITH(parse_url("postgresql://h:Qx7/db"), !Catch::Contains("Qx7"));  // a bad port is not echoed
  // Redaction by any spelling of a secret parameter's name.
  const std::string shown =
      parse_url("postgresql://u:hunter2@h/db?%20password=s1&SSLPassword=s2&sslkey=/k&api_token=s3").redacted();
  INFO(shown);
  CHECK(shown.find("hunter2") == std::string::npos);
  for (const char* secret : {"s1", "s2", "s3"}) CHECK(shown.find(std::string("=") + secret) == std::string::npos);
  CHECK(shown.find("sslkey=/k") != std::string::npos);
  // %00 would cut a C string (libpq's connection string) short.
  CHECK_THROWS_WITH(parse_url("postgresql://h/db?application_name=a%00b"), Catch::Contains("%00"));
  CHECK_THROWS_WITH(parse_url("postgresql://u:p%00w@h/db"), Catch::Contains("%00"));
  // An '@' in a parameter is fine once encoded, and so is one after credentials.
  CHECK_NOTHROW(parse_url("postgresql://h/db?application_name=a%40b"));
  CHECK_NOTHROW(parse_url("postgresql://u:p@h/db?application_name=a@b"));
}

TEST_CASE("url params: every backend refuses what it does not know before connecting", "[unit][url]") {
  // Nothing listens on port 1: these fail on the parameter, not on the connection.
  CHECK_THROWS_WITH(dblock::open("sqlite:///tmp/dblock-unit-params.db?busy_timeout=soon"),
                    Catch::Contains("'busy_timeout'"));
  CHECK_THROWS_WITH(dblock::open("sqlite:///tmp/dblock-unit-params.db?busy_timeout=99999999999"),
                    Catch::Contains("'busy_timeout'"));
  const std::vector<std::string> schemes = available_schemes();
  auto built = [&](const char* scheme) { return std::find(schemes.begin(), schemes.end(), scheme) != schemes.end(); };
  for (const auto& scheme : schemes) {
    if (scheme == "sqlite") continue;
    CHECK_THROWS_WITH(dblock::open(scheme + "://u@127.0.0.1:1/db?bogus=1"), Catch::Contains("'bogus'"));
  }
  if (built("postgresql")) {
    CHECK(built("postgres"));  // the alias reaches the same backend
    CHECK_THROWS_WITH(dblock::open("postgres://u@127.0.0.1:1/db?unlogged=maybe"), Catch::Contains("'unlogged'"));
    CHECK_THROWS_WITH(dblock::open("postgresql://u@127.0.0.1:1/db?unlogged=maybe"), Catch::Contains("'unlogged'"));
  }
  if (built("mysql")) {
    CHECK_THROWS_WITH(dblock::open("mysql://u@127.0.0.1:1/db?beacon=2"), Catch::Contains("'beacon'"));
  }
}

}  // namespace
}  // namespace dblock::testing
