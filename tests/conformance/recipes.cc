// The recipes above the engine, written once for every service: leader election (dblock/election.h)
// and the read-write policy of shared leases.
// One leader at a time; terms (fences) strictly increasing across resignation, a leader's SIGKILL
// and its SIGSTOP; a leader stopped past its lease finds itself no longer leader when it resumes.
#include <catch2/catch.hpp>
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "context.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

int child_elect(const std::string& prefix, const std::string& name, int ttl_ms) {
  auto manager = open_manager({}, prefix);
  std::mutex out;
  auto say = [&out](const std::string& line) {
    std::lock_guard<std::mutex> lock(out);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  };
  ElectionOptions options;
  options.ttl = milliseconds(ttl_ms);
  options.on_elected = [&](const Leadership& won) { say("elected " + std::to_string(won.term)); };
  options.on_revoked = [&](const Revocation& r) {
    say(std::string(r.resigned ? "resigned " : "revoked ") + std::to_string(r.term));
  };
  // "since <stamp>": a lower bound for when a lease this campaign wins was sent; said before the
  // campaign starts, so before any "elected".
  say("since " + steady_stamp(SteadyClock::now()));
  Election election(*manager, name, options);
  say("campaigning");
  for (std::string line; std::getline(std::cin, line);) {
    if (line == "status") say(std::string("status leader=") + (election.is_leader() ? "1" : "0"));
  }
  return 0;
}

namespace {

std::int64_t term_of(const std::string& line) { return std::stoll(line.substr(line.find(' ') + 1)); }

}  // namespace

TEST_CASE("election: one leader at a time; a resignation hands over with a greater term",
          "[conformance][recipes][election]") {
  const std::string prefix = unique_prefix();
  ManagerOptions a_options, b_options;
  a_options.holder = "candidate-a";
  b_options.holder = "candidate-b";
  auto a = open_manager(a_options, prefix);
  auto b = open_manager(b_options, prefix);
  CHECK_FALSE(current_leader(*a, "leader"));
  Election ea(*a, "leader");
  REQUIRE(ea.await_leadership(20s));
  Election eb(*b, "leader");
  CHECK_FALSE(eb.await_leadership(300ms));
  const std::int64_t first = *ea.term();
  const std::optional<Leader> seen = current_leader(*b, "leader");
  REQUIRE(seen);
  CHECK(seen->holder == "candidate-a");
  CHECK(seen->term == first);

  ea.resign();
  CHECK_FALSE(ea.is_leader());
  REQUIRE(eb.await_leadership(20s));
  CHECK(*eb.term() > first);
  CHECK(current_leader(*a, "leader")->holder == "candidate-b");
}

TEST_CASE("election: a SIGKILLed leader is replaced after its TTL, a SIGSTOPped one is revoked; terms only grow",
          "[conformance][recipes][election][faults]") {
  const std::string prefix = unique_prefix();
  const milliseconds ttl = capped_ttl(1500ms);
  auto manager = open_manager({}, prefix);
  const std::string ttl_arg = std::to_string(ttl.count());

  // 1. A leader SIGKILLed: the waiting candidate leads once its lease ran out, not before.
  // Its lease lives on the service at least a TTL past the start of its campaign; the kill, seen
  // here after however long a loaded machine took, cannot bound the take-over from below.
  Child first({self_path(), "--child", "elect", prefix, "leader", ttl_arg});
  const SteadyClock::time_point campaigned{std::chrono::nanoseconds(term_of(expect_line(first, "since")))};
  const std::int64_t t1 = term_of(expect_line(first, "elected"));
  Election here(*manager, "leader", ElectionOptions{ttl, {}, {}});
  CHECK_FALSE(here.await_leadership(100ms));
  first.signal(SIGKILL);
  const auto killed = SteadyClock::now();
  REQUIRE(first.wait(10s));
  REQUIRE(here.await_leadership(ttl + 20s));
  CHECK(SteadyClock::now() >= campaigned + ttl - 200ms);
  CHECK(SteadyClock::now() - killed <= ttl + 10s);
  const std::int64_t t2 = *here.term();
  CHECK(t2 > t1);

  // 2. The next leader SIGSTOPped past its TTL: another candidate leads; resumed, the stopped one
  //    is not leader, and says it was revoked.
  Child second({self_path(), "--child", "elect", prefix, "leader", ttl_arg});
  expect_line(second, "campaigning");
  here.resign();
  const std::int64_t t3 = term_of(expect_line(second, "elected"));
  CHECK(t3 > t2);
  auto other = open_manager({}, prefix);
  Election next(*other, "leader", ElectionOptions{ttl, {}, {}});
  second.signal(SIGSTOP);
  REQUIRE(next.await_leadership(ttl + 20s));
  const std::int64_t t4 = *next.term();
  CHECK(t4 > t3);
  second.signal(SIGCONT);
  second.write_line("status");
  // Its answer and its revocation, in either order.
  std::string status, revoked;
  for (const auto until = SteadyClock::now() + 20s; (status.empty() || revoked.empty()) && SteadyClock::now() < until;) {
    const std::optional<std::string> line = second.read_line(20s);
    if (!line) break;
    if (line->rfind("status", 0) == 0) status = *line;
    if (line->rfind("revoked", 0) == 0) revoked = *line;
  }
  CHECK(status == "status leader=0");
  REQUIRE_FALSE(revoked.empty());
  CHECK(term_of(revoked) == t3);
  CHECK(next.is_leader());
  CHECK(current_leader(*manager, "leader")->term == t4);
}

// ---- read-write policy ------------------------------------------------------------------------

namespace {

// A shared lease of `name` taken (and at once given back) by `manager` within `wait`: whether it was.
bool reader_gets_in(LockManager& manager, const std::string& name, milliseconds wait, bool fair = true) {
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  shared.fair = fair;
  std::optional<Lease> lease = wait.count() == 0 ? manager.try_acquire(name, shared) : manager.acquire(name, wait, shared);
  return lease.has_value();
}

}  // namespace

TEST_CASE("read-write policy: no reader overtakes a waiting writer (try, fair or not); it writes once the readers leave",
          "[conformance][recipes][shared][rw][needs:shared]") {
  const std::string prefix = unique_prefix();
  auto readers = open_manager({}, prefix);
  auto writers = open_manager({}, prefix);
  auto late = open_manager({}, prefix);
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  auto first_reader = readers->try_acquire("rw", shared);
  REQUIRE(first_reader);
  CHECK(reader_gets_in(*late, "rw", 0ms));  // readers share while no writer waits

  std::optional<Lease> written;
  std::thread writer([&] { written = writers->acquire("rw", 30s); });
  // Once the writer waits in line, a reader asking now is refused (it polls until then: a reader
  // that gets in before the writer queued is given back at once).
  const bool queued = [&] {
    for (const auto until = SteadyClock::now() + 10s; SteadyClock::now() < until;) {
      if (!reader_gets_in(*late, "rw", 0ms)) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }();
  CHECK(queued);
  CHECK_FALSE(reader_gets_in(*late, "rw", 0ms));                 // try_acquire
  CHECK_FALSE(reader_gets_in(*late, "rw", 300ms));               // a waiting reader queues behind it
  CHECK_FALSE(reader_gets_in(*late, "rw", 300ms, /*fair=*/false));  // outside the line: still yields
  CHECK(first_reader->release() == ReleaseResult::kReleased);
  writer.join();
  REQUIRE(written);
  CHECK_FALSE(reader_gets_in(*late, "rw", 0ms));  // excluded while it writes
  CHECK(written->release() == ReleaseResult::kReleased);
  CHECK(reader_gets_in(*late, "rw", 5s));
}

}  // namespace dblock::testing
