// Black-box cases of the dblock command written once and run on every service: each service's
// TEST_CASE names the server its ctest entry started (tagged [postgresql], [mysql], [redis],
// [redlock], [zookeeper], [etcd]; SQLite's run by default) and calls the shared scenario.
//  * A lease answered after its safe-until: COMMAND never starts on it, and no second COMMAND
//    starts while a first still runs (SQLite and Redis here; every network service's engine path
//    is in the conformance suite, stalled_connections.cc).
//  * Opening is part of --wait: a service that is not there yet fails the run after the wait, not
//    before; one that comes up inside the wait is used; --wait 0 tries once.
#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cli_rig.h"

namespace dblock::cli_test {
namespace {

// A port on 127.0.0.1 that nothing listens on (bound once to find it, then closed).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  REQUIRE(ok);
  return ntohs(addr.sin_port);
}

// The ports of every "127.0.0.1:PORT" in `url`, in order.
std::vector<int> loopback_ports(const std::string& url) {
  std::vector<int> out;
  static const std::regex host(R"(127\.0\.0\.1:(\d+))");
  for (std::sregex_iterator it(url.begin(), url.end(), host), end; it != end; ++it) out.push_back(std::stoi((*it)[1]));
  REQUIRE_FALSE(out.empty());
  return out;
}

// `url` with its i-th loopback port replaced by ports[i].
std::string with_ports(const std::string& url, const std::vector<int>& ports) {
  std::string out;
  static const std::regex host(R"(127\.0\.0\.1:(\d+))");
  std::size_t i = 0, last = 0;
  for (std::sregex_iterator it(url.begin(), url.end(), host), end; it != end; ++it, ++i) {
    out += url.substr(last, static_cast<std::size_t>(it->position()) - last);
    out += "127.0.0.1:" + std::to_string(ports.at(i));
    last = static_cast<std::size_t>(it->position() + it->length());
  }
  return out + url.substr(last);
}

// One relay in front of each server `url` names, and the URL through them.
struct Relays {
  explicit Relays(const std::string& url) {
    std::vector<int> ports;
    for (int port : loopback_ports(url)) {
      relays.push_back(std::make_unique<dblock::testing::TcpRelay>(DBLOCK_TCP_RELAY, port));
      ports.push_back(relays.back()->port());
    }
    through = with_ports(url, ports);
  }
  void delay() {
    for (auto& r : relays) r->delay_replies();
  }
  void resume() {
    for (auto& r : relays) r->resume();
  }
  std::vector<std::unique_ptr<dblock::testing::TcpRelay>> relays;
  std::string through;
};

// A COMMAND that appends "<who> start <ns>" and, `hold` later, "<who> end <ns>" (CLOCK_REALTIME)
// to `log`.
std::vector<std::string> logged_command(const std::string& log, const std::string& who, const std::string& hold) {
  return {"--", "sh", "-c", "echo \"$1 start $(date +%s%N)\" >> \"$2\"; sleep \"$3\"; echo \"$1 end $(date +%s%N)\" >> \"$2\"",
          "sh", who, log, hold};
}

bool logged(const std::string& log, const std::string& line_start) {
  return read_file(log).find(line_start) != std::string::npos;
}

// Every COMMAND's start-to-end interval from `log`; fails the case on two that overlap, or on a
// start without its end.
void check_no_overlap(const std::string& log) {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> runs;
  std::istringstream in(read_file(log));
  std::string who, what;
  std::int64_t at = 0;
  while (in >> who >> what >> at) {
    INFO(read_file(log));
    REQUIRE(runs.count(who + what) == 0);  // each COMMAND runs once
    if (what == "start") runs[who].first = at;
    if (what == "end") runs[who].second = at;
  }
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (const auto& [name, span] : runs) {
    INFO(name << " in:\n" << read_file(log));
    CHECK(span.second >= span.first);
    spans.push_back(span);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t i = 1; i < spans.size(); ++i) {
    INFO("two COMMANDs at once:\n" << read_file(log));
    CHECK(spans[i].first >= spans[i - 1].second);
  }
}

// How many waiters `inspect` reports for `key` (-1: unknown, as on Redlock).
int waiters_of(Cli& cli, const std::string& key) {
  const std::optional<std::string> info = cli.inspect(key);
  if (!info) return 0;
  return static_cast<int>(json_int(*info, "waiters").value_or(-1));
}

// Waits until `key` has at least `n` waiters in line; a service that cannot say (-1) is given a
// second, the longest an open and a first attempt take here.
void await_waiters(Cli& cli, const std::string& key, int n) {
  int seen = 0;
  const bool lined_up = eventually([&] { return (seen = waiters_of(cli, key)) >= n || seen < 0; }, milliseconds(15'000));
  REQUIRE(lined_up);
  if (seen < 0) std::this_thread::sleep_for(milliseconds(1'000));
}

// The scenario for a service on a network: H holds `key` for 2 s; W waits through relays. For 6 s
// from before H lets go, every reply reaches W 3 s after the server sent it: whatever the server
// grants W in that time reaches it after its 1 s TTL ran out there. W must not start COMMAND on
// such a lease (it would be lost at once: exit 70, and on the service free for anyone); once
// replies are prompt again it takes a lease of its own, and runs its COMMAND whole. No COMMAND
// runs beside another.
void stalled_reply_scenario(const std::string& url) {
  Cli cli(/*migrate=*/true, url);
  Relays relays(url);
  const std::string key = unique_key("late");
  const std::string log = cli.dir.file("runs.log");
  const auto run_args = [&](const std::string& who, const std::string& hold) {
    std::vector<std::string> a = {"run", "--key", key, "--ttl", "1s", "--wait", "30s"};
    for (const std::string& s : logged_command(log, who, hold)) a.push_back(s);
    return a;
  };
  auto holder = cli.start(run_args("H", "2"));
  REQUIRE(eventually([&] { return logged(log, "H start"); }, milliseconds(15'000)));
  auto waiter = std::make_unique<Process>(
      [&] {
        std::vector<std::string> a = {kCli, "--url", relays.through};
        for (const std::string& s : run_args("W", "0.3")) a.push_back(s);
        return a;
      }(),
      cli.dir.next_log_prefix(), Process::Options{true, {}, false});
  await_waiters(cli, key, 1);
  relays.delay();
  std::this_thread::sleep_for(milliseconds(6'000));  // the scenario: a 6 s stretch of late replies
  relays.resume();
  INFO("H: " << holder->err() << "\nW: " << waiter->err());
  CHECK(holder->wait(milliseconds(30'000)) == 0);
  CHECK(waiter->wait(milliseconds(40'000)) == 0);
  CHECK(waiter->err().find("lost") == std::string::npos);
  check_no_overlap(log);
  CHECK(logged(log, "W end"));
}

// Opening on `url` whose servers are not there yet: --wait 0 tries once, --wait 7s fails after
// the wait (69), and servers that come up 5.5 s into a 12 s wait are used (longer than a
// service's connect timeout, 5 s by default, which must not end the wait).
void open_within_wait_scenario(const std::string& url) {
  Cli cli(/*migrate=*/true, url);
  const std::vector<int> real = loopback_ports(url);
  std::vector<int> absent;
  for (std::size_t i = 0; i < real.size(); ++i) absent.push_back(free_port());
  const std::string nowhere = with_ports(url, absent);
  const std::string key = unique_key("open");
  {
    const Result r = cli.exec({kCli, "--url", nowhere, "run", "--key", key, "--wait", "0", "--", "true"});
    INFO(r);
    CHECK(r.code == kUnavailable);
    CHECK(r.seconds < 2.0 + 1.5);  // one try within the least time an open gets (2 s)
  }
  {
    const Result r = cli.exec({kCli, "--url", nowhere, "run", "--key", key, "--wait", "7s", "--", "true"});
    INFO(r);
    CHECK(r.code == kUnavailable);
    CHECK(r.seconds >= 6.8);  // the whole wait, not the first failure nor a connect timeout
    CHECK(r.seconds < 7.0 + 3.0);
  }
  const auto started = Clock::now();
  auto run = std::make_unique<Process>(
      std::vector<std::string>{kCli, "--url", nowhere, "run", "--key", key, "--wait", "12s", "--", "true"},
      cli.dir.next_log_prefix(), Process::Options{true, {}, false});
  std::this_thread::sleep_for(milliseconds(5'500));  // the scenario: servers that come up late
  std::vector<std::unique_ptr<dblock::testing::TcpRelay>> up;
  for (std::size_t i = 0; i < real.size(); ++i) {
    up.push_back(std::make_unique<dblock::testing::TcpRelay>(DBLOCK_TCP_RELAY, real[i], absent[i]));
  }
  const std::optional<int> code = run->wait(milliseconds(30'000));
  INFO(run->err());
  CHECK(code == 0);
  CHECK(seconds_since(started) >= 5.5);
}

std::string url_of(const char* env, const char* test) { return server_url(env, test); }

}  // namespace

// ---- a lease answered after its safe-until -----------------------------------------------------

TEST_CASE("SQLite: a lease granted after its safe-until (the write lock held past the TTL) never starts COMMAND",
          "[cli][sqlite][late]") {
  Cli cli;
  const std::string key = unique_key("late");
  const std::string log = cli.dir.file("runs.log");
  // Another process holds the database's write lock for 3 s: every attempt waits for it and is
  // granted, on the file's clock, after its 1 s TTL counted from when it was made.
  const std::string db = cli.url().substr(std::string("sqlite://").size());
  auto locker = std::make_unique<Process>(
      std::vector<std::string>{"sh", "-c", "{ echo 'BEGIN IMMEDIATE;'; echo \"SELECT 'locked';\"; sleep 3; echo 'COMMIT;'; } | sqlite3 \"$1\"",
                               "sh", db},
      cli.dir.next_log_prefix(), Process::Options{});
  REQUIRE(eventually([&] { return locker->out().find("locked") != std::string::npos; }, milliseconds(10'000)));
  std::vector<std::unique_ptr<Process>> runs;
  for (const char* who : {"A", "B"}) {
    std::vector<std::string> a = {"run", "--key", key, "--ttl", "1s", "--wait", "30s"};
    for (const std::string& s : logged_command(log, who, "0.3")) a.push_back(s);
    runs.push_back(cli.start(a));
  }
  for (auto& r : runs) {
    const std::optional<int> code = r->wait(milliseconds(40'000));
    INFO(r->err());
    CHECK(code == 0);  // COMMAND ran on a lease with its whole TTL ahead, never on the late one
    CHECK(r->err().find("lost") == std::string::npos);
  }
  CHECK(locker->wait(milliseconds(10'000)) == 0);
  check_no_overlap(log);
}

TEST_CASE("Redis: a reply stalled past the TTL never starts COMMAND, nor a second one beside the first",
          "[.][redis][cli][late]") {
  stalled_reply_scenario(url_of("DBLOCK_TEST_REDIS_URL", "cli_redis"));
}

TEST_CASE("MariaDB: a lock wait that the --wait cuts ends as not acquired (75), naming the lock wait",
          "[.][mysql][cli]") {
  const std::string url = url_of("DBLOCK_TEST_MYSQL_URL", "cli_mysql");
  Cli cli(/*migrate=*/true, url);
  const std::string key = unique_key("row-locked");
  const LoopbackUrl at = split_loopback(url);
  // Another transaction holds the lock on the name's row (a gap lock where it would go) for 12 s.
  const std::string sql = "START TRANSACTION; SELECT name FROM dblock_leases WHERE name = '" + key +
                          "' FOR UPDATE; SELECT 'locked'; SELECT SLEEP(12); ROLLBACK;";
  auto bystander = std::make_unique<Process>(
      std::vector<std::string>{"mariadb", "-h", "127.0.0.1", "-P", std::to_string(at.port), "-u", "root", "-N", "-B", "--unbuffered",
                               "dblock_test", "-e", sql},
      cli.dir.next_log_prefix(), Process::Options{});
  REQUIRE(eventually([&] { return bystander->out().find("locked") != std::string::npos; }, milliseconds(10'000)));
  const Result r = cli.run({"run", "--key", key, "--wait", "4s", "--", "true"});
  INFO(r);
  CHECK(r.code == kNotAcquired);
  CHECK(r.err.find("lock wait") != std::string::npos);
  CHECK(r.seconds < 4.0 + 3.0);
}

// ---- opening is part of the wait ---------------------------------------------------------------

TEST_CASE("PostgreSQL: opening is part of --wait", "[.][postgresql][cli][open]") {
  open_within_wait_scenario(url_of("DBLOCK_TEST_POSTGRESQL_URL", "cli_postgresql"));
}

TEST_CASE("MariaDB: opening is part of --wait", "[.][mysql][cli][open]") {
  open_within_wait_scenario(url_of("DBLOCK_TEST_MYSQL_URL", "cli_mysql"));
}

TEST_CASE("Redis: opening is part of --wait", "[.][redis][cli][open]") {
  open_within_wait_scenario(url_of("DBLOCK_TEST_REDIS_URL", "cli_redis"));
}

TEST_CASE("Redlock: opening is part of --wait", "[.][redlock][cli][open]") {
  open_within_wait_scenario(url_of("DBLOCK_TEST_REDLOCK_URL", "cli_redlock"));
}

TEST_CASE("ZooKeeper: opening is part of --wait", "[.][zookeeper][cli][open]") {
  open_within_wait_scenario(url_of("DBLOCK_TEST_ZOOKEEPER_URL", "cli_zookeeper"));
}

TEST_CASE("etcd: opening is part of --wait", "[.][etcd][cli][open]") {
  open_within_wait_scenario(url_of("DBLOCK_TEST_ETCD_URL", "cli_etcd"));
}

}  // namespace dblock::cli_test
