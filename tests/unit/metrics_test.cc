// LockManager::metrics() against the in-memory reference service: each counter and histogram
// moves when, and only when, its event happens; the Prometheus text escapes what it must.
#include <catch2/catch.hpp>

#include <string>
#include <thread>

#include "core_rig.h"
#include "manager_core.h"  // src/core: the engine, which outlives its manager

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

std::uint64_t total(const HistogramSnapshot& h) {
  std::uint64_t n = 0;
  for (const auto c : h.counts) n += c;
  return n;
}

TEST_CASE("metrics: acquired, refused, timed out and errors by mode; attempts at the service", "[unit][metrics]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto a = rig.open({}, {}, &service);
  auto b = rig.open();
  auto held = a->try_acquire("k");
  REQUIRE(held);
  auto other = a->try_acquire("other");
  REQUIRE(other);
  std::thread([&] { CHECK_FALSE(a->try_acquire("k")); }).join();  // refused (another thread)
  CHECK_FALSE(b->acquire("k", 30ms));                                // timed out
  service->fail_attempts(1, MemoryService::Fault::kPermission);
  CHECK_THROWS_AS(a->try_acquire("p"), PermissionError);
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  auto reader = a->try_acquire("s", shared);
  CHECK(reader);
  AcquireOptions permit;
  permit.permits = 2;
  auto permit_held = a->try_acquire("sem", permit);
  CHECK(permit_held);

  const MetricsSnapshot m = a->metrics();
  CHECK(m.service == "memory");
  CHECK(m.exclusive.acquired == 2);
  CHECK(m.exclusive.refused == 1);
  CHECK(m.exclusive.timed_out == 0);  // b's, not a's
  CHECK(m.exclusive.errors == 1);
  CHECK(m.exclusive.attempts == 4);
  CHECK(m.shared.acquired == 1);
  CHECK(m.permits.acquired == 1);
  CHECK(m.permits.attempts == 1);
  CHECK(m.wait.count == 4);
  CHECK(total(m.wait) == m.wait.count);
  CHECK(m.leases_held == 4);

  const MetricsSnapshot mb = b->metrics();
  CHECK(mb.exclusive.timed_out == 1);
  CHECK(mb.exclusive.acquired == 0);
  CHECK(mb.exclusive.attempts >= 1);
  CHECK(mb.wait.count == 0);
  CHECK(mb.leases_held == 0);
}

TEST_CASE("metrics: a waiter's wait lands in the histogram's bucket of its length", "[unit][metrics]") {
  Rig rig;
  auto a = rig.open();
  auto b = rig.open();
  auto held = a->try_acquire("k");
  REQUIRE(held);
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);
    held->release();
  });
  auto got = b->acquire("k", 5s);
  releaser.join();
  REQUIRE(got);
  const MetricsSnapshot m = b->metrics();
  REQUIRE(m.wait.count == 1);
  CHECK(m.wait.sum_seconds >= 0.1);  // 200 ms, less however late this thread began its wait
  // 0.1 s is bound 7; a wait of 100 ms to 5 s lies in a bucket from there on (0.1 < w).
  std::size_t bucket = 0;
  while (m.wait.counts[bucket] == 0) ++bucket;
  CHECK(kMetricsBucketBounds[bucket] > 0.1);
  CHECK(m.wait.sum_seconds <= (bucket < kMetricsBucketBounds.size() ? kMetricsBucketBounds[bucket] : 1e9));
}

TEST_CASE("metrics: releases, releases in doubt, hold time; reentrant holds count one release", "[unit][metrics]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto m = rig.open({}, {}, &service);
  AcquireOptions reentrant;
  reentrant.reentrant = true;
  auto outer = m->try_acquire("k", reentrant);
  REQUIRE(outer);
  auto inner = m->try_acquire("k", reentrant);
  REQUIRE(inner);
  std::this_thread::sleep_for(20ms);
  CHECK(inner->release() == ReleaseResult::kReleased);
  CHECK(m->metrics().released == 0);
  CHECK(outer->release() == ReleaseResult::kReleased);
  MetricsSnapshot s = m->metrics();
  CHECK(s.released == 1);
  CHECK(s.exclusive.acquired == 2);
  CHECK(s.hold.count == 1);
  CHECK(s.hold.sum_seconds >= 0.019);

  auto doubtful = m->try_acquire("d");
  REQUIRE(doubtful);
  service->fail_releases(true);
  CHECK(doubtful->release() == ReleaseResult::kInDoubt);
  s = m->metrics();
  CHECK(s.releases_in_doubt == 1);
  CHECK(s.released == 1);
  CHECK(s.hold.count == 1);  // only confirmed releases are timed
  CHECK(s.leases_held == 0);
}

TEST_CASE("metrics: renewals ok, failed and refused; leases lost by each cause", "[unit][metrics][lost]") {
  Rig rig;
  MemoryService::Config events;
  events.wake_events = true;
  MemoryService* service = nullptr;
  auto m = rig.open(events, {}, &service);
  AcquireOptions short_ttl;
  short_ttl.ttl = 300ms;  // renewed every 100 ms; safe-until ~295 ms: slack for a sanitizer build

  auto renewed = m->try_acquire("renewed", short_ttl);
  REQUIRE(renewed);
  REQUIRE(eventually([&] { return m->metrics().renewals_ok >= 2; }));
  renewed->release();

  SECTION("refused") {
    service->refuse_renewals(true);  // the first renewal (100 ms) is refused well before safe-until
    auto lease = m->try_acquire("k", short_ttl);
    REQUIRE(lease);
    REQUIRE(eventually([&] { return lease->lost(); }));
    REQUIRE(eventually([&] { return m->metrics().lost.renewal_refused == 1; }));
    const MetricsSnapshot s = m->metrics();
    CHECK(s.renewals_refused >= 1);
    CHECK(s.lost.safe_until_passed == 0);
    CHECK(s.lost.service_event == 0);
    CHECK(lease->release() == ReleaseResult::kAlreadyLost);
    CHECK(m->metrics().released_already_lost == 1);
  }
  SECTION("safe-until passed") {
    auto lease = m->try_acquire("k", short_ttl);
    REQUIRE(lease);
    service->fail_renewals(true);
    REQUIRE(eventually([&] { return m->metrics().lost.safe_until_passed == 1; }));
    const MetricsSnapshot s = m->metrics();
    CHECK(s.renewals_failed >= 1);
    CHECK(s.lost.renewal_refused == 0);
  }
  SECTION("the service's lost event") {
    AcquireOptions long_ttl;
    long_ttl.ttl = 10s;
    auto lease = m->try_acquire("k", long_ttl);
    REQUIRE(lease);
    service->push_lost("k");
    REQUIRE(eventually([&] { return m->metrics().lost.service_event == 1; }));
    CHECK(m->metrics().lost.safe_until_passed == 0);
    CHECK(m->metrics().leases_held == 0);
  }
  SECTION("shutdown") {
    // The engine itself, as LockManager makes and ends it: its figures stay readable after the
    // shutdown that ~LockManager makes.
    auto core = std::make_shared<detail::ManagerCore>(std::make_unique<MemoryService>(rig.store, MemoryService::Config{}),
                                                     ManagerOptions{});
    core->start();
    auto lease = core->acquire("k", std::chrono::steady_clock::now(), /*try_once=*/true, {});
    REQUIRE(lease);
    CHECK(core->metrics_snapshot().leases_held == 1);
    core->shutdown();
    const MetricsSnapshot s = core->metrics_snapshot();
    CHECK(s.lost.shutdown == 1);
    CHECK(s.leases_held == 0);
    CHECK(lease->release() == ReleaseResult::kShutDown);
    CHECK(core->metrics_snapshot().released_already_lost == 0);  // the shutdown's, not a release
  }
}

TEST_CASE("metrics: the reaper's deleted entries are counted", "[unit][metrics][reaper]") {
  Rig rig;
  ManagerOptions no_reaper;
  no_reaper.reaper = false;
  auto m = rig.open({}, no_reaper);
  MemoryService* service = nullptr;
  auto holder = rig.open({}, {}, &service);
  AcquireOptions short_ttl;
  short_ttl.ttl = 50ms;
  auto lease = holder->try_acquire("k", short_ttl);
  REQUIRE(lease);
  service->fail_renewals(true);
  REQUIRE(eventually([&] { return lease->lost(); }));
  REQUIRE(eventually([&] { return m->reap() == 1; }, 2s));
  CHECK(m->metrics().reaped == 1);
}

TEST_CASE("metrics: Prometheus text has each family once, escapes label values, and counts buckets cumulatively",
          "[unit][metrics][prometheus]") {
  PrometheusText out;
  out.family("x_total", "counter", "Help with \\ and\nnewline.");
  out.sample("x_total", {{"name", "a\"b\\c\nd"}}, 3);
  CHECK(out.text() ==
        "# HELP x_total Help with \\\\ and\\nnewline.\n"
        "# TYPE x_total counter\n"
        "x_total{name=\"a\\\"b\\\\c\\nd\"} 3\n");

  HistogramSnapshot h;
  h.counts[0] = 1;
  h.counts[kMetricsBucketBounds.size()] = 2;
  h.count = 3;
  h.sum_seconds = 7200.0005;
  PrometheusText hist;
  hist.histogram("w_seconds", {{"service", "s"}}, h);
  const std::string text = hist.text();
  CHECK(text.find("w_seconds_bucket{service=\"s\",le=\"0.0005\"} 1\n") != std::string::npos);
  CHECK(text.find("w_seconds_bucket{service=\"s\",le=\"3600\"} 1\n") != std::string::npos);
  CHECK(text.find("w_seconds_bucket{service=\"s\",le=\"+Inf\"} 3\n") != std::string::npos);
  CHECK(text.find("w_seconds_sum{service=\"s\"} 7200.0005\n") != std::string::npos);
  CHECK(text.find("w_seconds_count{service=\"s\"} 3\n") != std::string::npos);

  Rig rig;
  const std::string all = to_prometheus(rig.open()->metrics());
  for (const char* family : {"dblock_acquire_attempts_total", "dblock_acquires_total", "dblock_acquire_wait_seconds",
                             "dblock_lease_hold_seconds", "dblock_releases_total", "dblock_renewals_total",
                             "dblock_leases_lost_total", "dblock_session_locks_lost_total", "dblock_reaped_total",
                             "dblock_leases_held", "dblock_session_locks_held"}) {
    const std::string type = std::string("# TYPE ") + family + " ";
    INFO(family);
    CHECK(all.find(type) != std::string::npos);
    CHECK(all.find(type) == all.rfind(type));
  }
  CHECK(all.find("dblock_acquires_total{service=\"memory\",mode=\"permit\",result=\"timed_out\"} 0\n") !=
        std::string::npos);
}

}  // namespace
}  // namespace dblock::testing
