// The engine's waiting against the in-memory reference service: one case per wait strategy,
// grants, missed wake-ups, fairness, timeouts and shutdown while waiting. Polls are made slow
// (5 s) wherever the case is about a wake-up, so only the mechanism under test can end the wait
// within the bounds checked here.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <stop_token>
#include <thread>

#include "core_rig.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;
using Op = MemoryService::Op;
using SteadyClock = std::chrono::steady_clock;

// Waits for `name` on `manager` in a thread of its own.
class Waiter {
 public:
  Waiter(LockManager& manager, std::string name, std::chrono::milliseconds wait = 30s, AcquireOptions options = {})
      : thread_([this, &manager, name, wait, options] {
          try {
            lease_ = manager.acquire(name, wait, options);
          } catch (const UsageError& e) {
            error_ = e.what();
          }
          done_ = true;
        }) {}
  ~Waiter() {
    if (thread_.joinable()) thread_.join();
  }
  bool done() const { return done_.load(); }
  // Joins; the lease it got (empty: timed out or failed).
  std::optional<Lease>& result() {
    if (thread_.joinable()) thread_.join();
    return lease_;
  }
  const std::string& error() {
    if (thread_.joinable()) thread_.join();
    return error_;
  }

 private:
  std::optional<Lease> lease_;
  std::string error_;
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Once `waiting` holds, releases `held`; returns how long the waiter then took to hold the name.
SteadyClock::duration hand_off(Lease& held, Waiter& waiter, const std::function<bool()>& waiting) {
  REQUIRE(eventually(waiting));
  const auto released = SteadyClock::now();
  REQUIRE(held.release() == ReleaseResult::kReleased);
  REQUIRE(waiter.result());
  return SteadyClock::now() - released;
}

// Two processes on one store: one holds "k", the other is about to wait for it.
struct Contest {
  explicit Contest(MemoryService::Config config, ManagerOptions waiter_options = slow_polls())
      : holder(rig.open(config)), waiter(rig.open(config, std::move(waiter_options), &service)) {
    held = holder->try_acquire("k");
    REQUIRE(held);
  }

  Rig rig;
  MemoryService* service = nullptr;  // the waiter's
  std::unique_ptr<LockManager> holder;
  std::unique_ptr<LockManager> waiter;
  std::optional<Lease> held;
};

MemoryService::Config with_events(bool grants = false) {
  MemoryService::Config config;
  config.wake_events = true;
  config.grants = grants;
  return config;
}

MemoryService::Config poll_only() {
  MemoryService::Config config;
  config.fair_queue = false;
  config.holder_probe = false;
  return config;
}

TEST_CASE("wait: a release in this process wakes a waiter at once (plain backoff)", "[unit][wait]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open(poll_only(), slow_polls(), &service);
  auto held = manager->try_acquire("k");
  REQUIRE(held);
  Waiter waiter(*manager, "k");
  // Its first attempt is refused; the release may come before or after it sleeps (it polls every
  // 5 s): either way the release's wake-up ends the sleep.
  CHECK(hand_off(*held, waiter, [&] { return service->calls(Op::kTryAcquire) == 2; }) < 2s);
}

TEST_CASE("wait: a waiter never sleeps past the holder's remaining time", "[unit][wait]") {
  Rig rig;
  MemoryService* holder_service = nullptr;
  auto a = rig.open(poll_only(), {}, &holder_service);
  auto b = rig.open(poll_only(), slow_polls());
  AcquireOptions short_ttl;
  short_ttl.ttl = 150ms;
  auto held = a->try_acquire("k", short_ttl);
  REQUIRE(held);
  holder_service->refuse_renewals(true);  // the holder stops renewing: the lease expires on the service
  const auto start = SteadyClock::now();
  auto got = b->acquire("k", 10s);
  REQUIRE(got);
  CHECK(SteadyClock::now() - start < 2s);  // bounded by the 150 ms the holder had left, not the 5 s poll
  CHECK(got->fence() > held->fence());
}

TEST_CASE("wait: a service event wakes a waiter of another process", "[unit][wait][events]") {
  Contest c(with_events());
  Waiter waiter(*c.waiter, "k");
  CHECK(hand_off(*c.held, waiter, [&] { return c.service->queued("k") == 1; }) < 2s);
  CHECK(c.service->subscribed() == 0);  // subscribed while waiting only
}

TEST_CASE("wait: a grant makes the waiter the holder without an attempt of its own", "[unit][wait][events]") {
  Contest c(with_events(/*grants=*/true));
  Waiter waiter(*c.waiter, "k");
  hand_off(*c.held, waiter, [&] { return c.service->queued("k") == 1; });
  CHECK(c.service->calls(Op::kInLine) == 1);  // the event carried the lease
  auto& got = waiter.result();
  CHECK(got->fence() > c.held->fence());
  REQUIRE(got->release() == ReleaseResult::kReleased);
  CHECK(c.service->released_tags().back() == MemoryService::kQueuedTag);  // the grant's tag came back
}

TEST_CASE("wait: a forged grant event is not a lease", "[unit][wait][events]") {
  // Anyone who reaches the event channel can send a grant (any role can NOTIFY): the waiter acts
  // on it only once the service confirms it holds the name.
  Contest c(with_events(/*grants=*/true));
  Waiter waiter(*c.waiter, "k");
  REQUIRE(eventually([&] { return c.service->queued("k") == 1; }));
  c.service->forge_grant("k", 999'999'999);
  REQUIRE(eventually([&] { return c.service->calls(Op::kConfirmGrant) == 1; }));
  CHECK_FALSE(waiter.done());
  // The real hand-off still works, with the service's fence.
  REQUIRE(c.held->release() == ReleaseResult::kReleased);
  auto& got = waiter.result();
  REQUIRE(got);
  // The service's fence, not the forged one. (A waiter whose attempt races the grant may take the
  // name again with the next fence, so only the bounds are exact.)
  CHECK(got->fence() > c.held->fence());
  CHECK(got->fence() < 999'999'999);
}

TEST_CASE("wait: a missed wake-up costs a poll, not the lease", "[unit][wait][events]") {
  ManagerOptions quick;
  quick.max_poll = 50ms;
  Contest c(with_events(), quick);
  c.service->drop_events(true);
  Waiter waiter(*c.waiter, "k");
  hand_off(*c.held, waiter, [&] { return c.service->queued("k") == 1; });
  CHECK(c.service->calls(Op::kInLine) >= 2);  // found it by attempting again
}

TEST_CASE("wait: a missed grant is found on the next attempt", "[unit][wait][events]") {
  ManagerOptions quick;
  quick.max_poll = 50ms;
  Contest c(with_events(/*grants=*/true), quick);
  c.service->drop_events(true);  // the release's event never reaches the waiter
  Waiter waiter(*c.waiter, "k");
  hand_off(*c.held, waiter, [&] { return c.service->queued("k") == 1; });
  CHECK(waiter.result()->fence() > c.held->fence());
  CHECK(c.holder->inspect("k"));
}

TEST_CASE("wait: a waiter behind others with the name free polls instead of awaiting a release", "[unit][wait][events]") {
  // The waiter ahead may be gone already (it acquired and released while the join waited), so no
  // release will name this one: it must find the free name by attempting, not after max_poll (5 s).
  Contest c(with_events());
  c.service->phantom_waiter(true);
  c.service->drop_events(true);
  Waiter waiter(*c.waiter, "k");
  CHECK(hand_off(*c.held, waiter, [&] { return c.service->queued("k") == 1; }) < 2s);
}

TEST_CASE("wait: a native wait returns when it is the waiter's turn", "[unit][wait][native]") {
  MemoryService::Config native;
  native.native_wait = true;
  native.holder_probe = false;
  Contest c(native);
  Waiter waiter(*c.waiter, "k");
  CHECK(hand_off(*c.held, waiter, [&] { return c.service->calls(Op::kNativeWait) == 1; }) < 2s);
}

TEST_CASE("wait: a native wait that ends in a grant returns the lease without an attempt", "[unit][wait][native]") {
  MemoryService::Config native;
  native.native_wait = true;
  native.holder_probe = false;
  native.grants = true;
  Contest c(native);
  Waiter waiter(*c.waiter, "k");
  hand_off(*c.held, waiter, [&] { return c.service->calls(Op::kNativeWait) == 1; });
  CHECK(c.service->calls(Op::kInLine) == 1);  // the wait brought the lease
  auto& got = waiter.result();
  CHECK(got->fence() > c.held->fence());
  CHECK(got->held());
  REQUIRE(got->release() == ReleaseResult::kReleased);
  CHECK(c.service->released_tags().back() == MemoryService::kQueuedTag);  // the grant's tag came back
}

TEST_CASE("wait: the first in line polls the cheap probe and attempts once the name is free", "[unit][wait][probe]") {
  ManagerOptions probing;
  probing.min_poll = 2ms;
  probing.max_poll = 5s;
  Contest c({}, probing);
  Waiter waiter(*c.waiter, "k");
  hand_off(*c.held, waiter, [&] { return c.service->calls(Op::kProbe) >= 3; });
  CHECK(c.service->calls(Op::kInLine) == 2);  // it read while it waited; it wrote only to take the name
}

TEST_CASE("wait: hand-offs go to the longest waiter; waiters behind ask where they stand", "[unit][wait][queue]") {
  // Holder and waiters in one manager: every release wakes both waiters in-process.
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, slow_polls(), &service);
  auto held = manager->try_acquire("k");
  REQUIRE(held);
  Waiter first(*manager, "k");
  REQUIRE(eventually([&] { return service->queued("k") == 1; }));
  Waiter second(*manager, "k");
  REQUIRE(eventually([&] { return service->queued("k") == 2; }));
  REQUIRE(held->release() == ReleaseResult::kReleased);
  // The releasing side cannot take the name back while others wait.
  CHECK_FALSE(manager->try_acquire("k"));
  auto& got = first.result();
  REQUIRE(got);
  // Woken by the release too, the second asked the queue where it stands (a read) and slept on.
  REQUIRE(eventually([&] { return service->calls(Op::kPosition) >= 1; }));
  CHECK_FALSE(second.done());
  REQUIRE(got->release() == ReleaseResult::kReleased);  // wakes the second
  REQUIRE(second.result());
}

TEST_CASE("wait: a probing waiter that a release granted the lease attempts at once", "[unit][wait][probe]") {
  MemoryService::Config granting;
  granting.grants = true;  // no events, no native wait: only the probe can end the wait early
  ManagerOptions probing;
  probing.min_poll = 2ms;
  probing.max_poll = 5s;  // the queue entry is refreshed (an attempt) only every ~7 s
  Contest c(granting, probing);
  Waiter waiter(*c.waiter, "k");
  CHECK(hand_off(*c.held, waiter, [&] { return c.service->calls(Op::kProbe) >= 3; }) < 2s);
  CHECK(waiter.result()->fence() > c.held->fence());
}

TEST_CASE("wait: a queued waiter without events keeps attempting every few min_poll", "[unit][wait][queue]") {
  // Three processes, no events, no probe: the second waiter learns it is first only by attempting.
  // Its pause must not have grown long while it waited behind the first (FIFO: nobody else may
  // take the name meanwhile, so a long pause would stall the line).
  MemoryService::Config queue_only;
  queue_only.holder_probe = false;
  ManagerOptions options;
  options.min_poll = 2ms;
  options.max_poll = 5s;
  Rig rig;
  MemoryService* service = nullptr;
  auto holder = rig.open(queue_only, {}, &service);
  auto first = rig.open(queue_only, options);
  auto second = rig.open(queue_only, options);
  auto held = holder->try_acquire("k");
  REQUIRE(held);
  Waiter w1(*first, "k");
  REQUIRE(eventually([&] { return service->queued("k") == 1; }));
  Waiter w2(*second, "k");
  REQUIRE(eventually([&] { return service->queued("k") == 2; }));
  std::this_thread::sleep_for(1s);  // long enough for an uncapped backoff to reach several 100 ms
  REQUIRE(held->release() == ReleaseResult::kReleased);
  auto& got1 = w1.result();
  REQUIRE(got1);
  const auto released = SteadyClock::now();
  REQUIRE(got1->release() == ReleaseResult::kReleased);
  REQUIRE(w2.result());
  CHECK(SteadyClock::now() - released < 150ms);  // a capped pause is at most 2 x 2 ms, jittered
}

TEST_CASE("wait: a wait that runs out returns empty and leaves the line", "[unit][wait][timeout]") {
  Rig rig;
  auto a = rig.open();
  MemoryService* service = nullptr;
  auto b = rig.open({}, {}, &service);
  auto held = a->try_acquire("k");
  REQUIRE(held);
  const auto start = SteadyClock::now();
  CHECK_FALSE(b->acquire("k", 150ms));
  const auto took = SteadyClock::now() - start;
  CHECK(took >= 150ms);
  CHECK(took < 150ms + 2s);
  CHECK(service->queued("k") == 0);
  REQUIRE(held->release() == ReleaseResult::kReleased);
  CHECK(b->try_acquire("k"));  // nobody left in line ahead of a newcomer
}

TEST_CASE("wait: destroying the manager ends its waits with a usage error", "[unit][wait][shutdown]") {
  Rig rig;
  MemoryService* holder_service = nullptr;
  auto holder = rig.open({}, {}, &holder_service);
  MemoryService* service = nullptr;
  auto manager = rig.open({}, slow_polls(), &service);
  auto held = holder->try_acquire("k");
  REQUIRE(held);
  Waiter waiter(*manager, "k", kWaitForever);
  REQUIRE(eventually([&] { return service->queued("k") == 1; }));
  const auto start = SteadyClock::now();
  manager.reset();
  CHECK(waiter.error().find("shutting down") != std::string::npos);
  CHECK(SteadyClock::now() - start < 2s);
  CHECK(holder_service->queued("k") == 0);  // it left the line on the way out
}

TEST_CASE("wait: a stop request ends a waiting acquire without another attempt; the other waiters wait on",
          "[unit][wait][stop]") {
  for (const MemoryService::Config& config : {MemoryService::Config{}, with_events(), poll_only()}) {
    INFO("wake events " << config.wake_events << ", queue " << config.fair_queue);
    Rig rig;
    auto holder = rig.open(config);
    MemoryService* service = nullptr;
    auto manager = rig.open(config, slow_polls(), &service);
    auto held = holder->try_acquire("k");
    REQUIRE(held);
    const Op attempt_op = config.fair_queue ? Op::kInLine : Op::kTryAcquire;
    std::stop_source stop_first;  // only to end the case without waiting out a 5 s poll
    AcquireOptions first_options;
    first_options.stop = stop_first.get_token();
    Waiter first(*manager, "k", kWaitForever, first_options);
    REQUIRE(eventually([&] { return service->calls(attempt_op) == 1; }));
    std::stop_source stop;
    AcquireOptions stoppable;
    stoppable.stop = stop.get_token();
    Waiter second(*manager, "k", kWaitForever, stoppable);
    REQUIRE(eventually([&] { return service->calls(attempt_op) == 2; }));
    if (config.fair_queue) REQUIRE(eventually([&] { return service->queued("k") == 2; }));

    const auto start = SteadyClock::now();
    stop.request_stop();
    CHECK_FALSE(second.result());  // polls are 5 s apart: only the stop ends it this soon
    CHECK(SteadyClock::now() - start < 2s);
    CHECK(second.error().empty());
    CHECK(service->calls(attempt_op) <= 3);  // at most the first waiter's attempt on the wake-up
    if (config.fair_queue) CHECK(eventually([&] { return service->queued("k") == 1; }));  // it left the line
    CHECK_FALSE(first.done());
    stop_first.request_stop();
    CHECK_FALSE(first.result());
    REQUIRE(held->release() == ReleaseResult::kReleased);

    // Stopped before the call: one attempt, no wait.
    auto again = holder->try_acquire("k2");
    REQUIRE(again);
    const int before = service->calls(Op::kTryAcquire) + service->calls(Op::kInLine);
    CHECK_FALSE(manager->acquire("k2", kWaitForever, stoppable));
    CHECK(service->calls(Op::kTryAcquire) + service->calls(Op::kInLine) == before + 1);
  }
}

TEST_CASE("wait: a waiter rides over transient faults of the service until its deadline", "[unit][wait][faults]") {
  using Fault = MemoryService::Fault;
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);

  // Unreachable three times, then up: the wait goes on and acquires.
  service->fail_attempts(3, Fault::kUnreachable);
  auto start = SteadyClock::now();
  auto lease = manager->acquire("k", 10s);
  REQUIRE(lease);
  CHECK(service->calls(Op::kInLine) == 4);
  CHECK(SteadyClock::now() - start < 5s);  // 50 + 100 + 200 ms of pauses, jittered
  REQUIRE(lease->release() == ReleaseResult::kReleased);

  // An attempt whose outcome is unknown is repeated (attempts are idempotent).
  service->fail_attempts(1, Fault::kInDoubt);
  lease = manager->acquire("k", 10s);
  REQUIRE(lease);
  REQUIRE(lease->release() == ReleaseResult::kReleased);

  // A fault that outlasts the wait: the error that kept it from acquiring, at the deadline.
  service->fail_attempts(1'000'000, Fault::kUnreachable);
  start = SteadyClock::now();
  CHECK_THROWS_AS(manager->acquire("k", 600ms), ConnectionError);
  const auto took = SteadyClock::now() - start;
  CHECK(took >= 600ms);
  CHECK(took < 600ms + 2s);

  // A single attempt is not a wait: the fault is reported at once.
  start = SteadyClock::now();
  CHECK_THROWS_AS(manager->try_acquire("k"), ConnectionError);
  CHECK(SteadyClock::now() - start < 500ms);
  service->fail_attempts(0);
}

TEST_CASE("wait: a wait ended by a fault leaves its queue entry to expire instead of calling again",
          "[unit][wait][faults][deadline]") {
  Rig rig;
  auto manager = rig.open();
  auto held = manager->try_acquire("k");
  REQUIRE(held);
  MemoryService* service = nullptr;  // the waiter's
  auto waiter = rig.open({}, {}, &service);
  std::atomic<bool> faulted{false};
  std::thread waiting([&] {
    try {
      waiter->acquire("k", 1500ms);
    } catch (const ConnectionError&) {
      faulted = true;
    }
  });
  REQUIRE(eventually([&] { return service->queued("k") == 1; }));
  service->fail_attempts(1'000'000);  // from now on the service is unreachable
  waiting.join();
  service->fail_attempts(0);
  CHECK(faulted);
  // Leaving would be one more call on a service that just failed, past the caller's deadline.
  CHECK(service->calls(Op::kLeave) == 0);
  CHECK(service->queued("k") == 1);
}

TEST_CASE("wait: a fault that waiting cannot cure is reported at once", "[unit][wait][faults]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  service->fail_attempts(1, MemoryService::Fault::kPermission);
  const auto start = SteadyClock::now();
  CHECK_THROWS_AS(manager->acquire("k", 10s), PermissionError);
  CHECK(SteadyClock::now() - start < 1s);
  CHECK(service->calls(Op::kInLine) == 1);
  CHECK(manager->acquire("k", 10s));
}

TEST_CASE("wait: every service call carries its deadline", "[unit][wait][deadline]") {
  using TimePoint = std::chrono::steady_clock::time_point;
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  // `deadline` within [before, after] + offset: the engine took "now" somewhere in between.
  auto between = [](TimePoint deadline, TimePoint before, TimePoint after, std::chrono::milliseconds offset) {
    return deadline >= before + offset && deadline <= after + offset;
  };

  // A single attempt gets the least time a call is given.
  auto before = SteadyClock::now();
  auto lease = manager->try_acquire("k");
  auto after = SteadyClock::now();
  REQUIRE(lease);
  CHECK(between(service->last_deadline(Op::kTryAcquire), before, after, 2s));
  // A release gets the lease's safe-until.
  const TimePoint safe = lease->safe_until();
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  // (Within 1 ms: safe-until is kept on the boot clock and read back as a steady_clock point.)
  CHECK(abs(service->last_deadline(Op::kRelease) - safe) <= 1ms);

  // An attempt of a wait gets the wait's deadline; of a wait without end, 30 s at most.
  before = SteadyClock::now();
  lease = manager->acquire("k", 10s);
  after = SteadyClock::now();
  REQUIRE(lease);
  CHECK(between(service->last_deadline(Op::kInLine), before, after, 10s));
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  before = SteadyClock::now();
  lease = manager->acquire("k", kWaitForever);
  after = SteadyClock::now();
  REQUIRE(lease);
  CHECK(between(service->last_deadline(Op::kInLine), before, after, 30s));

  // A renewal gets the safe-until it extends: 30 s ahead here, not the 2 s floor.
  ManagerOptions eager;
  eager.renew_interval = 50ms;
  MemoryService* renewing = nullptr;
  auto renewer = rig.open({}, eager, &renewing);
  auto renewed = renewer->try_acquire("r");
  REQUIRE(renewed);
  const TimePoint first_safe = renewed->safe_until();
  REQUIRE(eventually([&] { return renewing->calls(Op::kRenew) >= 1; }));
  const TimePoint renew_deadline = renewing->last_deadline(Op::kRenew);
  CHECK(renew_deadline >= first_safe - 1ms);  // the safe-until of the renewal's time: only grows
  CHECK(renew_deadline <= renewed->safe_until() + 1ms);

  // Outside a call the engine sets none.
  CHECK(call_deadline() == TimePoint::max());
}

}  // namespace
}  // namespace dblock::testing
