// Semaphores (AcquireOptions::permits) against the in-memory reference service: permit counting,
// FIFO hand-over of a freed permit, a mismatched N, an exclusive acquire of a semaphore's name,
// list/inspect, and bad input.
#include <catch2/catch.hpp>

#include <memory>
#include <thread>
#include <vector>

#include "core_rig.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

AcquireOptions permits(int n) {
  AcquireOptions options;
  options.permits = n;
  return options;
}

TEST_CASE("semaphore: N permits are held at once, each with its own fence; the next waits for a release",
          "[unit][semaphore]") {
  Rig rig;
  // Each holder its own manager (a thread holds one permit of a name at most: the one-hold rule).
  std::vector<std::unique_ptr<LockManager>> managers;
  for (int i = 0; i < 5; ++i) managers.push_back(rig.open());
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) {
    auto lease = managers[i]->try_acquire("pool", permits(3));
    REQUIRE(lease);
    CHECK(lease->mode() == LockMode::kShared);
    if (!held.empty()) CHECK(lease->fence() > held.back().fence());
    held.push_back(std::move(*lease));
  }
  CHECK_FALSE(managers[3]->try_acquire("pool", permits(3)));
  const auto info = managers[0]->inspect("pool");
  REQUIRE(info);
  CHECK(info->permits == 3);
  CHECK(info->holders == 3);

  held[1].release();
  auto fourth = managers[3]->try_acquire("pool", permits(3));
  REQUIRE(fourth);
  CHECK(fourth->fence() > held[2].fence());
  CHECK_FALSE(managers[4]->try_acquire("pool", permits(3)));
}

TEST_CASE("semaphore: a freed permit goes to the longest waiter", "[unit][semaphore]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto m = rig.open({}, {}, &service);
  auto a = m->try_acquire("pool", permits(1));
  REQUIRE(a);
  std::atomic<int> order{0};
  int first_at = 0, second_at = 0;
  std::thread first([&] {
    auto lease = m->acquire("pool", 10s, permits(1));
    first_at = ++order;
    if (lease) lease->release();
  });
  REQUIRE(eventually([&] { return service->queued("pool") == 1; }));
  std::thread second([&] {
    auto lease = m->acquire("pool", 10s, permits(1));
    second_at = ++order;
    if (lease) lease->release();
  });
  REQUIRE(eventually([&] { return service->queued("pool") == 2; }));
  a->release();
  first.join();
  second.join();
  CHECK(first_at == 1);
  CHECK(second_at == 2);
}

TEST_CASE("semaphore: another N, or a plain shared acquire, while permits are held is a UsageError",
          "[unit][semaphore]") {
  Rig rig;
  auto m = rig.open();
  auto permit = m->try_acquire("pool", permits(3));
  REQUIRE(permit);
  auto n = rig.open();  // another holder: this thread's own second ask is refused by the one-hold rule
  CHECK_THROWS_AS(n->try_acquire("pool", permits(4)), UsageError);
  CHECK_THROWS_WITH(n->acquire("pool", 1s, permits(2)), Catch::Contains("3 permits") && Catch::Contains("2"));
  AcquireOptions reader;
  reader.mode = LockMode::kShared;
  CHECK_THROWS_AS(n->try_acquire("pool", reader), UsageError);
  permit->release();
  // Nothing held: a new N takes the name.
  auto other = m->try_acquire("pool", permits(4));
  REQUIRE(other);
  CHECK(m->inspect("pool")->permits == 4);
}

TEST_CASE("semaphore: an exclusive acquire of the name waits until no permit is held", "[unit][semaphore]") {
  Rig rig;
  MemoryService* service = nullptr;
  auto m = rig.open({}, {}, &service);
  auto permit = m->try_acquire("pool", permits(2));
  REQUIRE(permit);
  CHECK_FALSE(rig.open()->try_acquire("pool"));
  std::optional<Lease> exclusive;
  std::thread drain([&] { exclusive = m->acquire("pool", 10s); });
  REQUIRE(eventually([&] { return service->queued("pool") == 1; }));
  // A permit asked for after the exclusive waiter queued waits behind it.
  CHECK_FALSE(rig.open()->try_acquire("pool", permits(2)));
  permit->release();
  drain.join();
  REQUIRE(exclusive);
  CHECK(exclusive->mode() == LockMode::kExclusive);
}

TEST_CASE("semaphore: permits out of range, with mode=shared, or on a service without them are refused",
          "[unit][semaphore]") {
  Rig rig;
  auto m = rig.open();
  CHECK_THROWS_AS(m->try_acquire("pool", permits(-1)), UsageError);
  CHECK_THROWS_WITH(m->try_acquire("pool", permits(kMaxPermits + 1)), Catch::Contains("from 1 to 10000"));
  AcquireOptions both = permits(2);
  both.mode = LockMode::kShared;
  CHECK_THROWS_AS(m->try_acquire("pool", both), UsageError);
  MemoryService::Config without;
  without.permits = false;
  auto plain = rig.open(without);
  CHECK_THROWS_AS(plain->try_acquire("pool", permits(2)), UnsupportedError);
  CHECK_FALSE(plain->capabilities().permits);
  CHECK(m->capabilities().permits);
}

}  // namespace
}  // namespace dblock::testing
