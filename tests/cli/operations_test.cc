// Black-box tests of what operations use: `dblock run --metrics-textfile` (node_exporter's
// textfile collector) and `dblock exporter` (a /metrics endpoint), checked with the real
// promtool and curl (Debian's prometheus and curl packages; without them these cases fail).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "cli_rig.h"

using namespace dblock::cli_test;  // NOLINT: the rig's helpers, in every case below

namespace {

inline constexpr int kCannotCreate = 73;

// A TCP port on 127.0.0.1 that was free a moment ago.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  REQUIRE(fd >= 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  ::close(fd);
  return ntohs(addr.sin_port);
}

// `promtool check metrics` on `text` (its stdin): the result.
Result promtool_check(Cli& cli, const std::string& text) {
  const std::string file = cli.dir.file("promtool-input");
  std::ofstream(file) << text;
  return cli.exec({"sh", "-c", "promtool check metrics < \"$1\"", "sh", file});
}

// curl's status code and body for `method` on `url` (bounded: 15 s).
std::pair<int, std::string> http(Cli& cli, const std::string& method, const std::string& url) {
  const Result r = cli.exec({"curl", "-sS", "--max-time", "15", "-X", method, "-o", "-", "-w", "\n%{http_code}", url});
  INFO(r);
  REQUIRE(r.code == 0);
  const auto last = r.out.rfind('\n');
  return {std::stoi(r.out.substr(last + 1)), r.out.substr(0, last)};
}

// The value of the sample line that starts with `series` ("name{labels}"), or nullopt.
std::optional<double> sample(const std::string& text, const std::string& series) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return std::nullopt;
}

// Starts an exporter on a free port and waits until it answers; `base` is its http://host:port.
std::unique_ptr<Process> start_exporter(Cli& cli, const std::vector<std::string>& url_args, std::string& base) {
  const int port = free_port();
  base = "http://127.0.0.1:" + std::to_string(port);
  std::vector<std::string> argv = {kCli};
  argv.insert(argv.end(), url_args.begin(), url_args.end());
  argv.insert(argv.end(), {"exporter", "--listen", "127.0.0.1:" + std::to_string(port)});
  Process::Options options;
  options.new_group = true;
  auto exporter = std::make_unique<Process>(argv, cli.dir.next_log_prefix(), options);
  REQUIRE(eventually([&] { return exporter->err().find("serving") != std::string::npos || exporter->poll(); },
                     milliseconds(15'000)));
  INFO(exporter->err());
  REQUIRE_FALSE(exporter->poll());
  return exporter;
}

}  // namespace

TEST_CASE("run --metrics-textfile: the job's figures, whole, accepted by promtool; a lock name with quote and "
          "backslash escaped",
          "[cli][sqlite][metrics]") {
  Cli cli;
  const std::string file = cli.dir.file("job.prom");
  const std::string key = "nightly \"a\\b\" \xc3\xa9t\xc3\xa9";
  Result r = cli.run({"run", "--key", key, "--metrics-textfile", file, "--", "sh", "-c",
                      "echo $DBLOCK_FENCE > \"$1\"; exit 3", "sh", cli.dir.file("fence")});
  INFO(r);
  REQUIRE(r.code == 3);
  const std::string text = read_file(file);
  INFO(text);
  const Result check = promtool_check(cli, text);
  INFO(check);
  CHECK(check.code == 0);
  const std::string label = "{lock=\"nightly \\\"a\\\\b\\\" \xc3\xa9t\xc3\xa9\"}";
  CHECK(sample(text, "dblock_run_acquired" + label) == 1.0);
  CHECK(sample(text, "dblock_run_exit_status" + label) == 3.0);
  CHECK(sample(text, "dblock_run_lost" + label) == 0.0);
  CHECK(sample(text, "dblock_run_fence" + label) == std::stod(read_file(cli.dir.file("fence"))));
  CHECK(sample(text, "dblock_run_hold_seconds" + label).value_or(-1) >= 0.0);
  const double ended = sample(text, "dblock_run_end_time_seconds" + label).value_or(0);
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(ended <= now);
  CHECK(ended > now - 60);
  for (const auto& entry : fs::directory_iterator(cli.dir.path())) {
    CHECK(entry.path().filename().string().find(".tmp") == std::string::npos);  // no temporary left
  }
}

TEST_CASE("run --metrics-textfile: a run that did not get the lock says so, with its exit status", "[cli][sqlite][metrics]") {
  Cli cli;
  auto holder = cli.start({"run", "--key", "busy", "--", "sleep", "60"});
  REQUIRE(eventually([&] { return cli.held("busy"); }, milliseconds(15'000)));
  const std::string file = cli.dir.file("skipped.prom");
  Result r = cli.run({"run", "--key", "busy", "--wait", "300ms", "--skipped-exit", "0", "--metrics-textfile", file,
                      "--", "touch", cli.dir.file("ran")});
  INFO(r);
  CHECK(r.code == 0);
  CHECK_FALSE(fs::exists(cli.dir.file("ran")));
  const std::string text = read_file(file);
  INFO(text);
  CHECK(promtool_check(cli, text).code == 0);
  CHECK(sample(text, "dblock_run_acquired{lock=\"busy\"}") == 0.0);
  CHECK(sample(text, "dblock_run_exit_status{lock=\"busy\"}") == 0.0);
  CHECK(sample(text, "dblock_run_wait_seconds{lock=\"busy\"}").value_or(0) >= 0.3);
  CHECK_FALSE(sample(text, "dblock_run_fence{lock=\"busy\"}"));
  holder->signal(SIGTERM);
  CHECK(holder->wait(milliseconds(10'000)) == 128 + SIGTERM);
}

TEST_CASE("run --metrics-textfile: a directory that cannot take the file exits 73 before the lock is taken; a write "
          "that fails after COMMAND is a warning",
          "[cli][sqlite][metrics]") {
  Cli cli;
  fs::create_directory(cli.dir.file("plain"));
  std::ofstream(cli.dir.file("plain/file")) << "x";
  for (const std::string& bad : {cli.dir.file("missing/job.prom"), cli.dir.file("plain/file/job.prom"),
                                 cli.dir.file("plain")}) {
    Result r = cli.run({"run", "--key", "k", "--metrics-textfile", bad, "--", "touch", cli.dir.file("ran")});
    INFO(r);
    CHECK(r.code == kCannotCreate);
    CHECK(r.err.find("--metrics-textfile '" + bad + "'") != std::string::npos);
    CHECK(r.err.find("not taking lock 'k'") != std::string::npos);
    CHECK_FALSE(fs::exists(cli.dir.file("ran")));
  }
  CHECK_FALSE(cli.held("k"));
  Result empty = cli.run({"run", "--key", "k", "--metrics-textfile=", "--", "true"});
  CHECK(empty.code == kUsage);
  Result elect = cli.run({"elect", "--key", "k", "--metrics-textfile", cli.dir.file("e.prom"), "--", "true"});
  CHECK(elect.code == kUsage);

  // COMMAND removes the directory: the figures cannot be written; COMMAND's status stands.
  const std::string gone = cli.dir.file("gone");
  fs::create_directory(gone);
  Result late = cli.run({"run", "--key", "k", "--metrics-textfile", gone + "/job.prom", "--", "sh", "-c",
                         "rm -r \"$1\"; exit 5", "sh", gone});
  INFO(late);
  CHECK(late.code == 5);
  CHECK(late.err.find("warning: --metrics-textfile") != std::string::npos);
  CHECK_FALSE(fs::exists(gone));
}

TEST_CASE("exporter: serves the lock table at /metrics (promtool accepts it, names escaped); 405, 404; SIGTERM ends it",
          "[cli][sqlite][exporter]") {
  Cli cli;
  const std::string key = "a\"b\\c";
  auto holder = cli.start({"run", "--key", key, "--ttl", "20s", "--", "sleep", "60"});
  REQUIRE(eventually([&] { return cli.held(key); }, milliseconds(15'000)));
  std::string base;
  auto exporter = start_exporter(cli, {"--url", cli.url()}, base);
  auto [status, text] = http(cli, "GET", base + "/metrics");
  INFO(text);
  CHECK(status == 200);
  const Result check = promtool_check(cli, text);
  INFO(check);
  CHECK(check.code == 0);
  CHECK(sample(text, "dblock_lock_table_up") == 1.0);
  CHECK(sample(text, "dblock_lock_holders{name=\"a\\\"b\\\\c\",mode=\"exclusive\"}") == 1.0);
  const double expires_in = sample(text, "dblock_lock_expires_in_seconds{name=\"a\\\"b\\\\c\"}").value_or(-1);
  CHECK(expires_in > 0);
  CHECK(expires_in <= 20);
  CHECK(sample(text, "dblock_lock_age_seconds{name=\"a\\\"b\\\\c\"}").value_or(-1) >= 0);
  CHECK(sample(text, "dblock_lock_waiters{name=\"a\\\"b\\\\c\"}") == 0.0);
  CHECK(sample(text, "dblock_oldest_unreaped_seconds") == 0.0);
  CHECK(sample(text, "dblock_exporter_scrapes_total") == 1.0);
  CHECK(text.find("dblock_acquires_total{service=\"sqlite\"") != std::string::npos);  // its own figures

  CHECK(http(cli, "POST", base + "/metrics").first == 405);
  // A POST without a body or a length is answered at once, not after the server's 5 s read timeout.
  const Result bodiless = cli.exec({"curl", "-sS", "--max-time", "15", "-X", "POST", "-H", "Content-Length:", "-o",
                                    "/dev/null", "-w", "%{http_code}", base + "/metrics"});
  INFO(bodiless);
  CHECK(bodiless.out == "405");
  CHECK(bodiless.seconds < 4.0);
  CHECK(http(cli, "DELETE", base + "/metrics").first == 405);
  CHECK(http(cli, "GET", base + "/").first == 404);
  CHECK(http(cli, "GET", base + "/metricsx").first == 404);
  CHECK(http(cli, "PUT", base + "/other").first == 404);

  exporter->signal(SIGTERM);
  CHECK(exporter->wait(milliseconds(10'000)) == 0);
  holder->signal(SIGTERM);
  CHECK(holder->wait(milliseconds(10'000)) == 128 + SIGTERM);
}

TEST_CASE("exporter: a malformed --listen exits 64; a port in use exits 69 saying so", "[cli][sqlite][exporter]") {
  Cli cli;
  for (const char* bad : {"9464", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:http", ":9464", "[::1:9464"}) {
    Result r = cli.run({"exporter", "--listen", bad});
    INFO(bad << ": " << r);
    CHECK(r.code == kUsage);
    CHECK(r.err.find("--listen") != std::string::npos);
  }
  Result none = cli.run({"exporter"});
  CHECK(none.code == kUsage);
  std::string base;
  auto first = start_exporter(cli, {"--url", cli.url()}, base);
  Result second = cli.run({"exporter", "--listen", base.substr(7)});
  INFO(second);
  CHECK(second.code == kUnavailable);
  CHECK(second.err.find("in use") != std::string::npos);
  first->signal(SIGINT);
  CHECK(first->wait(milliseconds(10'000)) == 0);
}

TEST_CASE("PostgreSQL: an exporter whose server stalls still answers, says the lock table failed, and prints no password",
          "[.][postgresql][cli][exporter]") {
  Cli cli(/*migrate=*/true, postgresql_url());
  const LoopbackUrl at = split_loopback(cli.url());
  dblock::testing::TcpRelay relay(DBLOCK_TCP_RELAY, at.port);
  // A password the server does not ask for (trust), so that it would show if anything printed it.
  const std::string with_password = at.before.substr(0, at.before.find("://") + 3) + "postgres:s3cret-pw@" +
                                    relay.address() + at.after + "?detect_pooler=0";
  std::string base;
  auto exporter = start_exporter(cli, {"--url", with_password}, base);
  CHECK(sample(http(cli, "GET", base + "/metrics").second, "dblock_lock_table_up") == 1.0);
  relay.pause();
  const auto asked = Clock::now();
  auto [status, text] = http(cli, "GET", base + "/metrics");
  INFO(text);
  CHECK(seconds_since(asked) < 12.0);  // the scrape's 5 s deadline, not the stalled server, bounds it
  CHECK(status == 200);
  CHECK(sample(text, "dblock_lock_table_up") == 0.0);
  CHECK(text.find("# lock table: ") != std::string::npos);
  CHECK(sample(text, "dblock_exporter_lock_table_errors_total") == 1.0);
  CHECK(promtool_check(cli, text).code == 0);
  CHECK(text.find("s3cret-pw") == std::string::npos);
  relay.resume();
  exporter->signal(SIGTERM);
  CHECK(exporter->wait(milliseconds(15'000)) == 0);
  CHECK(exporter->err().find("s3cret-pw") == std::string::npos);
}
