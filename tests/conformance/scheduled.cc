// Scheduled jobs (AcquireOptions::hold_at_least), written once for every service: no window in
// which a second host runs the job, nor after a host died mid-job; the name free once the window
// has passed, to a waiting acquire too; a release after the window frees it at once; force-release
// frees a window early.
#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <thread>

#include "context.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

AcquireOptions job(milliseconds hold) {
  AcquireOptions options;
  options.hold_at_least = hold;
  return options;
}

// Tries `name` as a scheduled job from `manager` every 50 ms until one runs or `limit` passes;
// `refused` counts the skipped tries.
std::optional<Lease> next_run(LockManager& manager, const std::string& name, milliseconds hold,
                              SteadyClock::time_point limit, int& refused) {
  for (;;) {
    if (std::optional<Lease> run = manager.try_acquire(name, job(hold))) return run;
    if (SteadyClock::now() >= limit) return std::nullopt;
    ++refused;
    std::this_thread::sleep_for(50ms);
  }
}

}  // namespace

int child_job(const std::string& prefix, const std::string& name, int hold_ms) {
  auto manager = open_manager({}, prefix);
  AcquireOptions options = job(milliseconds(hold_ms));
  options.ttl = milliseconds(hold_ms);
  // Before the run's start: its window ends after this + hold_ms.
  const SteadyClock::time_point asked = SteadyClock::now();
  std::optional<Lease> run = manager->try_acquire(name, options);
  if (!run) return 1;
  std::printf("running %lld %s\n", static_cast<long long>(run->fence()), steady_stamp(asked).c_str());
  std::fflush(stdout);
  for (std::string line; std::getline(std::cin, line);) {
  }
  return 0;
}

TEST_CASE("scheduled job: no second run inside the window; the next run after it, with a greater fence",
          "[conformance][recipes][scheduled]") {
  const std::string prefix = unique_prefix();
  auto host_a = open_manager({}, prefix);
  auto host_b = open_manager({}, prefix);
  if (!host_a->capabilities().hold_at_least) {
    CHECK_THROWS_AS(host_a->try_acquire("nightly", job(2s)), UnsupportedError);
    return;
  }
  constexpr milliseconds kWindow{2000};
  const auto started = SteadyClock::now();
  std::optional<Lease> run = host_a->try_acquire("nightly", job(kWindow));
  REQUIRE(run);
  const std::int64_t first = run->fence();
  CHECK(run->release() == ReleaseResult::kReleased);  // the job ended early
  // Every try inside the window is refused, on both hosts, until the window ends.
  int refused = 0;
  std::optional<Lease> next;
  for (const auto until = started + kWindow + 20s; !next && SteadyClock::now() < until;) {
    next = (refused % 2 == 0 ? host_b : host_a)->try_acquire("nightly", job(kWindow));
    if (!next) {
      ++refused;
      std::this_thread::sleep_for(50ms);
    }
  }
  REQUIRE(next);
  CHECK(refused > 0);
  CHECK(SteadyClock::now() - started >= kWindow - 300ms);
  CHECK(next->fence() > first);
}

TEST_CASE("scheduled job: a release after the window frees the name at once; inside it, nobody renews",
          "[conformance][recipes][scheduled][needs:schedule]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  std::optional<Lease> run = a->try_acquire("short", job(100ms));
  REQUIRE(run);
  std::this_thread::sleep_for(300ms);  // the job outlived its window
  CHECK(run->release() == ReleaseResult::kReleased);
  std::optional<Lease> next = b->try_acquire("short", job(100ms));
  REQUIRE(next);

  // Released inside a long window: the name stays held, by nobody; force-release frees it.
  std::optional<Lease> held = a->try_acquire("long", job(60s));
  REQUIRE(held);
  const std::int64_t fence = held->fence();
  CHECK(held->release() == ReleaseResult::kReleased);
  CHECK_FALSE(b->try_acquire("long"));
  const std::optional<LeaseInfo> shown = b->inspect("long");  // the closed run's window
  REQUIRE(shown);
  CHECK(shown->fence == fence);
  CHECK(shown->mode == LockMode::kExclusive);
  CHECK(b->force_release("long"));
  CHECK(b->try_acquire("long"));
}

TEST_CASE("scheduled job: a host SIGKILLed mid-job keeps the window until hold_at_least, then it is free",
          "[conformance][recipes][scheduled][faults][needs:schedule]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  // Three ZooKeeper sessions of the suite (2 s): its node goes long before the window ends.
  constexpr milliseconds kWindow{6000};
  Child host({self_path(), "--child", "job", prefix, "nightly", std::to_string(kWindow.count())});
  const std::optional<StampedLine> running_line = parse_stamped(expect_line(host, "running"));
  REQUIRE(running_line);
  const std::int64_t dead_fence = running_line->fence;
  // The run's window ends no earlier than kWindow after the child asked for it; when this process
  // reads the line is later by however long a loaded machine took.
  const SteadyClock::time_point asked = running_line->at;
  const auto running = SteadyClock::now();
  host.signal(SIGKILL);
  REQUIRE(host.wait(10s));
  int refused = 0;
  std::optional<Lease> next = next_run(*manager, "nightly", kWindow, running + kWindow + 30s, refused);
  REQUIRE(next);
  CHECK(refused > 0);
  CHECK(SteadyClock::now() >= asked + kWindow - 200ms);
  CHECK(next->fence() > dead_fence);
}

TEST_CASE("scheduled job: a waiting acquire of any kind inside the window gets the name once it has passed",
          "[conformance][recipes][scheduled][needs:schedule]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  constexpr milliseconds kWindow{1500};
  const auto started = SteadyClock::now();
  std::optional<Lease> run = a->try_acquire("nightly", job(kWindow));
  REQUIRE(run);
  const std::int64_t first = run->fence();
  CHECK(run->release() == ReleaseResult::kReleased);
  std::optional<Lease> plain = b->acquire("nightly", 20s);  // no window of its own
  REQUIRE(plain);
  CHECK(SteadyClock::now() - started >= kWindow - 300ms);
  CHECK(plain->fence() > first);
}

}  // namespace dblock::testing
