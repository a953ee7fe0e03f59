// Black-box tests of the recipe options of `dblock run` on SQLite: --permits (a semaphore): never
// more holders than permits across processes, a mismatched N, list and inspect, bad input;
// --hold-at-least and --skipped-exit (a scheduled job): a run inside the window skipped, one after
// it run, bad input.
#include <string>
#include <vector>

#include "cli_rig.h"

using namespace dblock::cli_test;  // NOLINT: the rig's helpers, in every case below

TEST_CASE("run --permits: eight processes on three permits, never more than three inside at once",
          "[cli][sqlite][permits]") {
  Cli cli;
  // Each holder leaves a marker while inside and records how many markers it saw: an upper bound
  // of the holders at that moment (a marker goes before its permit is released).
  const std::string script =
      "touch \"$1/in.$$\"; ls \"$1\" | grep -c '^in\\.' >> \"$1/counts\"; sleep 0.2; rm \"$1/in.$$\"";
  const std::string inside = cli.dir.file("inside");
  fs::create_directory(inside);
  std::vector<std::unique_ptr<Process>> runs;
  for (int i = 0; i < 8; ++i) {
    runs.push_back(cli.start({"run", "--key", "pool", "--permits", "3", "--wait", "60s", "--", "sh", "-c", script,
                              "sh", inside}));
  }
  for (auto& run : runs) {
    const std::optional<int> code = run->wait(milliseconds(90'000));
    REQUIRE(code);
    CHECK(*code == 0);
  }
  const std::vector<std::int64_t> counts = read_numbers(read_file(inside + "/counts"));
  REQUIRE(counts.size() == 8);
  for (std::int64_t n : counts) CHECK(n <= 3);
  CHECK(*std::max_element(counts.begin(), counts.end()) >= 1);
}

TEST_CASE("run --permits: inspect shows permits held of N; another N exits 64", "[cli][sqlite][permits]") {
  Cli cli;
  auto holder = cli.start({"run", "--key", "pool", "--permits", "3", "--", "sleep", "60"});
  REQUIRE(eventually([&] { return cli.held("pool"); }, milliseconds(15'000)));
  const std::optional<std::string> json = cli.inspect("pool");
  REQUIRE(json);
  CHECK(json_int(*json, "permits") == 3);
  CHECK(json_int(*json, "holders") == 1);
  Result table = cli.run({"list"});
  CHECK(table.out.find("1/3") != std::string::npos);
  Result other = cli.run({"run", "--key", "pool", "--permits", "4", "--", "true"});
  INFO(other);
  CHECK(other.code == kUsage);
  CHECK(other.err.find("3 permits") != std::string::npos);
  Result plain = cli.run({"run", "--key", "pool", "--", "true"});
  CHECK(plain.code == kNotAcquired);  // an exclusive lease waits for every permit
  holder->signal_all(SIGTERM);
  CHECK(holder->wait(milliseconds(20'000)));
}

TEST_CASE("run --permits: bad counts and combinations exit 64", "[cli][sqlite][permits]") {
  Cli cli;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", "--key", "a", "--permits", "0", "--", "true"},
           {"run", "--key", "a", "--permits", "-2", "--", "true"},
           {"run", "--key", "a", "--permits", "10001", "--", "true"},
           {"run", "--key", "a", "--permits", "three", "--", "true"},
           {"run", "--key", "a", "--permits", "", "--", "true"},
           {"run", "--key", "a", "--permits", "3", "--mode", "session", "--", "true"},
           {"run", "--key", "a", "--permits", "3", "--mode", "shared", "--", "true"},
           {"elect", "--key", "a", "--permits", "3", "--", "true"}}) {
    Result r = cli.run(args);
    INFO(r);
    CHECK(r.code == kUsage);
  }
  Result ok = cli.run({"run", "--key", "a", "--permits", "10000", "--", "true"});
  INFO(ok);
  CHECK(ok.code == 0);
}

TEST_CASE("run --hold-at-least: a second run inside the window is skipped (75, or --skipped-exit), one after it runs",
          "[cli][sqlite][scheduled]") {
  Cli cli;
  const std::string ran = cli.dir.file("ran");
  const std::string job = "echo \"$DBLOCK_FENCE\" >> \"$1\"";
  const auto started = Clock::now();
  Result first = cli.run({"run", "--key", "nightly", "--hold-at-least", "6s", "--", "sh", "-c", job, "sh", ran});
  INFO(first);
  REQUIRE(first.code == 0);
  Result skipped = cli.run({"run", "--key", "nightly", "--hold-at-least", "6s", "--", "sh", "-c", job, "sh", ran});
  CHECK(skipped.code == kNotAcquired);
  Result quiet = cli.run({"run", "--key", "nightly", "--hold-at-least", "6s", "--skipped-exit", "0", "--", "sh", "-c",
                          job, "sh", ran});
  CHECK(quiet.code == 0);
  CHECK(quiet.err.empty());  // a quiet skip: cron mails whatever a job prints
  CHECK(skipped.err.find("not acquired") != std::string::npos);
  CHECK(read_numbers(read_file(ran)).size() == 1);  // neither ran the job
  REQUIRE(seconds_since(started) < 6.0);            // both were inside the window
  REQUIRE(eventually([&] { return !cli.held("nightly"); }, milliseconds(10'000)));
  CHECK(seconds_since(started) >= 5.9);
  Result after = cli.run({"run", "--key", "nightly", "--hold-at-least", "6s", "--", "sh", "-c", job, "sh", ran});
  CHECK(after.code == 0);
  const std::vector<std::int64_t> fences = read_numbers(read_file(ran));
  REQUIRE(fences.size() == 2);
  CHECK(fences[1] > fences[0]);
}

TEST_CASE("run --hold-at-least and --skipped-exit: bad values and combinations exit 64", "[cli][sqlite][scheduled]") {
  Cli cli;
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"run", "--key", "a", "--hold-at-least", "0", "--", "true"},
           {"run", "--key", "a", "--hold-at-least", "-5s", "--", "true"},
           {"run", "--key", "a", "--hold-at-least", "169h", "--", "true"},
           {"run", "--key", "a", "--hold-at-least", "soon", "--", "true"},
           {"run", "--key", "a", "--hold-at-least", "5m", "--mode", "session", "--", "true"},
           {"run", "--key", "a", "--hold-at-least", "5m", "--mode", "shared", "--", "true"},
           {"run", "--key", "a", "--hold-at-least", "5m", "--permits", "2", "--", "true"},
           {"run", "--key", "a", "--hold-at-least", "5m", "--ttl", "2m", "--", "true"},
           {"run", "--key", "a", "--skipped-exit", "256", "--", "true"},
           {"run", "--key", "a", "--skipped-exit", "-1", "--", "true"},
           {"run", "--key", "a", "--skipped-exit", "x", "--", "true"},
           {"elect", "--key", "a", "--hold-at-least", "5m", "--", "true"}}) {
    Result r = cli.run(args);
    INFO(r);
    CHECK(r.code == kUsage);
  }
}
