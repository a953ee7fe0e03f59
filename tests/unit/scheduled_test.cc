// Scheduled jobs (AcquireOptions::hold_at_least) against the in-memory reference service: a run
// inside the window is skipped and one after it runs; a release after the window frees at once;
// the disowned lease cannot be renewed; the TTL never shorter than the window; bad input.
#include <catch2/catch.hpp>

#include "core_rig.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

AcquireOptions job(std::chrono::milliseconds hold) {
  AcquireOptions options;
  options.hold_at_least = hold;
  return options;
}

TEST_CASE("scheduled job: a second run inside the window is skipped, one after it runs", "[unit][scheduled]") {
  Rig rig;
  auto host_a = rig.open();
  auto host_b = rig.open();
  const auto started = SteadyClock::now();
  std::optional<Lease> run = host_a->try_acquire("nightly", job(400ms));
  REQUIRE(run);
  CHECK(run->release() == ReleaseResult::kReleased);  // the job ended early
  CHECK_FALSE(host_b->try_acquire("nightly", job(400ms)));  // a later timer inside the window
  CHECK_FALSE(host_a->try_acquire("nightly", job(400ms)));
  REQUIRE(host_b->inspect("nightly"));  // still shown as held
  std::optional<Lease> next;
  REQUIRE(eventually([&] { return (next = host_b->try_acquire("nightly", job(400ms))).has_value(); }));
  CHECK(SteadyClock::now() - started >= 400ms);
  CHECK(next->fence() > run->fence());
}

TEST_CASE("scheduled job: a release after the window frees the name at once", "[unit][scheduled]") {
  Rig rig;
  auto m = rig.open();
  std::optional<Lease> run = m->try_acquire("nightly", job(50ms));
  REQUIRE(run);
  std::this_thread::sleep_for(100ms);  // the job outlives its minimum hold
  CHECK(run->release() == ReleaseResult::kReleased);
  CHECK(m->try_acquire("nightly", job(50ms)));
}

TEST_CASE("scheduled job: a waiter gets the name when the window ends, not at the release", "[unit][scheduled]") {
  Rig rig;
  auto a = rig.open();
  auto b = rig.open();
  const auto asked = SteadyClock::now();  // before the run began: its window ends after asked + 300 ms
  std::optional<Lease> run = a->try_acquire("nightly", job(300ms));
  REQUIRE(run);
  run->release();
  std::optional<Lease> waited = b->acquire("nightly", 10s);
  REQUIRE(waited);
  CHECK(SteadyClock::now() - asked >= 300ms);
}

TEST_CASE("scheduled job: hold_at_least out of range, shared, with permits or unsupported is refused",
          "[unit][scheduled]") {
  Rig rig;
  auto m = rig.open();
  CHECK_THROWS_AS(m->try_acquire("j", job(-1ms)), UsageError);
  CHECK_THROWS_WITH(m->try_acquire("j", job(kMaxTtl + 1ms)), Catch::Contains("7-day"));
  AcquireOptions shared = job(1s);
  shared.mode = LockMode::kShared;
  CHECK_THROWS_AS(m->try_acquire("j", shared), UsageError);
  AcquireOptions permit = job(1s);
  permit.permits = 2;
  CHECK_THROWS_AS(m->try_acquire("j", permit), UsageError);
  MemoryService::Config without;
  without.hold_at_least = false;
  auto plain = rig.open(without);
  CHECK_THROWS_AS(plain->try_acquire("j", job(1s)), UnsupportedError);
  CHECK(m->capabilities().hold_at_least);
}

TEST_CASE("scheduled job: the TTL bounds a dead host's window, so it is never shorter than the window",
          "[unit][scheduled]") {
  Rig rig;
  auto m = rig.open();
  std::optional<Lease> grown = m->try_acquire("a", job(10min));  // the default TTL grows to it
  REQUIRE(grown);
  CHECK(grown->ttl() == 10min);
  AcquireOptions longer = job(1s);
  longer.ttl = 5s;
  std::optional<Lease> kept = m->try_acquire("b", longer);
  REQUIRE(kept);
  CHECK(kept->ttl() == 5s);
  AcquireOptions shorter = job(2min);
  shorter.ttl = 1min;
  CHECK_THROWS_WITH(m->try_acquire("c", shorter), Catch::Contains("exceeds the TTL"));
}

}  // namespace
}  // namespace dblock::testing
