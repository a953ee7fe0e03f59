// The engine against the in-memory reference service: acquisition, fences, release, renewal,
// lost leases, safe-until, reentrancy, the reaper and the capability plumbing. No server; seconds.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <optional>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "boot_clock.h"
#include "clock_check.h"
#include "core_rig.h"
#include "dblock/mutex.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;
using Op = MemoryService::Op;

TEST_CASE("core: try_acquire takes a free name once; fences grow across holders", "[unit][core]") {
  Rig rig;
  auto a = rig.open();
  auto b = rig.open();
  auto first = a->try_acquire("k");
  REQUIRE(first);
  CHECK(first->fence() > 0);
  CHECK_FALSE(b->try_acquire("k"));
  REQUIRE(first->release() == ReleaseResult::kReleased);
  auto second = b->try_acquire("k");
  REQUIRE(second);
  CHECK(second->fence() > first->fence());
  CHECK(b->force_release("k"));
  auto third = a->try_acquire("k");
  REQUIRE(third);
  CHECK(third->fence() > second->fence() + 1);  // the eviction superseded the evicted fence
  CHECK(second->release() == ReleaseResult::kAlreadyLost);
}

TEST_CASE("core: a force-release names the manager that forced it; no audit log, no history", "[unit][core]") {
  Rig rig;
  ManagerOptions admin;
  admin.holder = "ops@console";
  MemoryService* service = nullptr;
  auto a = rig.open();
  auto b = rig.open({}, admin, &service);
  auto held = a->try_acquire("k");
  REQUIRE(held);
  CHECK(b->force_release("k"));
  CHECK(service->forced_by() == std::vector<std::string>{"ops@console"});
  CHECK_THROWS_AS(b->force_release_history(), UnsupportedError);
}

TEST_CASE("core: ManagerOptions::holder is validated like a lock name", "[unit][core]") {
  Rig rig;
  for (const std::string& bad : {std::string("evil\x1b[31m"), std::string("two\nlines"), std::string("\xff\xfe"),
                                std::string(256, 'h')}) {
    ManagerOptions options;
    options.holder = bad;
    std::string message;
    try {
      rig.open({}, options);
    } catch (const UsageError& e) {
      message = e.what();
    }
    INFO(message);
    CHECK(message.rfind("holder ", 0) == 0);
  }
  ManagerOptions fine;
  fine.holder = "worker-7 on h\xc3\xb6st";
  CHECK(rig.open({}, fine)->try_acquire("k"));
}

TEST_CASE("core: release passes the service's tag back; a second release repeats the first result",
          "[unit][core]") {
  Rig rig;
  MemoryService* service_a = nullptr;
  MemoryService* service_b = nullptr;
  auto a = rig.open({}, {}, &service_a);
  auto b = rig.open({}, {}, &service_b);
  auto held = a->try_acquire("k");
  REQUIRE(held);
  std::optional<Lease> waited;
  std::thread waiter([&] { waited = b->acquire("k", 5s); });
  REQUIRE(eventually([&] { return service_a->queued("k") == 1; }));
  REQUIRE(held->release() == ReleaseResult::kReleased);
  waiter.join();
  REQUIRE(waited);
  CHECK(waited->release() == ReleaseResult::kReleased);
  CHECK(waited->release() == ReleaseResult::kReleased);  // idempotent: the service is not asked again
  CHECK(service_a->released_tags() == std::vector<std::uint32_t>{0});  // taken by a single attempt
  // Taken in line: the service tagged it so, and its release says so.
  CHECK(service_b->released_tags() == std::vector<std::uint32_t>{MemoryService::kQueuedTag});
}

TEST_CASE("core: renewal keeps a lease over many TTLs", "[unit][core][renew]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  AcquireOptions options;
  options.ttl = 300ms;  // renewed every 100 ms: slack for a sanitizer build's scheduling
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  const auto until = std::chrono::steady_clock::now() + 1500ms;  // 5 x TTL
  while (std::chrono::steady_clock::now() < until) {
    REQUIRE_FALSE(lease->lost());
    std::this_thread::sleep_for(10ms);
  }
  CHECK(service->calls(Op::kRenew) >= 5);
  CHECK(lease->release() == ReleaseResult::kReleased);
}

TEST_CASE("core: a refused renewal loses the lease, runs the callback and tells the service once the holder lets go",
          "[unit][core][lost]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  LostReasons reasons;
  AcquireOptions options;
  // The first renewal (at TTL/3 = 200 ms) is refused long before safe-until (~590 ms) could pass.
  options.ttl = 600ms;
  options.on_lost = reasons.callback();
  service->refuse_renewals(true);
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  REQUIRE(eventually([&] { return lease->lost(); }));
  REQUIRE(eventually([&] { return reasons.count() == 1; }));
  CHECK(reasons.last().find("refused") != std::string::npos);
  // The holder's code may still be running: nothing of the lease is given away until it lets go.
  CHECK(service->lost_leases().empty());
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
  REQUIRE(service->lost_leases().size() == 1);
  CHECK(service->lost_leases()[0].name == "k");
  CHECK(service->calls(Op::kRelease) == 0);  // a lost lease is not released in the service
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
  CHECK(service->lost_leases().size() == 1);  // told once
}

TEST_CASE("core: failing renewals end at safe-until, before the service's expiry", "[unit][core][lost]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  LostReasons reasons;
  AcquireOptions options;
  options.ttl = 100ms;
  options.on_lost = reasons.callback();
  const auto sent = std::chrono::steady_clock::now();
  auto lease = manager->try_acquire("k", options);
  const auto returned = std::chrono::steady_clock::now();
  REQUIRE(lease);
  // safe-until = send time + TTL - drift margin (TTL/100 + 2 ms), on the local clock; the send
  // time lies between `sent` and `returned`.
  CHECK(lease->safe_until() >= sent + 100ms - 3ms);
  CHECK(lease->safe_until() <= returned + 100ms - 3ms);
  service->fail_renewals(true);
  REQUIRE(eventually([&] { return reasons.count() == 1; }));
  CHECK(reasons.last().find("safe-until") != std::string::npos);
  CHECK(std::chrono::steady_clock::now() >= lease->safe_until());
  CHECK(lease->lost());
  CHECK(service->lost_leases().empty());  // still the holder's until it lets go
  lease.reset();                          // the handle dropped: as a release
  CHECK(service->lost_leases().size() == 1);
}

TEST_CASE("core: a grant answered after its safe-until is never handed out; a single try frees it at once",
          "[unit][core][lost][deadline]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  auto next = rig.open();
  AcquireOptions options;
  options.ttl = 200ms;
  // Granted 300 ms after it was sent: the service holds it until ~500 ms, the holder's safe-until
  // (from the send time) ended at ~196 ms.
  service->stall_attempts(1, 300ms);
  CHECK_FALSE(manager->try_acquire("k", options));
  CHECK(service->calls(Op::kRelease) == 1);  // freed, not left to its expiry on the service
  CHECK(next->try_acquire("k"));
}

TEST_CASE("core: within the wait, a grant answered late is asked for again and handed out with a fresh safe-until",
          "[unit][core][lost][deadline]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  AcquireOptions options;
  options.ttl = 200ms;
  service->stall_attempts(1, 300ms);
  const auto called = std::chrono::steady_clock::now();
  auto lease = manager->acquire("k", 5s, options);
  REQUIRE(lease);
  CHECK_FALSE(lease->lost());
  CHECK(service->calls(Op::kTryAcquire) + service->calls(Op::kInLine) >= 2);
  CHECK(lease->safe_until() > called + 300ms);  // from the second attempt's send time
  CHECK(service->calls(Op::kRelease) == 0);     // the same secret took it again: nothing freed
}

TEST_CASE("core: safe-until counts from before the attempt was sent, not from its answer", "[unit][core][deadline]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  AcquireOptions options;
  options.ttl = 1000ms;
  service->stall_attempts(1, 200ms);
  const auto before = std::chrono::steady_clock::now();
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  // Send time + TTL - drift margin (TTL/100 + 2 ms = 12 ms); from the answer it would be >= 1188 ms.
  CHECK(lease->safe_until() >= before + 988ms);
  CHECK(lease->safe_until() < before + 988ms + 100ms);
}

TEST_CASE("core: time suspended counts against safe-until; a suspend longer than the TTL loses the lease",
          "[unit][core][lost][clock]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  LostReasons reasons;
  AcquireOptions options;
  options.ttl = 3s;
  options.on_lost = reasons.callback();
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  REQUIRE_FALSE(lease->lost());
  // The machine "sleeps" 5 s: the boot clock moves on, steady_clock does not.
  struct Resume {
    ~Resume() { detail::add_suspended_time_for_testing(-5s); }
  } resume;
  detail::add_suspended_time_for_testing(5s);
  CHECK(lease->lost());
  CHECK(lease->safe_until() < std::chrono::steady_clock::now());
  REQUIRE(eventually([&] { return reasons.count() == 1; }));
  CHECK(reasons.last().find("safe-until") != std::string::npos);
}

TEST_CASE("core: the service's clock is checked against this host's between renewals", "[unit][core][clock]") {
  using detail::BootClock;
  using detail::ClockSample;
  using detail::clock_jump;
  const BootClock::time_point t0{std::chrono::seconds(100)};
  const ClockSample before{1'000'000, t0, t0 + 2ms};  // the service read its clock within [t0, t0 + 2 ms]
  const auto tolerance = std::chrono::microseconds(3000);
  // 10 s later on both clocks, within the two round trips: consistent.
  CHECK(clock_jump(before, {11'000'000, t0 + 10s, t0 + 10s + 2ms}, tolerance).count() == 0);
  CHECK(clock_jump(before, {11'003'000, t0 + 10s, t0 + 10s + 2ms}, tolerance).count() == 0);
  CHECK(clock_jump(before, {10'997'000, t0 + 10s, t0 + 10s + 2ms}, tolerance).count() == 0);
  // Stepped forward by 2 s: by what lies beyond the widest window (10 s + 2 ms) and the tolerance.
  CHECK(clock_jump(before, {13'000'000, t0 + 10s, t0 + 10s + 2ms}, tolerance).count() == 2'000'000 - 2'000 - 3'000);
  // Stepped back by 2 s: by what lies below the narrowest window (10 s - 2 ms) and the tolerance.
  CHECK(clock_jump(before, {9'000'000, t0 + 10s, t0 + 10s + 2ms}, tolerance).count() == -(2'000'000 - 2'000 - 3'000));
}

// A service that runs without something it normally uses says so once per manager, when the
// manager is built, and works as before.
TEST_CASE("core: what a service runs without is reported once, as a DegradedError", "[unit][core]") {
  Rig rig;
  std::vector<std::string> reported;
  std::vector<std::string> backends;
  ManagerOptions manager_options;
  manager_options.on_background_error = [&](const Error& e) {
    if (dynamic_cast<const DegradedError*>(&e) == nullptr) return;
    reported.push_back(e.what());
    backends.push_back(e.backend());
  };
  MemoryService::Config config;
  config.degraded = {"memory: no wake-ups here: waiters poll"};
  auto manager = rig.open(config, manager_options);
  REQUIRE(reported == config.degraded);  // during construction, on the constructing thread
  CHECK(backends == std::vector<std::string>{"memory"});
  auto lease = manager->try_acquire("k");
  REQUIRE(lease);
  CHECK(lease->release() == ReleaseResult::kReleased);
  CHECK(reported.size() == 1);  // not again
  reported.clear();
  auto quiet = rig.open({}, manager_options);
  CHECK(reported.empty());  // nothing is missing: nothing said
}

TEST_CASE("core: a stepped service clock is reported, and the next renewal at once confirms the lease",
          "[unit][core][clock]") {
  Rig rig;
  MemoryService* service = nullptr;
  std::mutex mutex;
  std::vector<std::string> jumps;
  ManagerOptions manager_options;
  manager_options.on_background_error = [&](const Error& e) {
    if (dynamic_cast<const ClockJumpError*>(&e) == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex);
    jumps.push_back(e.what());
  };
  auto manager = rig.open({}, manager_options, &service);
  AcquireOptions options;
  options.ttl = 900ms;  // renewed every 300 ms
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  REQUIRE(eventually([&] { return service->calls(Op::kRenew) >= 2; }));
  const auto jump_count = [&] {
    std::lock_guard<std::mutex> lock(mutex);
    return jumps.size();
  };
  CHECK(jump_count() == 0);  // an unstepped clock is consistent
  const int renewals = service->calls(Op::kRenew);
  service->step_reported_clock(500ms);
  REQUIRE(eventually([&] { return jump_count() == 1; }));
  {
    std::lock_guard<std::mutex> lock(mutex);
    INFO(jumps[0]);
    CHECK(jumps[0].find("moved +0.") != std::string::npos);
    CHECK(jumps[0].find("'k'") != std::string::npos);
  }
  // The confirming renewal follows at once (not 300 ms later), and is consistent.
  REQUIRE(eventually([&] { return service->calls(Op::kRenew) >= renewals + 2; }, 250ms));
  const auto until = std::chrono::steady_clock::now() + 700ms;
  while (std::chrono::steady_clock::now() < until) {
    REQUIRE_FALSE(lease->lost());
    std::this_thread::sleep_for(10ms);
  }
  CHECK(jump_count() == 1);
  service->step_reported_clock(-800ms);  // back
  REQUIRE(eventually([&] { return jump_count() == 2; }));
  {
    std::lock_guard<std::mutex> lock(mutex);
    CHECK(jumps[1].find("moved -0.") != std::string::npos);
  }
  CHECK_FALSE(lease->lost());
}

TEST_CASE("core: a service clock that keeps disagreeing ends the lease at safe-until, without a renewal storm",
          "[unit][core][clock]") {
  Rig rig;
  MemoryService* service = nullptr;
  std::atomic<int> jumps{0};
  ManagerOptions manager_options;
  manager_options.on_background_error = [&](const Error& e) {
    if (dynamic_cast<const ClockJumpError*>(&e) != nullptr) ++jumps;
  };
  auto manager = rig.open({}, manager_options, &service);
  LostReasons reasons;
  AcquireOptions options;
  options.ttl = 900ms;  // renewed every 300 ms
  options.on_lost = reasons.callback();
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  REQUIRE(eventually([&] { return service->calls(Op::kRenew) >= 2; }));
  const int renewals = service->calls(Op::kRenew);
  service->step_reported_clock_each_renewal(500ms);
  // No renewal confirms it, so nothing extends safe-until: lost within the TTL.
  REQUIRE(eventually([&] { return reasons.count() == 1; }, 2s));
  CHECK(reasons.last().find("safe-until") != std::string::npos);
  CHECK(jumps >= 2);
  // One immediate retry after the first step, then the usual interval: a handful of renewals in
  // under a TTL, not a loop.
  CHECK(service->calls(Op::kRenew) - renewals <= 6);
}

TEST_CASE("core: a renewal answered after safe-until does not resurrect the lease", "[unit][core][lost]") {
  Rig rig;
  MemoryService* service = nullptr;
  ManagerOptions options;
  options.drift_margin = 30ms;  // safe-until = send time + 60 ms - 30 ms
  auto manager = rig.open({}, options, &service);
  LostReasons reasons;
  AcquireOptions acquire;
  acquire.ttl = 60ms;
  acquire.on_lost = reasons.callback();
  // The first renewal (sent at 20 ms) comes back at about 45 ms: renewed on the service, whose
  // lease lives until 80 ms, but after the lease's safe-until (30 ms).
  service->set_renew_delay(25ms);
  auto lease = manager->try_acquire("k", acquire);
  REQUIRE(lease);
  REQUIRE(eventually([&] { return lease->lost(); }));
  CHECK(service->calls(Op::kRenew) <= 1);  // a resurrected lease would have been renewed again
  REQUIRE(eventually([&] { return reasons.count() == 1; }));
  CHECK(reasons.last().find("safe-until") != std::string::npos);
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
  CHECK(service->lost_leases().size() == 1);
}

TEST_CASE("core: a service granting less than the TTL bounds safe-until and renews sooner", "[unit][core][renew]") {
  Rig rig;
  MemoryService::Config config;
  config.max_grant = 300ms;  // as a session shorter than the TTL
  MemoryService* service = nullptr;
  auto manager = rig.open(config, {}, &service);
  AcquireOptions options;
  options.ttl = 10s;
  auto lease = manager->try_acquire("k", options);
  const auto returned = std::chrono::steady_clock::now();
  REQUIRE(lease);
  CHECK(lease->safe_until() < returned + 300ms);
  // Renewed at a third of what was granted (every 100 ms), so the lease lives on.
  const auto until = std::chrono::steady_clock::now() + 1200ms;
  while (std::chrono::steady_clock::now() < until) {
    REQUIRE_FALSE(lease->lost());
    std::this_thread::sleep_for(10ms);
  }
  CHECK(service->calls(Op::kRenew) >= 4);
  CHECK(lease->safe_until() < std::chrono::steady_clock::now() + 300ms);
}

TEST_CASE("core: a lost event from the service loses the lease on the renewal thread", "[unit][core][lost]") {
  Rig rig;
  MemoryService::Config config;
  config.wake_events = true;
  MemoryService* service = nullptr;
  auto manager = rig.open(config, {}, &service);
  LostReasons reasons;
  AcquireOptions options;
  options.ttl = 10s;
  options.on_lost = reasons.callback();
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  service->push_lost("k");
  REQUIRE(eventually([&] { return reasons.count() == 1; }));
  CHECK(reasons.last().find("reported") != std::string::npos);
  CHECK(lease->lost());
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
}

TEST_CASE("core: reentrancy counts holds; the last release releases in the service", "[unit][core][reentrant]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  AcquireOptions options;
  options.reentrant = true;
  auto outer = manager->acquire("k", 1s, options);
  REQUIRE(outer);
  auto inner = manager->acquire("k", 1s, options);
  REQUIRE(inner);
  CHECK(inner->fence() == outer->fence());
  CHECK(outer->hold_count() == 2);
  CHECK(inner->release() == ReleaseResult::kReleased);
  CHECK(service->calls(Op::kRelease) == 0);
  CHECK(outer->release() == ReleaseResult::kReleased);
  CHECK(service->calls(Op::kRelease) == 1);
}

TEST_CASE("core: waiting on one's own hold is a usage error; trying once is a refusal", "[unit][core][reentrant]") {
  Rig rig;
  auto manager = rig.open();
  auto held = manager->try_acquire("k");
  REQUIRE(held);
  CHECK_THROWS_AS(manager->acquire("k", 1s), UsageError);
  CHECK_FALSE(manager->try_acquire("k"));
}

TEST_CASE("core: bad names and TTLs are refused before the service is asked", "[unit][core][input]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  AcquireOptions negative;
  negative.ttl = -5ms;
  CHECK_THROWS_AS(manager->try_acquire("", {}), UsageError);
  CHECK_THROWS_AS(manager->try_acquire("k", negative), UsageError);
  AcquireOptions huge;
  huge.ttl = kMaxTtl + 1ms;
  CHECK_THROWS_AS(manager->try_acquire("k", huge), UsageError);
  AcquireOptions tiny;
  tiny.ttl = kMinTtl - 1ms;
  CHECK_THROWS_AS(manager->try_acquire("k", tiny), UsageError);
  CHECK(service->calls(Op::kTryAcquire) == 0);
  tiny.ttl = kMinTtl;
  CHECK(manager->try_acquire("k", tiny).has_value());
  ManagerOptions short_default;
  short_default.default_ttl = 5ms;
  CHECK_THROWS_AS(rig.open({}, short_default), UsageError);
}

TEST_CASE("core: call_timeout must be positive and at most a day; migrations get ten minutes at least", "[unit][core][input]") {
  Rig rig;
  for (const std::chrono::milliseconds bad : {0ms, -1ms, std::chrono::milliseconds(std::chrono::hours(24)) + 1ms}) {
    ManagerOptions options;
    options.call_timeout = bad;
    CHECK_THROWS_AS(rig.open({}, options), UsageError);
  }
  ManagerOptions day;
  day.call_timeout = std::chrono::hours(24);
  CHECK(rig.open({}, day) != nullptr);
  // Migrations (on open and migrate()) get at least ten minutes, however short call_timeout is.
  ManagerOptions brief;
  brief.call_timeout = 1s;
  MemoryService* service = nullptr;
  const auto before = std::chrono::steady_clock::now();
  auto manager = rig.open({}, brief, &service);
  CHECK(service->last_deadline(Op::kMigrate) >= before + std::chrono::minutes(10));
  manager->migrate();
  CHECK(service->last_deadline(Op::kMigrate) >= before + std::chrono::minutes(10));
  CHECK(service->calls(Op::kMigrate) == 2);
}

TEST_CASE("core: capabilities follow what the service provides", "[unit][core][capabilities]") {
  Rig rig;
  MemoryService::Config bare;
  bare.fair_queue = false;
  bare.holder_probe = false;
  bare.maintenance = false;
  bare.shared_leases = false;
  auto manager = rig.open(bare);
  const Capabilities caps = manager->capabilities();
  CHECK_FALSE(caps.shared_leases);
  CHECK_FALSE(caps.notifications);
  CHECK_FALSE(caps.session_locks);
  CHECK_FALSE(caps.guard);
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  CHECK_THROWS_AS(manager->try_acquire("k", shared), UnsupportedError);
  CHECK_THROWS_AS(manager->session_lock("k", 0ms), UnsupportedError);
  CHECK_THROWS_AS(dblock::sql::Database(*manager).compare_and_set(VersionedUpdate{}), UnsupportedError);
  CHECK(manager->reap() == 0);
  CHECK(manager->schema_version() == 0);

  MemoryService::Config events;
  events.wake_events = true;
  CHECK(rig.open(events)->capabilities().notifications);
  CHECK(rig.open(events)->capabilities().shared_leases);
}

TEST_CASE("core: shared leases admit readers and exclude a writer", "[unit][core][shared]") {
  Rig rig;
  auto a = rig.open();
  auto b = rig.open();
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  auto r1 = a->try_acquire("k", shared);
  auto r2 = b->try_acquire("k", shared);
  REQUIRE(r1);
  REQUIRE(r2);
  CHECK(b->try_acquire("w"));  // another name is unaffected
  auto c = rig.open();
  CHECK_FALSE(c->try_acquire("k"));  // but no writer while readers hold it
}

TEST_CASE("core: the reaper runs only for a service that has something to reap", "[unit][core][reaper]") {
  Rig rig;
  ManagerOptions fast;
  fast.reaper_interval = 10ms;
  MemoryService* with = nullptr;
  auto a = rig.open({}, fast, &with);
  REQUIRE(eventually([&] { return with->calls(Op::kReap) >= 2; }));
  CHECK(with->calls(Op::kMigrate) == 1);  // migrated on open

  MemoryService::Config none;
  none.maintenance = false;
  MemoryService* without = nullptr;
  auto b = rig.open(none, fast, &without);
  ManagerOptions off = fast;
  off.reaper = false;
  MemoryService* disabled = nullptr;
  auto c = rig.open({}, off, &disabled);
  // `a`'s reaper, on the same interval, is the clock: once it ran five more times, so would theirs.
  const int runs = with->calls(Op::kReap);
  REQUIRE(eventually([&] { return with->calls(Op::kReap) >= runs + 5; }));
  CHECK(without->calls(Op::kReap) == 0);
  CHECK(without->calls(Op::kMigrate) == 0);
  CHECK(disabled->calls(Op::kReap) == 0);
  CHECK(c->reap() == 0);  // an explicit pass still runs (nothing expired here)
  CHECK(disabled->calls(Op::kReap) == 1);
}

TEST_CASE("core: dblock::Mutex locked twice by its holder fails as std::mutex does; another thread's unlock "
          "releases nothing", "[unit][core][mutex]") {
  Rig rig;
  auto manager = rig.open();
  Mutex m(*manager, "m");
  m.lock();
  try {
    m.lock();
    FAIL("a second lock() by the holding thread returned");
  } catch (const std::system_error& e) {
    CHECK(e.code() == std::errc::resource_deadlock_would_occur);
  }
  CHECK_THROWS_AS(m.try_lock_for(10ms), std::system_error);
  CHECK_FALSE(m.try_lock());
  std::thread stranger([&] { m.unlock(); });  // not its lock: releases nothing
  stranger.join();
  CHECK_FALSE(m.lost());
  CHECK_NOTHROW(m.fence());
  CHECK(manager->inspect("m").has_value());
  m.unlock();
  std::thread other([&] {
    CHECK(m.try_lock());
    m.unlock();
  });
  other.join();
}

TEST_CASE("core: one rule for every mode: a thread's second hold of a name is refused, never waited for",
          "[unit][core][reentrancy]") {
  Rig rig;
  auto manager = rig.open();
  auto other = rig.open();
  AcquireOptions one_permit;
  one_permit.permits = 1;
  AcquireOptions three_permits;
  three_permits.permits = 3;
  AcquireOptions reader;
  reader.mode = LockMode::kShared;
  AcquireOptions writer;
  writer.reentrant = true;
  const auto quick = [](const std::function<void()>& f) {
    const auto start = std::chrono::steady_clock::now();
    CHECK_THROWS_AS(f(), UsageError);
    CHECK(std::chrono::steady_clock::now() - start < 2s);  // refused at once, not after the 5 s wait
  };
  SECTION("a second permit of N=1, of N=3") {
    auto permit = manager->try_acquire("p", one_permit);
    REQUIRE(permit);
    CHECK_FALSE(manager->try_acquire("p", one_permit));
    quick([&] { manager->acquire("p", 5s, one_permit); });
    auto pool = manager->try_acquire("pool", three_permits);
    REQUIRE(pool);
    CHECK_FALSE(manager->try_acquire("pool", three_permits));
    quick([&] { manager->acquire("pool", 5s, three_permits); });
    CHECK(other->try_acquire("pool", three_permits));  // another holder still gets one
  }
  SECTION("a second read lease, and a read -> write upgrade") {
    auto read = manager->try_acquire("r", reader);
    REQUIRE(read);
    CHECK_FALSE(manager->try_acquire("r", reader));
    CHECK_FALSE(manager->try_acquire("r", writer));
    quick([&] { manager->acquire("r", 5s, reader); });
    quick([&] { manager->acquire("r", 5s, writer); });
    CHECK(other->try_acquire("r", reader));
  }
  SECTION("a write -> read downgrade of a reentrant hold") {
    auto write = manager->try_acquire("w", writer);
    REQUIRE(write);
    CHECK_FALSE(manager->try_acquire("w", reader));
    quick([&] { manager->acquire("w", 5s, reader); });
    auto again = manager->try_acquire("w", writer);  // exclusive on exclusive, reentrant: counted
    REQUIRE(again);
    CHECK(write->hold_count() == 2);
  }
  SECTION("another thread of the same manager is not this thread") {
    auto permit = manager->try_acquire("pool", three_permits);
    REQUIRE(permit);
    std::optional<Lease> second;
    std::thread([&] { second = manager->try_acquire("pool", three_permits); }).join();
    CHECK(second);
  }
}

TEST_CASE("core: the same-thread deadlock error says what to change", "[unit][core][reentrancy]") {
  Rig rig;
  auto manager = rig.open();
  AcquireOptions plain;
  auto held = manager->try_acquire("k", plain);
  REQUIRE(held);
  AcquireOptions reentrant;
  reentrant.reentrant = true;
  try {
    manager->acquire("k", 10ms, reentrant);
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("not taken as reentrant") != std::string::npos);
  }
  try {
    manager->acquire("k", 10ms, plain);
    FAIL("no UsageError");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("enable AcquireOptions::reentrant") != std::string::npos);
  }
}

TEST_CASE("core: a lease that outlives its manager says it was shut down, not lost to another holder",
          "[unit][core][shutdown]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto manager = rig.open({}, {}, &service);
  LostReasons reasons;
  AcquireOptions options;
  options.on_lost = reasons.callback();
  auto lease = manager->try_acquire("k", options);
  REQUIRE(lease);
  CHECK_FALSE(lease->shut_down());
  manager.reset();
  CHECK(lease->shut_down());
  CHECK_FALSE(lease->held());
  CHECK(lease->lost());
  CHECK(reasons.count() == 1);
  CHECK(reasons.last().find("shutdown") != std::string::npos);
  CHECK(lease->release() == ReleaseResult::kShutDown);
  CHECK(lease->release() == ReleaseResult::kShutDown);  // idempotent
  CHECK(lease->fence() > 0);                             // values stay readable
  auto other = rig.open();
  CHECK(other->try_acquire("k"));  // shutdown released it
}

}  // namespace
}  // namespace dblock::testing
