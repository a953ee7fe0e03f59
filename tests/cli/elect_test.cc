// Black-box tests of `dblock elect` and `dblock leader` on SQLite: a SIGKILLed leader replaced after
// its TTL with a greater term, a SIGSTOPped one revoked when it resumes, --forever, bad input.
#include <signal.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli_rig.h"

using namespace dblock::cli_test;  // NOLINT: the rig's helpers, in every case below

namespace {

// `dblock leader NAME --json`: the term of the current leader, or nullopt when there is none.
std::optional<std::int64_t> leader_term(Cli& cli, const std::string& name) {
  Result r = cli.run({"leader", name, "--json"});
  if (r.code == 1 && r.out == "null\n") return std::nullopt;
  INFO(r);
  REQUIRE(r.code == 0);
  return json_int(r.out, "term");
}

}  // namespace

TEST_CASE("elect: a SIGKILLed leader is replaced after its TTL with a greater term; leader shows it",
          "[cli][sqlite][elect]") {
  Cli cli;
  CHECK_FALSE(leader_term(cli, "jobs"));
  const std::string term_a = cli.dir.file("term-a"), term_b = cli.dir.file("term-b");
  const std::string script = "echo \"$DBLOCK_FENCE\" > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"; exec sleep 60";
  Process::Options group;
  group.new_group = true;
  // A 4 s TTL, renewed every 1.33 s: the lease outlives the kill by at least 2.67 s, so the checks
  // right after it (each a CLI run, slow under a sanitizer) still find it.
  auto a = cli.start({"elect", "--key", "jobs", "--ttl", "4s", "--", "sh", "-c", script, "sh", term_a}, group);
  REQUIRE(eventually([&] { return fs::exists(term_a); }, milliseconds(15'000)));
  const std::int64_t first = read_numbers(read_file(term_a)).at(0);
  CHECK(leader_term(cli, "jobs") == first);
  auto b = cli.start({"elect", "--key", "jobs", "--ttl", "4s", "--", "sh", "-c", script, "sh", term_b});
  a->signal_all(SIGKILL);
  const auto killed_at = Clock::now();
  REQUIRE(a->wait(milliseconds(5'000)).has_value());
  CHECK(leader_term(cli, "jobs") == first);  // its lease lives on until its TTL
  REQUIRE(eventually([&] { return fs::exists(term_b); }, milliseconds(15'000)));
  const double since_kill = seconds_since(killed_at);
  const std::int64_t second = read_numbers(read_file(term_b)).at(0);
  CHECK(second > first);
  CHECK(since_kill >= 2.0);
  CHECK(since_kill <= 4.0 + 3.0);
  CHECK(leader_term(cli, "jobs") == second);
  CHECK(b->err().find("elected leader of lock 'jobs', term " + std::to_string(second)) != std::string::npos);
  b->signal(SIGTERM);
  CHECK(b->wait(milliseconds(10'000)) == 128 + SIGTERM);
  CHECK_FALSE(leader_term(cli, "jobs"));
}

TEST_CASE("elect: a SIGSTOPped leader is revoked when it resumes, its COMMAND stopped (exit 70)",
          "[cli][sqlite][elect]") {
  Cli cli;
  const std::string ready_a = cli.dir.file("ready-a"), ready_b = cli.dir.file("ready-b");
  auto a = cli.start({"elect", "--key", "jobs", "--ttl", "1s", "--", "sh", "-c", "touch \"$1\"; exec sleep 60", "sh",
                      ready_a});
  REQUIRE(eventually([&] { return fs::exists(ready_a); }, milliseconds(15'000)));
  const std::optional<std::int64_t> first = leader_term(cli, "jobs");
  REQUIRE(first);
  auto b = cli.start({"elect", "--key", "jobs", "--ttl", "1s", "--", "sh", "-c", "touch \"$1\"; exec sleep 60", "sh",
                      ready_b});
  a->signal(SIGSTOP);  // dblock only: its renewals stop, COMMAND runs on
  REQUIRE(eventually([&] { return fs::exists(ready_b); }, milliseconds(15'000)));
  CHECK(leader_term(cli, "jobs") > first);
  a->signal(SIGCONT);
  std::optional<int> code = a->wait(milliseconds(15'000));
  INFO(a->err());
  REQUIRE(code.has_value());
  CHECK(*code == kLeaseLost);
  CHECK(a->err().find("lost") != std::string::npos);
  b->signal(SIGTERM);
  CHECK(b->wait(milliseconds(10'000)).has_value());
}

TEST_CASE("elect --forever runs COMMAND again at each new term until a signal ends it", "[cli][sqlite][elect]") {
  Cli cli;
  const std::string runs = cli.dir.file("runs");
  auto e = cli.start({"elect", "--key", "cron", "--forever", "--ttl", "2s", "--", "sh", "-c",
                      "echo \"$DBLOCK_FENCE\" >> \"$1\"", "sh", runs});
  REQUIRE(eventually([&] { return fs::exists(runs) && read_numbers(read_file(runs)).size() >= 2; },
                     milliseconds(15'000)));
  e->signal(SIGTERM);
  CHECK(e->wait(milliseconds(10'000)) == 128 + SIGTERM);
  const std::vector<std::int64_t> terms = read_numbers(read_file(runs));
  CHECK(terms[1] > terms[0]);
  CHECK(e->err().find("campaigning again") != std::string::npos);
  CHECK_FALSE(leader_term(cli, "cron"));
}

TEST_CASE("elect and leader: bad input is a usage error; no leader exits 1", "[cli][sqlite][elect]") {
  Cli cli;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"elect", "--key", "a", "--wait", "1s", "--", "true"},
           {"elect", "--key", "a", "--key", "b", "--", "true"},
           {"elect", "--key", "a", "--mode", "session", "--", "true"},
           {"elect", "--key", "a", "--ttl", "0", "--", "true"},
           {"elect", "--key", "", "--", "true"},
           {"elect", "--key", "a"},
           {"run", "--key", "a", "--forever", "--", "true"},
           {"leader"},
           {"leader", ""}}) {
    Result r = cli.run(args);
    INFO(r);
    CHECK(r.code == kUsage);
  }
  Result none = cli.run({"leader", "nobody"});
  CHECK(none.code == 1);
  CHECK(none.out == "nobody: no leader\n");
}
