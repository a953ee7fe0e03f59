// etcd: ctest's `cli_etcd` runs these (`cli_test [etcd]`) against the etcd_server fixture's
// standalone member (tests/etcd). No schema (no migrate); names of their own. The mixed-fleet case
// runs Debian's etcdctl.
#include <catch2/catch.hpp>

#include <csignal>
#include <string>
#include <vector>

#include "cli_rig.h"

namespace dblock::cli_test {

namespace {

std::string etcd_url() { return server_url("DBLOCK_TEST_ETCD_URL", "cli_etcd"); }

// The fixture member's "127.0.0.1:PORT", as etcdctl's --endpoints names it.
std::string etcd_endpoint() {
  const std::string url = etcd_url();
  const std::size_t at = url.find("127.0.0.1:");
  REQUIRE(at != std::string::npos);
  return url.substr(at, url.find_first_of("/?", at) - at);
}

// `list --json`'s entry for `key`: one exclusive holder, `holder`'s pid in the holder string.
std::string etcd_listed_holder(Cli& cli, const std::string& key, const Process& holder) {
  Result list = cli.run({"list", "--json"});
  INFO(list);
  REQUIRE(list.code == 0);
  std::optional<std::string> entry = list_entry(list.out, key);
  REQUIRE(entry.has_value());
  CHECK(json_int(*entry, "fence").value_or(0) > 0);
  CHECK(json_str(*entry, "mode") == "exclusive");
  CHECK(json_str(*entry, "holder").value_or("").find(":" + std::to_string(holder.pid()) + ":") != std::string::npos);
  return *entry;
}

}  // namespace

TEST_CASE("etcd: list and inspect show a running holder; release --force evicts it and the run exits 70",
          "[.][etcd][cli]") {
  Cli cli(/*migrate=*/false, etcd_url());
  const std::string key = unique_key("evict");
  auto [holder, command] = start_sleeper(cli, {"--key", key, "--ttl", "3s", "--on-lost", "term"});
  const std::string entry = etcd_listed_holder(cli, key, *holder);
  CHECK(json_int(entry, "expires_at_us") == 0);  // an etcd lease: no end on a clock a client reads
  CHECK(json_str(entry, "bound") == "session");

  const std::optional<std::string> info = cli.inspect(key);
  REQUIRE(info.has_value());
  CHECK(json_int(*info, "fence") == json_int(entry, "fence"));

  Result busy = cli.run({"run", "--key", key, "--wait", "0", "--", "touch", cli.dir.file("ran")});
  INFO(busy);
  CHECK(busy.code == kNotAcquired);
  CHECK_FALSE(fs::exists(cli.dir.file("ran")));

  Result evict = cli.run({"release", "--force", key});
  const auto evicted_at = Clock::now();
  INFO(evict);
  REQUIRE(evict.code == 0);
  CHECK(evict.out.find("evicted") != std::string::npos);
  const std::optional<int> code = holder->wait(milliseconds(10'000));
  INFO("holder stderr: " << holder->err());
  REQUIRE(code.has_value());
  CHECK(*code == kLeaseLost);
  CHECK(seconds_since(evicted_at) < 3.0);  // the next renewal (every TTL/3) finds its key gone
  CHECK(holder->err().find("released by admin") != std::string::npos);
  CHECK(eventually([&, command = command] { return !process_runs(command); }, milliseconds(5'000)));
  CHECK_FALSE(cli.held(key));

  // The record, put in the transaction that deleted the key.
  Result history = cli.run({"list", "--history", "--json"});
  INFO(history);
  REQUIRE(history.code == 0);
  const std::optional<std::string> record = list_entry(history.out, key);
  REQUIRE(record.has_value());
  CHECK(json_int(*record, "old_fence") == json_int(entry, "fence"));
  CHECK(json_int(*record, "new_fence").value_or(0) > json_int(entry, "fence").value_or(0));
  CHECK(json_str(*record, "evicted") == json_str(entry, "holder"));
}

TEST_CASE("etcd: COMMAND inherits no descriptor of dblock's or gRPC's", "[.][etcd][cli]") {
  Cli cli(/*migrate=*/false, etcd_url());
  check_command_isolated(cli, {"--key", unique_key("fds")});
}

TEST_CASE("etcd: a SIGKILLed `run --ttl 4s` frees the name about 4 s later, its etcd lease following --ttl",
          "[.][etcd][cli]") {
  Cli cli(/*migrate=*/false, etcd_url());
  const std::string key = unique_key("ttl");
  auto [holder, command] = start_sleeper(cli, {"--key", key, "--ttl", "4s"});
  const Clock::time_point killed_at = Clock::now();  // before the kill: the bound below is an upper one
  holder->signal_all(SIGKILL);
  REQUIRE(holder->wait(milliseconds(5'000)) == 1000 + SIGKILL);
  Result next = cli.run({"run", "--key", key, "--wait", "30s", "--", "true"});
  const double freed_after = seconds_since(killed_at);
  INFO(next << "\nfreed " << freed_after << " s after the kill");
  CHECK(next.code == 0);
  // The lease (4 s from its last keep-alive, at most 1.3 s before the kill), the leader's expiry
  // sweep (every 500 ms), and a CLI run's own time.
  CHECK(freed_after < 4.0 + 2.5);
}

TEST_CASE("etcd: `etcdctl lock` holding makes `run --wait 0` exit 75; once it lets go the run takes the lock",
          "[.][etcd][cli][interop]") {
  // prefix "": etcdctl's own namespace, where `etcdctl lock NAME` keeps NAME's contenders.
  const std::string url = etcd_url() + "?prefix=";
  Cli cli(/*migrate=*/false, url);
  const std::string key = "cli-etcdctl-" + std::to_string(::getpid()) + "-" +
                          std::to_string(Clock::now().time_since_epoch().count());
  // etcdctl runs the command while it holds the lock, and unlocks once the command ends.
  const std::string pid_file = cli.dir.file("etcdctl-command");
  Process holder({"etcdctl", "--endpoints", etcd_endpoint(), "lock", key, "--", "sh", "-c",
                  "echo $$ > \"$1.tmp\" && mv \"$1.tmp\" \"$1\"; exec sleep 60", "sh", pid_file},
                 cli.dir.next_log_prefix(), Process::Options{true, {}, false});
  REQUIRE(eventually([&] { return fs::exists(pid_file); }, milliseconds(15'000)));
  const std::vector<std::int64_t> command = read_numbers(read_file(pid_file));
  REQUIRE(command.size() == 1);
  Result busy = cli.run({"run", "--key", key, "--wait", "0", "--", "touch", cli.dir.file("ran")});
  INFO(busy);
  CHECK(busy.code == kNotAcquired);
  CHECK_FALSE(fs::exists(cli.dir.file("ran")));
  ::kill(static_cast<pid_t>(command[0]), SIGTERM);  // the command ends: etcdctl unlocks and exits
  INFO("etcdctl stderr: " << holder.err());
  REQUIRE(holder.wait(milliseconds(10'000)).has_value());
  Result free = cli.run({"run", "--key", key, "--wait", "10s", "--", "touch", cli.dir.file("ran")});
  INFO(free);
  CHECK(free.code == 0);
  CHECK(fs::exists(cli.dir.file("ran")));
}

}  // namespace dblock::cli_test
