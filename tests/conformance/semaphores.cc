// Semaphores (AcquireOptions::permits), written once for every service: never more than N holders
// across managers, each permit with its own fence; waiting permits granted in the order they
// asked; a mismatched N refused; a dead holder's permit freed after its TTL and not before.
#include <catch2/catch.hpp>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "context.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

AcquireOptions permits(int n, milliseconds ttl = 0ms) {
  AcquireOptions options;
  options.permits = n;
  options.ttl = ttl;
  return options;
}

}  // namespace

// Holds one permit of `name` (N = `n`) and says "holding <fence>", until stdin ends.
int child_permit(const std::string& prefix, const std::string& name, int n, int ttl_ms) {
  auto manager = open_manager({}, prefix);
  std::optional<Lease> lease = manager->acquire(name, 30s, permits(n, milliseconds(ttl_ms)));
  if (!lease) return 1;
  std::printf("holding %lld %s\n", static_cast<long long>(lease->fence()), steady_stamp(lease->safe_until()).c_str());
  std::fflush(stdout);
  for (std::string line; std::getline(std::cin, line);) {
  }
  return 0;
}

TEST_CASE("semaphore: N permits at once across managers, each its own fence; never more than N holders",
          "[conformance][recipes][semaphore]") {
  const std::string prefix = unique_prefix();
  std::vector<std::unique_ptr<LockManager>> managers;
  for (int i = 0; i < 6; ++i) managers.push_back(open_manager({}, prefix));
  if (!context().shared_leases) {
    CHECK_THROWS_AS(managers[0]->try_acquire("pool", permits(3)), UnsupportedError);
    return;
  }
  std::vector<Lease> held;
  for (int i = 0; i < 3; ++i) {
    std::optional<Lease> lease = managers[i]->try_acquire("pool", permits(3));
    REQUIRE(lease);
    if (!held.empty()) CHECK(lease->fence() > held.back().fence());
    held.push_back(std::move(*lease));
  }
  CHECK_FALSE(managers[3]->try_acquire("pool", permits(3)));
  const std::optional<LeaseInfo> info = managers[4]->inspect("pool");
  REQUIRE(info);
  CHECK(info->mode == LockMode::kShared);
  CHECK(info->permits == 3);
  CHECK(info->holders == 3);
  for (Lease& lease : held) CHECK(lease.release() == ReleaseResult::kReleased);

  // Six managers, four rounds each, on three permits: the count inside never passes three.
  std::atomic<int> inside{0}, most{0}, rounds{0};
  std::vector<std::thread> threads;
  for (auto& manager : managers) {
    threads.emplace_back([&, m = manager.get()] {
      for (int round = 0; round < 4; ++round) {
        std::optional<Lease> lease = m->acquire("pool", 60s, permits(3));
        if (!lease) continue;
        const int now_inside = ++inside;
        for (int seen = most.load(); now_inside > seen && !most.compare_exchange_weak(seen, now_inside);) {
        }
        std::this_thread::sleep_for(20ms);
        --inside;
        lease->release();
        ++rounds;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CHECK(rounds == 24);
  CHECK(most <= 3);
  CHECK(most >= 1);
}

TEST_CASE("semaphore: another N, or a plain reader, while permits are held is a UsageError; a writer waits",
          "[conformance][recipes][semaphore][needs:shared]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  std::optional<Lease> permit = a->try_acquire("pool", permits(3));
  REQUIRE(permit);
  CHECK_THROWS_AS(b->try_acquire("pool", permits(4)), UsageError);
  CHECK_THROWS_WITH(b->acquire("pool", 2s, permits(2)), Catch::Contains("3 permits"));
  AcquireOptions reader;
  reader.mode = LockMode::kShared;
  CHECK_THROWS_AS(b->try_acquire("pool", reader), UsageError);
  CHECK_FALSE(b->try_acquire("pool"));  // exclusive: every permit must be free first
  CHECK(permit->release() == ReleaseResult::kReleased);
  std::optional<Lease> other = b->acquire("pool", 10s, permits(4));  // nothing held: a new N
  REQUIRE(other);
  CHECK(a->inspect("pool")->permits == 4);
}

TEST_CASE("semaphore: a SIGKILLed permit holder's permit is free after its TTL, not before",
          "[conformance][recipes][semaphore][faults][needs:shared]") {
  const std::string prefix = unique_prefix();
  const milliseconds ttl = capped_ttl(1500ms);
  auto manager = open_manager({}, prefix);
  auto taker = open_manager({}, prefix);  // a thread holds one permit of a name at most
  std::optional<Lease> mine = manager->try_acquire("pool", permits(2, ttl));
  REQUIRE(mine);
  Child holder({self_path(), "--child", "permit", prefix, "pool", "2", std::to_string(ttl.count())});
  const std::optional<StampedLine> holding = parse_stamped(expect_line(holder, "holding"));
  REQUIRE(holding);
  const std::int64_t dead_fence = holding->fence;
  // The dead holder's permit lives on the service at least until its safe-until; the kill, seen
  // here after however long a loaded machine took, cannot bound the release from below.
  const SteadyClock::time_point holder_safe_until = holding->at;
  const auto tried_at = SteadyClock::now();
  const bool taken_at_once = taker->try_acquire("pool", permits(2, ttl)).has_value();
  CHECK((!taken_at_once || tried_at >= holder_safe_until));
  holder.signal(SIGKILL);
  const auto killed = SteadyClock::now();
  REQUIRE(holder.wait(10s));
  std::optional<Lease> freed = taker->acquire("pool", ttl + 20s, permits(2, ttl));
  REQUIRE(freed);
  CHECK(SteadyClock::now() >= holder_safe_until - 200ms);
  CHECK(SteadyClock::now() - killed <= ttl + 10s);
  CHECK(freed->fence() > dead_fence);
}

TEST_CASE("semaphore: a freed permit goes to the waiter that asked first", "[conformance][recipes][semaphore][needs:shared]") {
  const std::string prefix = unique_prefix();
  std::vector<std::unique_ptr<LockManager>> m;
  for (int i = 0; i < 4; ++i) m.push_back(open_manager({}, prefix));
  std::optional<Lease> held = m[0]->try_acquire("pool", permits(2));
  std::optional<Lease> other = m[1]->try_acquire("pool", permits(2));
  REQUIRE((held && other));
  std::optional<Lease> first;
  std::optional<Lease> second;
  std::atomic<bool> second_done{false};
  std::thread early([&] { first = m[2]->acquire("pool", 30s, permits(2)); });
  // The early waiter is in line before the late one starts asking.
  const bool queued = [&] {
    for (const auto until = SteadyClock::now() + 10s; SteadyClock::now() < until;) {
      if (!context().stored_owner(prefix, "waiters", "pool").empty()) return true;
      std::this_thread::sleep_for(5ms);
    }
    return false;
  }();
  CHECK(queued);
  std::thread late([&] {
    second = m[3]->acquire("pool", 30s, permits(2));
    second_done = true;
  });
  CHECK(held->release() == ReleaseResult::kReleased);
  early.join();  // the late waiter taking the permit instead would leave the early one waiting 30 s
  REQUIRE(first);
  CHECK_FALSE(second_done.load());  // two permits, both held
  CHECK(other->release() == ReleaseResult::kReleased);
  late.join();
  REQUIRE(second);
  CHECK(second->fence() > first->fence());
}

}  // namespace dblock::testing
