// Scheduled jobs (AcquireOptions::hold_at_least), written once for every service: no window in
// which a second host runs the job; the name free once the window has passed; a release after the
// window frees it at once; force-release frees a window early.
#include <catch2/catch.hpp>

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

}  // namespace

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
          "[conformance][recipes][scheduled]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  if (!a->capabilities().hold_at_least) return;
  std::optional<Lease> run = a->try_acquire("short", job(100ms));
  REQUIRE(run);
  std::this_thread::sleep_for(300ms);  // the job outlived its window
  CHECK(run->release() == ReleaseResult::kReleased);
  std::optional<Lease> next = b->try_acquire("short", job(100ms));
  REQUIRE(next);

  // Released inside a long window: the name stays held, by nobody; force-release frees it.
  std::optional<Lease> held = a->try_acquire("long", job(60s));
  REQUIRE(held);
  CHECK(held->release() == ReleaseResult::kReleased);
  CHECK_FALSE(b->try_acquire("long"));
  REQUIRE(b->inspect("long"));
  CHECK(b->force_release("long"));
  CHECK(b->try_acquire("long"));
}
}  // namespace dblock::testing
