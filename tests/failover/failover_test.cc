// Leases and fences across a failover (docs/failover.md): a PostgreSQL primary killed and its
// streaming standby promoted (asynchronous and synchronous replication), a MariaDB primary killed
// and its GTID replica made writable. Clients reach the pair through a URL listing both servers.
// Each case starts its own pair (tests/failover/topology.h) on the ports ctest gives it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "dblock/dblock.h"
#include "environment.h"
#include "topology.h"

using namespace std::chrono_literals;
using dblock::testing::Topology;
using SteadyClock = std::chrono::steady_clock;

namespace {

struct Ports {
  int a = 0, b = 0;
};

// "A,B" from the environment variable `var` (ctest sets it); throws when unset: a run that needs
// the servers and cannot start them fails.
Ports ports(const char* var) {
  const std::string value = dblock::testing::env(var);
  const std::size_t comma = value.find(',');
  if (comma == std::string::npos) throw std::runtime_error(std::string(var) + " is not set to PORT_A,PORT_B");
  return {std::stoi(value.substr(0, comma)), std::stoi(value.substr(comma + 1))};
}

std::string state_dir(const char* name) {
  const std::string base = dblock::testing::env("DBLOCK_FAILOVER_STATE");
  if (base.empty()) throw std::runtime_error("DBLOCK_FAILOVER_STATE is not set");
  return base + "-" + name;
}

std::unique_ptr<Topology> start(Topology::Kind kind) {
  switch (kind) {
    case Topology::Kind::kPostgresAsync: {
      const Ports p = ports("DBLOCK_FAILOVER_PG_PORTS");
      return std::make_unique<Topology>(kind, state_dir("pg-async"), p.a, p.b);
    }
    case Topology::Kind::kPostgresSync: {
      const Ports p = ports("DBLOCK_FAILOVER_PG_PORTS");
      return std::make_unique<Topology>(kind, state_dir("pg-sync"), p.a, p.b);
    }
    case Topology::Kind::kMariaDb: {
      const Ports p = ports("DBLOCK_FAILOVER_MARIADB_PORTS");
      return std::make_unique<Topology>(kind, state_dir("mariadb"), p.a, p.b);
    }
  }
  throw std::logic_error("kind");
}

bool postgres(Topology::Kind kind) { return kind != Topology::Kind::kMariaDb; }

std::string unique_prefix() {
  std::random_device rd;
  return "fo" + std::to_string(rd() % 1000000) + "_";
}

std::unique_ptr<dblock::LockManager> open(const Topology& t, const std::string& prefix) {
  dblock::ManagerOptions options;
  options.table_prefix = prefix;
  return dblock::open(t.url(), options);
}

// The quoted leases table as the dialect writes it.
std::string leases_table(Topology::Kind kind, const std::string& prefix) {
  return postgres(kind) ? "\"" + prefix + "leases\"" : "`" + prefix + "leases`";
}

// Polls (every 50 ms, up to `timeout`) until the standby shows `name`'s lease row.
bool standby_has(const Topology& t, Topology::Kind kind, const std::string& prefix, const std::string& name,
                 std::chrono::milliseconds timeout) {
  const auto until = SteadyClock::now() + timeout;
  while (SteadyClock::now() < until) {
    const auto out = t.admin(t.standby_port(), "SELECT count(*) FROM " + leases_table(kind, prefix) +
                                                   " WHERE name = '" + name + "' AND owner_secret IS NOT NULL");
    if (!out.empty() && out.back() == "1") return true;
    std::this_thread::sleep_for(50ms);  // replication is asynchronous: nothing to wait on but its effect
  }
  return false;
}

// Fences issued by acquire-and-release of `n` names.
std::vector<std::int64_t> draw_fences(dblock::LockManager& m, int n, const std::string& tag) {
  std::vector<std::int64_t> fences;
  for (int i = 0; i < n; ++i) {
    auto lease = m.try_acquire("draw-" + tag + "-" + std::to_string(i));
    REQUIRE(lease);
    fences.push_back(lease->fence());
    lease->release();
  }
  return fences;
}

// A waiter on `name` in its own thread: when it acquired, and with which fence.
class Waiter {
 public:
  Waiter(dblock::LockManager& m, std::string name, std::chrono::milliseconds wait)
      : thread_([this, &m, name = std::move(name), wait] {
          try {
            auto lease = m.acquire(name, wait);
            const std::lock_guard<std::mutex> lock(mutex_);
            if (lease) {
              fence_ = lease->fence();
              acquired_at_ = SteadyClock::now();
              lease->release();
            }
          } catch (const std::exception& e) {
            const std::lock_guard<std::mutex> lock(mutex_);
            error_ = e.what();
          }
        }) {}
  ~Waiter() { join(); }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  std::optional<SteadyClock::time_point> acquired_at() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return acquired_at_;
  }
  std::int64_t fence() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return fence_;
  }
  std::string error() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return error_;
  }

 private:
  mutable std::mutex mutex_;
  std::optional<SteadyClock::time_point> acquired_at_;  // GUARDED_BY(mutex_)
  std::int64_t fence_ = 0;                                // GUARDED_BY(mutex_)
  std::string error_;                                     // GUARDED_BY(mutex_)
  std::thread thread_;
};

constexpr auto kTtl = 6s;

// The losses of a lease: how many times on_lost ran, and when it first did.
struct Losses {
  std::atomic<int> calls{0};
  std::atomic<SteadyClock::rep> first_at{0};  // steady clock ticks; 0 before the first

  std::optional<SteadyClock::time_point> told_at() const {
    const SteadyClock::rep at = first_at.load();
    if (at == 0) return std::nullopt;
    return SteadyClock::time_point(SteadyClock::duration(at));
  }
};

// A lease of kTtl whose losses `losses` records.
dblock::AcquireOptions counting_losses(Losses& losses) {
  dblock::AcquireOptions options;
  options.ttl = kTtl;
  options.on_lost = [&losses](const dblock::LostLease&) {
    SteadyClock::rep none = 0;
    losses.first_at.compare_exchange_strong(none, SteadyClock::now().time_since_epoch().count());
    ++losses.calls;
  };
  return options;
}

// Fences issued after a switch, to `holder` (a process that saw the old fences: its carried floor)
// and to a fresh process (the clock floor alone), are above every fence issued before it.
void check_fences_after_switch(const Topology& t, const std::string& prefix, dblock::LockManager& holder,
                               std::int64_t highest_before) {
  for (std::int64_t f : draw_fences(holder, 3, "after")) CHECK(f > highest_before);
  auto fresh = open(t, prefix);
  for (std::int64_t f : draw_fences(*fresh, 3, "fresh")) CHECK(f > highest_before);
}

// A lease that reached the standby before the primary died is kept across the switch, without a
// gap; its waiter goes on waiting on the new primary and starts only after the release; every
// fence issued after the switch is above every fence issued before it.
void lease_that_reached_the_standby_is_kept(Topology::Kind kind) {
  auto t = start(kind);
  const std::string prefix = unique_prefix();
  auto holder = open(*t, prefix);
  auto waiter_manager = open(*t, prefix);
  std::vector<std::int64_t> before = draw_fences(*holder, 5, "before");
  Losses losses;
  const dblock::AcquireOptions options = counting_losses(losses);
  auto lease = holder->try_acquire("job", options);
  REQUIRE(lease);
  before.push_back(lease->fence());
  REQUIRE(standby_has(*t, kind, prefix, "job", 10s));
  Waiter waiter(*waiter_manager, "job", 120s);
  const auto lines = t->failover();
  for (const auto& l : lines) WARN("failover: " << l);
  // Held through the switch and two TTLs past it; the waiter still waits.
  const auto until = SteadyClock::now() + 2 * kTtl;
  while (SteadyClock::now() < until) {
    REQUIRE_FALSE(lease->lost());
    REQUIRE_FALSE(waiter.acquired_at());
    std::this_thread::sleep_for(100ms);  // sampling interval
  }
  CHECK(losses.calls == 0);
  CHECK(lease->safe_until() > SteadyClock::now());
  const auto released_at = SteadyClock::now();
  const dblock::ReleaseResult released = lease->release();
  CHECK((released == dblock::ReleaseResult::kReleased || released == dblock::ReleaseResult::kInDoubt));
  waiter.join();
  INFO("waiter error: " << waiter.error());
  REQUIRE(waiter.acquired_at());
  CHECK(*waiter.acquired_at() >= released_at);
  const std::int64_t highest_before = *std::max_element(before.begin(), before.end());
  CHECK(waiter.fence() > highest_before);
  check_fences_after_switch(*t, prefix, *holder, highest_before);
}

// Asynchronous replication with the standby behind: a lease the old primary granted after the
// standby stopped receiving is gone on the new primary. Its holder is told (on_lost, lost()) at
// its next renewal, never after its safe-until; fences issued after the switch are above every
// fence the old primary issued, also those the standby never saw.
void lease_that_did_not_reach_the_standby_is_reported_lost(Topology::Kind kind) {
  auto t = start(kind);
  const std::string prefix = unique_prefix();
  auto holder = open(*t, prefix);
  auto waiter_manager = open(*t, prefix);
  auto marker = holder->try_acquire("replicated");  // the tables and this row reach the standby
  REQUIRE(marker);
  REQUIRE(standby_has(*t, kind, prefix, "replicated", 10s));
  marker->release();
  t->lag();
  Losses losses;
  const dblock::AcquireOptions options = counting_losses(losses);
  auto lease = holder->try_acquire("lagged", options);
  REQUIRE(lease);
  std::vector<std::int64_t> before = draw_fences(*holder, 20, "lagged");
  before.push_back(lease->fence());
  CHECK_FALSE(standby_has(*t, kind, prefix, "lagged", 500ms));
  Waiter waiter(*waiter_manager, "lagged", 120s);
  const auto lines = t->failover();
  for (const auto& l : lines) WARN("failover: " << l);
  // Told at its next renewal (which finds the lease gone), by its safe-until at the latest: the
  // safe-until it had when it was told (no renewal can extend it on the new primary). Told when
  // on_lost ran, which may be before the switch is over on a loaded machine (the rebuilt standby
  // took longer than the TTL once).
  for (int i = 0; i < 400 && !lease->lost(); ++i) std::this_thread::sleep_for(20ms);  // bounded: 8 s
  REQUIRE(lease->lost());
  for (int i = 0; i < 100 && !losses.told_at(); ++i) std::this_thread::sleep_for(10ms);  // on_lost runs after
  REQUIRE(losses.told_at());
  CHECK(*losses.told_at() <= lease->safe_until() + 300ms);  // a loaded machine's scheduling
  CHECK(losses.calls == 1);
  waiter.join();
  INFO("waiter error: " << waiter.error());
  REQUIRE(waiter.acquired_at());
  const std::int64_t highest_before = *std::max_element(before.begin(), before.end());
  CHECK(waiter.fence() > highest_before);
  check_fences_after_switch(*t, prefix, *holder, highest_before);
  CHECK(lease->release() == dblock::ReleaseResult::kAlreadyLost);
}

// A URL whose every host is a standby (or read-only replica): a ConnectionError that says why,
// by the open's deadline.
void every_host_a_standby(Topology::Kind kind) {
  auto t = start(kind);
  const int s = t->standby_port();
  const std::string url = postgres(kind)
                              ? "postgresql://postgres@127.0.0.1:" + std::to_string(s) + ",127.0.0.1:" +
                                    std::to_string(s) + "/postgres?connect_timeout=2"
                              : "mysql://dblock:dblock-pw@127.0.0.1:" + std::to_string(s) + ",127.0.0.1:" +
                                    std::to_string(s) + "/dblock_test?connect_timeout=2";
  const auto started = SteadyClock::now();
  try {
    dblock::open(url);
    FAIL("opened a standby");
  } catch (const dblock::ConnectionError& e) {
    const std::string what = e.what();
    INFO(what);
    CHECK(what.find(postgres(kind) ? "target_session_attrs=read-write" : "read-only") != std::string::npos);
  }
  CHECK(SteadyClock::now() - started < 12s);  // one connect of 2 s per host, twice at most
}

// A failover in the middle of a guarded transaction: it fails, nothing of it commits, and the
// next guarded write checks the lease on the new primary (synchronous: it is there).
void guarded_transaction_across_failover(Topology::Kind kind) {
  auto t = start(kind);
  const std::string prefix = unique_prefix();
  auto holder = open(*t, prefix);
  const std::string table = prefix + "app";
  t->admin(t->primary_port(), "CREATE TABLE " + table + " (id integer)");
  dblock::AcquireOptions options;
  options.ttl = kTtl;
  auto lease = holder->try_acquire("guarded", options);
  REQUIRE(lease);
  std::promise<void> inside, switched;
  std::thread failing_over([&] {
    inside.get_future().wait();
    t->failover();
    switched.set_value();
  });
  bool failed = false;
  try {
    dblock::sql::Database(*holder).run_guarded(*lease, [&](dblock::Transaction& tx) {
      tx.execute("INSERT INTO " + table + " (id) VALUES (1)");
      inside.set_value();
      switched.get_future().wait();
      tx.execute("INSERT INTO " + table + " (id) VALUES (2)");
    });
  } catch (const dblock::Error& e) {
    failed = true;
    WARN("guarded write across the failover: " << e.what());
  }
  failing_over.join();
  CHECK(failed);
  CHECK(t->admin(t->primary_port(), "SELECT count(*) FROM " + table).back() == "0");
  dblock::sql::Database(*holder).run_guarded(*lease, [&](dblock::Transaction& tx) { tx.execute("INSERT INTO " + table + " (id) VALUES (3)"); });
  CHECK(t->admin(t->primary_port(), "SELECT count(*) FROM " + table).back() == "1");
  CHECK_FALSE(lease->lost());
}

}  // namespace

TEST_CASE("failover, PostgreSQL synchronous: a held lease is kept, fences rise", "[postgresql][sync]") {
  lease_that_reached_the_standby_is_kept(Topology::Kind::kPostgresSync);
}

TEST_CASE("failover, PostgreSQL asynchronous: a replicated lease is kept, fences rise", "[postgresql][async]") {
  lease_that_reached_the_standby_is_kept(Topology::Kind::kPostgresAsync);
}

TEST_CASE("failover, PostgreSQL asynchronous: a lease the standby missed is reported lost, fences rise",
          "[postgresql][async]") {
  lease_that_did_not_reach_the_standby_is_reported_lost(Topology::Kind::kPostgresAsync);
}

TEST_CASE("failover, PostgreSQL: a URL whose every host is a standby", "[postgresql][input]") {
  every_host_a_standby(Topology::Kind::kPostgresAsync);
}

TEST_CASE("failover, PostgreSQL synchronous: a guarded transaction cut by the switch commits nothing",
          "[postgresql][sync]") {
  guarded_transaction_across_failover(Topology::Kind::kPostgresSync);
}

TEST_CASE("failover, MariaDB: a replicated lease is kept, fences rise", "[mariadb]") {
  lease_that_reached_the_standby_is_kept(Topology::Kind::kMariaDb);
}

TEST_CASE("failover, MariaDB: a lease the replica missed is reported lost, fences rise", "[mariadb]") {
  lease_that_did_not_reach_the_standby_is_reported_lost(Topology::Kind::kMariaDb);
}

TEST_CASE("failover, MariaDB: a URL whose every host is a read-only replica", "[mariadb][input]") {
  every_host_a_standby(Topology::Kind::kMariaDb);
}
