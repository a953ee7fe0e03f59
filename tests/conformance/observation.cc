// What monitoring reads, written once for every service: list() and inspect() count the live
// waiters in a name's line; oldest_unreaped() reports an expired entry until the reaper takes it
// (nothing where the service keeps nothing to reap); metrics() counts what the manager did.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <thread>

#include "context.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;

TEST_CASE("list and inspect count the live waiters in a name's line", "[lease][conformance][observe]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto holder = manager->try_acquire("watched");
  REQUIRE(holder);
  ServiceDriver service(*manager);
  auto before = manager->inspect("watched");
  REQUIRE(before);
  if (service.service.fair_queue() == nullptr) {  // no line (Redlock): unknown
    CHECK(before->waiters == -1);
    return;
  }
  CHECK(before->waiters == 0);
  const OwnerSecret first = OwnerSecret::generate();
  const OwnerSecret second = OwnerSecret::generate();
  REQUIRE_FALSE(service.attempt("watched", LockMode::kExclusive, first, 30s, /*queue=*/true).acquired);
  REQUIRE_FALSE(service.attempt("watched", LockMode::kExclusive, second, 30s, /*queue=*/true).acquired);
  auto during = manager->inspect("watched");
  REQUIRE(during);
  CHECK(during->waiters == 2);
  bool listed = false;
  for (const LeaseInfo& info : manager->list()) {
    if (info.name != "watched") continue;
    listed = true;
    CHECK(info.waiters == 2);
  }
  CHECK(listed);
  service.leave("watched", first);
  service.leave("watched", second);
  auto after = manager->inspect("watched");
  REQUIRE(after);
  CHECK(after->waiters == 0);
}

TEST_CASE("oldest_unreaped reports an expired entry until the reaper takes it", "[lease][conformance][observe]") {
  const std::string prefix = unique_prefix();
  ManagerOptions no_reaper;
  no_reaper.reaper = false;
  auto manager = open_manager(no_reaper, prefix);
  ServiceDriver service(*manager);
  CHECK_FALSE(manager->oldest_unreaped());
  if (service.service.maintenance() == nullptr) return;  // nothing to reap: always none
  // A lease nobody renews, taken past the engine so that it simply expires.
  const OwnerSecret secret = OwnerSecret::generate();
  REQUIRE(service.attempt("expiring", LockMode::kExclusive, secret, 100ms).acquired);
  CHECK_FALSE(manager->oldest_unreaped());  // live
  std::optional<std::chrono::microseconds> age;
  const auto limit = std::chrono::steady_clock::now() + 10s;
  while (!(age = manager->oldest_unreaped()) && std::chrono::steady_clock::now() < limit) {
    std::this_thread::sleep_for(20ms);
  }
  REQUIRE(age);
  CHECK(age->count() >= 0);
  CHECK(*age < 60s);
  CHECK(manager->reap() >= 1);
  CHECK_FALSE(manager->oldest_unreaped());
  CHECK(manager->metrics().reaped >= 1);
}

}  // namespace dblock::testing
