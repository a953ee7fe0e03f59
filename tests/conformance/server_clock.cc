// The stepped-server-clock case of the conformance suite: a server whose wall clock is stepped
// while a lease is held (libfaketime preloaded into a second server the case starts). The engine
// compares how far the server's clock moved between two renewals with how far this host's did,
// reports a step (ClockJumpError through on_background_error), and keeps the lease in doubt until
// the next renewal, made at once, confirms it. Services without a server (SQLite) skip it: their
// clock is this machine's boot clock.
#include <catch2/catch.hpp>
#include <sys/stat.h>

#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "context.h"

namespace dblock::testing {

using namespace std::chrono_literals;

namespace {

void write_offset(const std::string& file, const std::string& offset) {
  {
    std::ofstream out(file + ".tmp", std::ios::trunc);
    out << offset << "\n";
    REQUIRE(out.good());
  }
  ::chmod((file + ".tmp").c_str(), 0644);  // the server runs as its own user
  REQUIRE(std::rename((file + ".tmp").c_str(), file.c_str()) == 0);
}

// Waits (bounded) for `n` more renewals of `lease`: its service-clock expiry changes each time.
bool renewed_times(const Lease& lease, int n) {
  std::int64_t seen = lease.expires_at_us();
  for (int i = 0; i < n; ++i) {
    const auto until = std::chrono::steady_clock::now() + 10s;
    while (lease.expires_at_us() == seen) {
      if (std::chrono::steady_clock::now() > until) return false;
      std::this_thread::sleep_for(10ms);
    }
    seen = lease.expires_at_us();
  }
  return true;
}

}  // namespace

TEST_CASE("a stepped server clock is reported, and the lease stays held once a renewal confirms it",
          "[conformance][clock][needs:stepped-clock]") {
  const std::string clock_file = "/tmp/dblock-test-clock-" + std::to_string(::getpid()) + ".offset";
  write_offset(clock_file, "+0");
  const Context::SteppedServer server = context().start_stepped_server(clock_file);
  std::mutex mutex;
  std::vector<std::string> jumps;
  ManagerOptions options;
  options.table_prefix = unique_prefix();
  options.reaper = false;
  options.on_background_error = [&](const Error& e) {
    if (dynamic_cast<const ClockJumpError*>(&e) == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex);
    jumps.push_back(e.what());
  };
  auto manager = dblock::open(server.url, options);
  const auto reported = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return jumps;
  };
  AcquireOptions acquire;
  acquire.ttl = 6s;  // renewed every 2 s
  auto lease = manager->try_acquire("stepped", acquire);
  REQUIRE(lease);
  REQUIRE(renewed_times(*lease, 2));
  CHECK(reported().empty());  // a clock that was not stepped is consistent

  // Forward by 3 s: the lease, renewed under 2 s ago, still lives on the server (6 s TTL).
  write_offset(clock_file, "+3");
  REQUIRE(renewed_times(*lease, 2));  // the renewal that sees the step, and the one confirming it
  std::vector<std::string> seen = reported();
  REQUIRE(seen.size() == 1);
  INFO(seen[0]);
  CHECK(seen[0].find("moved +") != std::string::npos);
  CHECK(seen[0].find("'stepped'") != std::string::npos);
  CHECK_FALSE(lease->lost());

  // Back by 4 s (to -1 s): reported too; a clock stepped back only makes the server hold it longer.
  write_offset(clock_file, "-1");
  REQUIRE(renewed_times(*lease, 2));
  seen = reported();
  REQUIRE(seen.size() == 2);
  INFO(seen[1]);
  CHECK(seen[1].find("moved -") != std::string::npos);
  CHECK_FALSE(lease->lost());
  CHECK(lease->release() == ReleaseResult::kReleased);
  manager.reset();
  std::remove(clock_file.c_str());
}

}  // namespace dblock::testing
