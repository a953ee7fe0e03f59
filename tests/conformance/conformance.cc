// The lease conformance suite (docs/design.md, "Conformance"), written once and linked into every backend's test
// binary. Each test isolates itself with its own table prefix. Multi-process cases re-execute
// the test binary with --child.
#include <catch2/catch.hpp>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include "context.h"
#include "environment.h"
#include "process.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

std::string unique_prefix() {
  static std::atomic<int> counter{0};
  return "t" + std::to_string(getpid()) + "_" + std::to_string(++counter) + "_";
}

Context server_context(std::string backend, const char* url_var, const char* skip_var, const char* script_var,
                       const char* state_var, const std::string& restart_args) {
  Context c;
  c.backend = std::move(backend);
  c.url = required_server_url(url_var, skip_var);
  c.over_tcp = true;
  if (!env(script_var).empty()) {
    const std::string cmd = env(script_var) + " restart " + env(state_var) + " " + restart_args;
    c.restart = [cmd] { REQUIRE(std::system(cmd.c_str()) == 0); };
  }
  const std::string script = env(script_var);
  const std::string url = c.url;
  c.start_stepped_server = [script, url](const std::string& clock_file) {
    REQUIRE_FALSE(script.empty());
    const std::string port = env("DBLOCK_TEST_CLOCK_PORT");
    REQUIRE_FALSE(port.empty());  // the run gives no port for a stepped-clock server
    const Url::Host server = parse_url(url).hosts.at(0);
    const std::string at = server.host + ":" + std::to_string(server.port);
    const std::size_t where = url.find(at);
    REQUIRE(where != std::string::npos);
    Context::SteppedServer out;
    out.url = url.substr(0, where) + "127.0.0.1:" + port + url.substr(where + at.size());
    const std::string state = "/tmp/dblock-test-clock-" + port;
    const std::string start = "DBLOCK_SERVER_CLOCK_FILE='" + clock_file + "' " + script + " start " + state + " " + port;
    REQUIRE(std::system(start.c_str()) == 0);
    const std::string stop = script + " stop " + state + " >/dev/null";
    out.running = std::shared_ptr<void>(nullptr, [stop](void*) { std::system(stop.c_str()); });
    return out;
  };
  return c;
}

namespace {

// The first 128 bits of SHA-256 of the secret's bytes: what the SQL services store.
std::string sha256_prefix_hex(const OwnerSecret& secret) {
  unsigned char full[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  REQUIRE(EVP_Digest(secret.bytes.data(), secret.bytes.size(), full, &length, EVP_sha256(), nullptr) == 1);
  OwnerSecret first;
  std::copy_n(full, first.bytes.size(), first.bytes.begin());
  return first.hex();
}

}  // namespace

std::string digest_hex(const OwnerSecret& secret) {
  if (context().digest) return context().digest(secret);
  return sha256_prefix_hex(secret);
}

OwnerSecret secret_from_hex(const std::string& hex) {
  REQUIRE(hex.size() >= 32);
  OwnerSecret out;
  for (std::size_t i = 0; i < out.bytes.size(); ++i) {
    out.bytes[i] = static_cast<std::uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return out;
}

std::string with_table(std::string sql, const std::string& table) {
  auto at = sql.find("{T}");
  if (at != std::string::npos) sql.replace(at, 3, table);
  return sql;
}

void create_guard_table(LockManager& manager, const std::string& table) {
  auto setup = manager.try_acquire("setup");
  REQUIRE(setup);
  dblock::sql::Database(manager).run_guarded(*setup, [&](Transaction& tx) { tx.execute(with_table(context().guard_create, table)); });
  setup->release();
}

RowLocks* row_locks_of(LockManager& manager) {
  SqlFeatures* sql = service_of(manager).sql_features();
  return sql == nullptr ? nullptr : sql->row_locks();
}

void check_guard_unsupported(LockManager& manager) {
  auto lease = manager.try_acquire("guard-unsupported");
  REQUIRE(lease);
  CHECK_THROWS_AS(dblock::sql::Database(manager).run_guarded(*lease, [](Transaction&) {}), UnsupportedError);
}

std::unique_ptr<LockManager> open_manager(ManagerOptions options, const std::string& prefix) {
  options.table_prefix = prefix;
  return dblock::open(context().url, std::move(options));
}

namespace {

// ---- child processes -------------------------------------------------------------------------

// counter <prefix> <name> <file> <iterations> <threads>: every thread loops acquire -> read the
// file -> pause -> write +1 -> release. The non-atomic read-modify-write loses increments unless
// the lock excludes everybody.
int child_counter(const std::string& prefix, const std::string& name, const std::string& file, int iterations,
                  int threads) {
  ManagerOptions options;
  options.default_ttl = 10s;
  auto manager = open_manager(options, prefix);
  std::atomic<int> failures{0};
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&] {
      for (int i = 0; i < iterations; ++i) {
        auto lease = manager->acquire(name, 60s);
        if (!lease) {
          ++failures;
          continue;
        }
        long value = 0;
        {
          std::ifstream in(file);
          in >> value;
        }
        std::this_thread::sleep_for(200us);  // widen the race window on purpose
        {
          std::ofstream out(file, std::ios::trunc);
          out << value + 1 << "\n";
        }
        if (lease->release() != ReleaseResult::kReleased) ++failures;
      }
    });
  }
  for (auto& w : workers) w.join();
  std::printf("done %d\n", failures.load());
  std::fflush(stdout);
  return failures.load() == 0 ? 0 : 1;
}

// hold <prefix> <name> <ttl_ms>: acquires, reports "acquired <fence> <safe-until>" (safe-until as
// steady_clock nanoseconds: CLOCK_MONOTONIC, the same in every process), then waits (bounded) for
// the lease to be lost, reports how it learned it, and tries to release.
int child_hold(const std::string& prefix, const std::string& name, int ttl_ms) {
  auto manager = open_manager(ManagerOptions{}, prefix);
  std::mutex m;
  std::condition_variable cv;
  bool callback = false;
  AcquireOptions options;
  options.ttl = milliseconds(ttl_ms);
  options.on_lost = [&](const LostLease&) {
    std::lock_guard<std::mutex> lock(m);
    callback = true;
    cv.notify_all();
  };
  auto lease = manager->acquire(name, 10s, options);
  if (!lease) {
    std::printf("not-acquired\n");
    return 2;
  }
  std::printf("acquired %lld %s\n", static_cast<long long>(lease->fence()), steady_stamp(lease->safe_until()).c_str());
  std::fflush(stdout);
  {
    std::unique_lock<std::mutex> lock(m);
    cv.wait_for(lock, 60s, [&] { return callback; });
  }
  std::printf("lost callback=%d flag=%d\n", callback ? 1 : 0, lease->lost() ? 1 : 0);
  std::printf("release %s\n", to_string(lease->release()));
  std::fflush(stdout);
  return 0;
}

// guarded <prefix> <name> <ttl_ms> <table>: acquires, reports, waits for "write" on stdin, then
// attempts a guarded insert of (2, fence) and reports whether it committed.
int child_guarded(const std::string& prefix, const std::string& name, int ttl_ms, const std::string& table) {
  auto manager = open_manager(ManagerOptions{}, prefix);
  AcquireOptions options;
  options.ttl = milliseconds(ttl_ms);
  auto lease = manager->acquire(name, 10s, options);
  if (!lease) {
    std::printf("not-acquired\n");
    return 2;
  }
  std::printf("acquired %lld\n", static_cast<long long>(lease->fence()));
  std::fflush(stdout);
  char line[64];
  if (!std::fgets(line, sizeof(line), stdin)) return 3;
  try {
    // run_guarded asks the backend (the local lost() flag is not consulted): this case is about
    // what the backend's check does with a stale fence.
    dblock::sql::Database(*manager).run_guarded(*lease, [&](Transaction& tx) {
      tx.execute(with_table(context().guard_insert, table), {std::int64_t{2}, lease->fence()});
    });
    std::printf("guard committed\n");
  } catch (const LeaseLostError&) {
    std::printf("guard rejected\n");
  }
  std::fflush(stdout);
  return 0;
}


long read_counter(const std::string& file) {
  std::ifstream in(file);
  long value = -1;
  in >> value;
  return value;
}

// turns <prefix> <name> <iterations>: prints "ready", waits for a line on stdin (so that both
// contenders start together), then loops acquire -> release with nothing in between, and prints
// "done <failures> <waits over 150 ms> <longest wait in ms>".
int child_turns(const std::string& prefix, const std::string& name, int iterations) {
  auto manager = open_manager({}, prefix);
  std::printf("ready\n");
  std::fflush(stdout);
  std::string go;
  std::getline(std::cin, go);
  int failures = 0, stalls = 0;
  SteadyClock::duration longest{};
  for (int i = 0; i < iterations; ++i) {
    const auto asked = SteadyClock::now();
    auto lease = manager->acquire(name, 30s);
    const auto waited = SteadyClock::now() - asked;
    longest = std::max(longest, waited);
    if (waited > 150ms) ++stalls;
    if (!lease || lease->release() != ReleaseResult::kReleased) ++failures;
  }
  std::printf("done %d %d %lld\n", failures, stalls,
              static_cast<long long>(std::chrono::duration_cast<milliseconds>(longest).count()));
  std::fflush(stdout);
  return failures == 0 ? 0 : 1;
}

}  // namespace

// Waits (bounded) for a line starting with `prefix` from `child`.
std::string expect_line(Child& child, const std::string& prefix, milliseconds timeout) {
  auto deadline = SteadyClock::now() + timeout;
  std::string skipped;
  while (SteadyClock::now() < deadline) {
    auto line = child.read_line(std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now()));
    if (!line) break;
    if (line->rfind(prefix, 0) == 0) return *line;
    skipped += "\n  " + *line;
  }
  FAIL("child did not print '" << prefix << "' in time; it printed:" << skipped);
  return {};
}

int run_child(int argc, char** argv) {
  std::vector<std::string> a(argv, argv + argc);
  try {
    if (a.size() == 8 && a[2] == "counter") return child_counter(a[3], a[4], a[5], std::stoi(a[6]), std::stoi(a[7]));
    if (a.size() == 6 && a[2] == "hold") return child_hold(a[3], a[4], std::stoi(a[5]));
    if (a.size() == 7 && a[2] == "guarded") return child_guarded(a[3], a[4], std::stoi(a[5]), a[6]);
    if (a.size() == 6 && a[2] == "turns") return child_turns(a[3], a[4], std::stoi(a[5]));
    if (a.size() == 6 && a[2] == "elect") return child_elect(a[3], a[4], std::stoi(a[5]));
    if (a.size() == 7 && a[2] == "permit") return child_permit(a[3], a[4], std::stoi(a[5]), std::stoi(a[6]));
    if (a.size() == 6 && a[2] == "job") return child_job(a[3], a[4], std::stoi(a[5]));
  } catch (const std::exception& e) {
    std::printf("error %s\n", e.what());
    return 3;
  }
  std::fprintf(stderr, "unknown child role\n");
  return 64;
}

// ---- 1. exclusion ----------------------------------------------------------------------------

TEST_CASE("exclusive: threads in several processes increment a shared counter exactly", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  TempDir dir;
  const std::string file = dir.file("counter");
  { std::ofstream(file) << 0 << "\n"; }
  open_manager({}, prefix)->migrate();  // create the tables once, before the race
  constexpr int kProcesses = 3, kThreads = 2, kIterations = 25;
  std::vector<Child> children;
  for (int p = 0; p < kProcesses; ++p) {
    children.emplace_back(std::vector<std::string>{self_path(), "--child", "counter", prefix, "counter-lock", file,
                                                   std::to_string(kIterations), std::to_string(kThreads)});
  }
  for (auto& child : children) {
    auto line = expect_line(child, "done", 120s);
    CHECK(line == "done 0");
    auto status = child.wait(10s);
    REQUIRE(status);
    CHECK(WIFEXITED(*status));
    CHECK(WEXITSTATUS(*status) == 0);
  }
  CHECK(read_counter(file) == kProcesses * kThreads * kIterations);
}

TEST_CASE("exclusive: threads of one process never overlap", "[lease][conformance]") {
  auto manager = open_manager({}, unique_prefix());
  std::atomic<int> inside{0}, max_inside{0}, total{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto lease = manager->acquire("threads", 30s);
        if (!lease) continue;
        int now = ++inside;
        int seen = max_inside.load();
        while (now > seen && !max_inside.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(100us);
        --inside;
        ++total;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(max_inside.load() == 1);
  CHECK(total.load() == 80);
}

// ---- 2. try-acquire and timeouts -------------------------------------------------------------

TEST_CASE("try-acquire on a held name returns promptly; acquire times out within wait + epsilon",
          "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  auto held = a->try_acquire("busy");
  REQUIRE(held);

  auto start = SteadyClock::now();
  auto none = b->try_acquire("busy");
  auto tried = SteadyClock::now() - start;
  CHECK_FALSE(none);
  CHECK(tried < 2s);

  start = SteadyClock::now();
  auto timed_out = b->acquire("busy", 300ms);
  auto waited = SteadyClock::now() - start;
  CHECK_FALSE(timed_out);
  CHECK(waited >= 300ms);
  CHECK(waited < 300ms + 2s);
  CHECK(held->release() == ReleaseResult::kReleased);
}

// The positive control of NoAssertions (tests/sqlite/CMakeLists.txt): hidden, run only by its
// own filter, and that run must fail.
TEST_CASE("control: a case that asserts nothing fails the run", "[.][control-no-assertions]") {}

// ---- 3. expiry takeover ----------------------------------------------------------------------

TEST_CASE("expiry takeover: a SIGKILLed holder is replaced after its TTL, not before", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  constexpr milliseconds kTtl = 1500ms;
  Child holder({self_path(), "--child", "hold", prefix, "takeover", std::to_string(kTtl.count())});
  const std::optional<StampedLine> acquired = parse_stamped(expect_line(holder, "acquired"));
  const auto acquired_seen = SteadyClock::now();
  holder.signal(SIGKILL);
  REQUIRE(holder.wait(10s));
  REQUIRE(acquired);
  // The dead holder's lease lives on the service at least until its safe-until (its send time +
  // TTL - drift margin): the moment this process reads the line is later than that send time by
  // however long a loaded machine took, so it cannot bound the take-over from below.
  const SteadyClock::time_point holder_safe_until = acquired->at;

  const auto tried_at = SteadyClock::now();
  const bool taken_at_once = manager->try_acquire("takeover").has_value();
  CHECK((!taken_at_once || tried_at >= holder_safe_until));  // still live, unless that long passed
  auto lease = manager->acquire("takeover", 20s);
  const auto taken_at = SteadyClock::now();
  REQUIRE(lease);
  CHECK(taken_at >= holder_safe_until - 200ms);
  CHECK(taken_at - acquired_seen <= kTtl + 3s);
  CHECK(lease->fence() > acquired->fence);  // the dead holder's fence is below the new one
}

// ---- 4. fences -------------------------------------------------------------------------------

namespace {

// Where the service has Maintenance, a lease nobody renews (taken past the engine) expires and the
// reaper deletes it: reap() counts it. Without Maintenance nothing is reaped (the service's
// entries expire on their own) and reap() returns 0. Returns the fence that lease drew.
std::int64_t reap_one(LockManager& manager, const std::string& name) {
  ServiceDriver service(manager);
  const Outcome expiring = service.attempt(name, LockMode::kExclusive, OwnerSecret::generate(), 100ms);
  REQUIRE(expiring.acquired);
  if (service.service.maintenance() == nullptr) {
    CHECK(manager.reap() == 0);
    // Nothing to reap: the entry ends by its TTL on the service, which list() no longer shows
    // (or with the manager's session, for a service whose leases a session bounds).
    if (service.service.traits().bound == LeaseBound::kSession) return expiring.fence;
    bool expired = false;
    for (const auto until = SteadyClock::now() + 10s; !expired && SteadyClock::now() < until;) {
      expired = !manager.inspect(name).has_value();
      if (!expired) std::this_thread::sleep_for(10ms);
    }
    CHECK(expired);
    return expiring.fence;
  }
  std::size_t reaped = 0;
  for (const auto until = SteadyClock::now() + 10s; reaped == 0 && SteadyClock::now() < until;) {
    reaped = manager.reap();
    if (reaped == 0) std::this_thread::sleep_for(20ms);
  }
  CHECK(reaped >= 1);
  return expiring.fence;
}

}  // namespace

TEST_CASE("fence strictly increases across acquisitions, takeovers, reaping and reopening", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  std::int64_t last = 0;
  auto check_next = [&](const Lease& lease) {
    CHECK(lease.fence() > last);
    last = lease.fence();
  };
  {
    auto manager = open_manager({}, prefix);
    for (int i = 0; i < 5; ++i) {
      auto lease = manager->try_acquire("fenced");
      REQUIRE(lease);
      check_next(*lease);
    }
    // Takeover: a holder SIGKILLed while it holds the name; the next holder takes it over once
    // the service gave up the dead one (its TTL, or its session).
    Child holder({self_path(), "--child", "hold", prefix, "fenced", std::to_string(capped_ttl(1500ms).count())});
    const std::optional<StampedLine> dead = parse_stamped(expect_line(holder, "acquired"));
    REQUIRE(dead);
    CHECK(dead->fence > last);
    last = dead->fence;
    holder.signal(SIGKILL);
    REQUIRE(holder.wait(10s));
    CHECK_FALSE(manager->try_acquire("fenced"));  // still the dead holder's
    auto lease = manager->acquire("fenced", 20s);
    REQUIRE(lease);
    check_next(*lease);
    lease->release();
    // Reaping deletes the expired entry; the fence source survives it.
    const std::int64_t reaped_fence = reap_one(*manager, "reaped");
    CHECK(reaped_fence > last);
    last = reaped_fence;
  }
  if (context().restart) context().restart();
  auto reopened = open_manager({}, prefix);
  auto lease = reopened->try_acquire("reaped");
  REQUIRE(lease);
  check_next(*lease);
  auto lease2 = reopened->try_acquire("fenced");
  REQUIRE(lease2);
  check_next(*lease2);
}

TEST_CASE("reentrant holds share one fence", "[lease][conformance]") {
  auto manager = open_manager({}, unique_prefix());
  AcquireOptions reentrant;
  reentrant.reentrant = true;
  auto first = manager->acquire("re", 5s, reentrant);
  REQUIRE(first);
  auto second = manager->acquire("re", 5s, reentrant);
  REQUIRE(second);
  CHECK(second->fence() == first->fence());
  CHECK(first->hold_count() == 2);
  CHECK(second->release() == ReleaseResult::kReleased);
  REQUIRE(manager->inspect("re"));  // one hold left: still held in the backend
  CHECK(first->release() == ReleaseResult::kReleased);
  CHECK_FALSE(manager->inspect("re"));
}

TEST_CASE("without reentrancy a second acquire by the holding thread is refused", "[lease][conformance]") {
  auto manager = open_manager({}, unique_prefix());
  auto lease = manager->try_acquire("nr");
  REQUIRE(lease);
  CHECK_FALSE(manager->try_acquire("nr"));
  CHECK_THROWS_AS(manager->acquire("nr", 1s), UsageError);
}

// ---- 5. renewal and loss ---------------------------------------------------------------------

TEST_CASE("renewal keeps a lease alive over several TTLs", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  auto rival = open_manager({}, prefix);
  // A renewal runs at TTL/3 and must land before safe-until: 1.5 s leaves ~0.8 s for one to
  // complete on a loaded two-core machine under a sanitizer (at 0.4 s and 0.9 s, single renewals
  // on PostgreSQL missed it there, behind the rival's refused attempts).
  AcquireOptions options;
  options.ttl = 1500ms;
  std::mutex mutex;
  std::string lost_because;
  options.on_lost = [&](const LostLease& lost) {
    std::lock_guard<std::mutex> lock(mutex);
    lost_because = lost.reason;
  };
  auto lease = holder->try_acquire("renewed", options);
  REQUIRE(lease);
  const auto until = SteadyClock::now() + 2500ms + options.ttl;  // past the TTL twice over
  int attempts = 0;
  while (SteadyClock::now() < until) {
    CHECK_FALSE(rival->try_acquire("renewed"));
    ++attempts;
    std::this_thread::sleep_for(50ms);  // sampling interval, not synchronisation
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    INFO("lost: " << lost_because);
    CHECK_FALSE(lease->lost());
  }
  CHECK(attempts > 10);
  auto info = rival->inspect("renewed");
  REQUIRE(info);
  CHECK(info->renewals >= 5);
  CHECK(info->fence == lease->fence());
  CHECK(lease->release() == ReleaseResult::kReleased);
}

TEST_CASE("a paused holder loses its lease: callback and flag fire, its release is refused", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  Child holder({self_path(), "--child", "hold", prefix, "paused", "600"});
  const std::optional<StampedLine> stale = parse_stamped(expect_line(holder, "acquired"));
  REQUIRE(stale);
  holder.signal(SIGSTOP);  // renewal stops with the process
  auto lease = manager->acquire("paused", 20s);
  REQUIRE(lease);
  CHECK(lease->fence() > stale->fence);  // the paused holder's fence is below the new one
  holder.signal(SIGCONT);
  CHECK(expect_line(holder, "lost") == "lost callback=1 flag=1");
  CHECK(expect_line(holder, "release") == "release already lost");
  // The stale holder's release changed nothing.
  auto info = manager->inspect("paused");
  REQUIRE(info);
  CHECK(info->fence == lease->fence());
  CHECK_FALSE(lease->lost());
  REQUIRE(holder.wait(10s));
}

TEST_CASE("force-release by an admin bumps the fence and the holder learns it lost", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  ManagerOptions admin_options;
  admin_options.holder = "ops@console";
  auto admin = open_manager(admin_options, prefix);
  LostWatch watch;
  AcquireOptions options;
  options.ttl = 600ms;
  options.on_lost = watch.callback();
  auto lease = manager->try_acquire("evicted", options);
  REQUIRE(lease);
  CHECK(admin->force_release("evicted"));
  CHECK_FALSE(admin->force_release("evicted"));  // nothing held any more
  const std::optional<LostLease> lost = watch.wait(10s);
  REQUIRE(lost.has_value());
  CHECK(lost->fence == lease->fence());
  // The reason names the admin release and who made it, where the service keeps a record of
  // force-releases; elsewhere it says the renewal was refused.
  if (context().expects.audit_log) {
    CHECK_THAT(lost->reason, Catch::Matchers::StartsWith("released by admin: force_release by 'ops@console'"));
  } else {
    CHECK_THAT(lost->reason, Catch::Matchers::StartsWith("renewal refused"));
  }
  CHECK(lease->lost());
  CHECK_FALSE(lease->held());  // held() is "may act as the holder": not on a lost lease
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
  auto next = admin->try_acquire("evicted");
  REQUIRE(next);
  CHECK(next->fence() > lease->fence() + 1);  // the eviction itself consumed a fence
}

TEST_CASE("with_lease runs the function only while the lease holds and says whether it ran", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto other = open_manager({}, prefix);
  int runs = 0;
  auto count = [&](Lease& lease, std::stop_token stop) {
    ++runs;
    CHECK(lease.held());
    CHECK_FALSE(stop.stop_requested());
  };

  SECTION("not acquired: the function does not run") {
    auto held = other->try_acquire("job");
    REQUIRE(held);
    CHECK(manager->with_lease("job", 0ms, count) == LeaseRun::kNotAcquired);
    CHECK(manager->with_lease("job", 100ms, count) == LeaseRun::kNotAcquired);
    CHECK(runs == 0);
  }
  SECTION("completed: ran once, and the name is free afterwards") {
    CHECK(manager->with_lease("job", 1s, count) == LeaseRun::kCompleted);
    CHECK(runs == 1);
    CHECK(other->try_acquire("job"));
  }
  SECTION("the function throws: the lease is released and the error propagates") {
    CHECK_THROWS_WITH(manager->with_lease("job", 1s, [](Lease&, std::stop_token) { throw std::runtime_error("boom"); }),
                      "boom");
    CHECK(other->try_acquire("job"));
  }
  SECTION("lost while running: the stop token is asked to stop, on_lost still runs, the answer is kLost") {
    LostWatch watch;
    AcquireOptions options;
    options.ttl = 600ms;
    options.on_lost = watch.callback();
    bool stopped = false;
    const LeaseRun run = manager->with_lease(
        "job", 1s,
        [&](Lease&, std::stop_token stop) {
          REQUIRE(other->force_release("job"));
          std::mutex m;
          std::condition_variable_any cv;
          std::unique_lock<std::mutex> lock(m);
          stopped = cv.wait_for(lock, stop, 10s, [] { return false; }) || stop.stop_requested();
        },
        options);
    CHECK(stopped);
    CHECK(run == LeaseRun::kLost);
    CHECK(watch.wait(5s).has_value());
  }
}

TEST_CASE("a force-release is recorded: when, by whom, whom it evicted, the fences",
          "[lease][conformance][audit][needs:audit]") {
  const std::string prefix = unique_prefix();
  auto as = [&](const char* holder) {
    ManagerOptions options;
    options.holder = holder;
    return open_manager(options, prefix);
  };
  auto worker = as("worker-1");
  auto admin = as("ops@console");
  auto lease = worker->try_acquire("audited");
  REQUIRE(lease);
  CHECK(admin->force_release_history("audited").empty());
  REQUIRE(admin->force_release("audited"));
  CHECK_FALSE(admin->force_release("audited"));  // nothing held: nothing recorded

  auto history = admin->force_release_history("audited");
  REQUIRE(history.size() == 1);
  const ForceReleaseRecord& r = history[0];
  CHECK(r.name == "audited");
  CHECK(r.by == "ops@console");
  CHECK(r.by_account.empty() == !context().accounts);
  CHECK(r.evicted == "worker-1");
  CHECK(r.mode == LockMode::kExclusive);
  CHECK(r.old_fence == lease->fence());
  CHECK(r.new_fence > r.old_fence);
  // On the service's clock, between the evicted lease's acquisition and the next one's (taken by
  // another manager: this thread still holds the evicted lease until its next renewal says so).
  auto next_worker = as("worker-2");
  auto next = next_worker->try_acquire("audited");
  REQUIRE(next);
  CHECK(next->fence() > r.new_fence);
  const auto info = worker->inspect("audited");
  REQUIRE(info);
  if (info->acquired_at_us != 0) {  // 0: a service with no clock a client reads (etcd)
    CHECK(r.at_us <= info->acquired_at_us);
    CHECK(r.at_us > info->acquired_at_us - 60'000'000);
  } else {
    CHECK(r.at_us > 0);
  }

  if (context().shared_leases) {
    auto other = as("reader-2");
    AcquireOptions shared;
    shared.mode = LockMode::kShared;
    auto r1 = worker->try_acquire("shared-audited", shared);
    auto r2 = other->try_acquire("shared-audited", shared);
    REQUIRE(r1);
    REQUIRE(r2);
    REQUIRE(admin->force_release("shared-audited"));
    const auto all = admin->force_release_history();
    REQUIRE(all.size() == 2);
    CHECK(all[0].name == "shared-audited");  // newest first
    CHECK(all[0].mode == LockMode::kShared);
    CHECK(all[0].evicted == "reader-2,worker-1");
    CHECK(all[1].name == "audited");
    CHECK(admin->force_release_history(std::nullopt, 1).size() == 1);
  }
}

// ---- 6. owner-only release -------------------------------------------------------------------

TEST_CASE("release by a non-owner changes nothing; double release is harmless", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lease = manager->try_acquire("owned");
  REQUIRE(lease);
  // A stranger with a random secret.
  ServiceDriver service(*manager);
  CHECK_FALSE(service.release("owned", LockMode::kExclusive, OwnerSecret::generate()));
  CHECK_FALSE(service.renew("owned", LockMode::kExclusive, OwnerSecret::generate(), 10s).renewed);
  auto info = manager->inspect("owned");
  REQUIRE(info);
  CHECK(info->fence == lease->fence());

  CHECK(lease->release() == ReleaseResult::kReleased);
  auto other = open_manager({}, prefix);
  auto next = other->try_acquire("owned");
  REQUIRE(next);
  CHECK(lease->release() == ReleaseResult::kReleased);  // idempotent: same answer, no effect
  auto still = other->inspect("owned");
  REQUIRE(still);
  CHECK(still->fence == next->fence());
}

// ---- 7. shared leases ------------------------------------------------------------------------

TEST_CASE("shared leases admit many readers and exclude writers", "[lease][conformance][shared][needs:shared]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  auto r1 = a->try_acquire("rw", shared);
  auto r2 = b->try_acquire("rw", shared);
  REQUIRE(r1);
  REQUIRE(r2);
  CHECK(r2->fence() > r1->fence());
  auto c = open_manager({}, prefix);
  CHECK_FALSE(c->try_acquire("rw"));  // writer excluded
  auto info = a->inspect("rw");
  REQUIRE(info);
  CHECK(info->mode == LockMode::kShared);
  CHECK(info->holders == 2);
  CHECK(r1->release() == ReleaseResult::kReleased);
  CHECK_FALSE(b->try_acquire("rw"));  // one reader left
  CHECK(r2->release() == ReleaseResult::kReleased);
  auto writer = a->try_acquire("rw");
  REQUIRE(writer);
  CHECK_FALSE(b->try_acquire("rw", shared));  // readers excluded by the writer
}

TEST_CASE("a shared lease is renewed and a reader stays alone after others leave", "[lease][conformance][shared][needs:shared]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  shared.ttl = 1500ms;  // as the renewal case: room for one renewal under load
  auto reader = a->try_acquire("rw2", shared);
  REQUIRE(reader);
  const auto until = SteadyClock::now() + 2 * shared.ttl;
  while (SteadyClock::now() < until) {
    CHECK_FALSE(b->try_acquire("rw2"));
    std::this_thread::sleep_for(50ms);  // sampling interval
  }
  CHECK_FALSE(reader->lost());
}

// ---- 8. wake-up ------------------------------------------------------------------------------

TEST_CASE("a waiter acquires promptly after release", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  options.max_poll = 200ms;
  auto holder_manager = open_manager(options, prefix);
  auto waiter_manager = open_manager(options, prefix);
  for (auto* waiter_side : {holder_manager.get(), waiter_manager.get()}) {
    auto lease = holder_manager->try_acquire("handoff");  // default TTL 30 s: expiry is not the way in
    REQUIRE(lease);
    const auto lease_taken = SteadyClock::now();
    std::atomic<bool> acquired{false};
    SteadyClock::time_point acquired_at;
    std::thread waiter([&] {
      auto l = waiter_side->acquire("handoff", 20s);
      acquired_at = SteadyClock::now();
      acquired = l.has_value();
    });
    // The release must be what ends the wait: the waiter in line first (where the service keeps
    // one; Redlock keeps none, and its waiter's first try is answered within a round trip).
    bool queued = false;
    for (const auto until = SteadyClock::now() + 10s; !queued && SteadyClock::now() < until;) {
      const auto info = holder_manager->inspect("handoff");
      queued = info && (info->waiters >= 1 || (info->waiters < 0 && SteadyClock::now() - lease_taken >= 300ms));
      if (!queued) std::this_thread::sleep_for(5ms);
    }
    REQUIRE(queued);
    const auto released_at = SteadyClock::now();
    REQUIRE(lease->release() == ReleaseResult::kReleased);
    waiter.join();
    REQUIRE(acquired);
    auto handoff = acquired_at - released_at;
    INFO("hand-off took " << std::chrono::duration_cast<std::chrono::microseconds>(handoff).count() << " us"
                          << (waiter_side == holder_manager.get() ? " (same manager)" : " (other manager)"));
    CHECK(handoff < options.max_poll * 2 + 500ms);  // bounded by the poll interval, far below the TTL
  }
}

// Two processes that take turns on one name with nothing in between, the most common contention
// there is: every hand-off must be prompt. A hand-off that waits for a poll instead of the
// release (max_poll, 200 ms, jittered up to 300 ms) shows up as a wait over 150 ms; a normal one
// takes about a millisecond, so a handful over the threshold allows for a busy machine, not for
// a stall on a share of the hand-offs.
TEST_CASE("liveness: two processes taking turns on one name never wait for a poll", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  open_manager({}, prefix)->migrate();  // create the tables once, before the race
  constexpr int kIterations = 200;      // per process: 400 acquisitions, about 400 hand-offs
  std::vector<Child> contenders;
  for (int p = 0; p < 2; ++p) {
    contenders.emplace_back(std::vector<std::string>{self_path(), "--child", "turns", prefix, "turns",
                                                     std::to_string(kIterations)});
  }
  for (auto& child : contenders) expect_line(child, "ready", 60s);
  const auto start = SteadyClock::now();
  for (auto& child : contenders) child.write_line("go");
  int stalls = 0;
  for (auto& child : contenders) {
    std::istringstream done(expect_line(child, "done", 120s));
    std::string word;
    int failures = -1, child_stalls = -1;
    long long longest_ms = -1;
    done >> word >> failures >> child_stalls >> longest_ms;
    INFO("contender: " << failures << " failures, " << child_stalls << " waits over 150 ms, longest " << longest_ms
                       << " ms");
    CHECK(failures == 0);
    stalls += child_stalls;
  }
  const auto took = SteadyClock::now() - start;
  INFO("400 acquisitions took " << std::chrono::duration_cast<milliseconds>(took).count() << " ms");
  CHECK(stalls <= 4);
  CHECK(took < 20s);  // 400 x 0.2 s of stalls would take 80 s
}

// ---- 9. guard --------------------------------------------------------------------------------

TEST_CASE("guard: a guarded write commits only while the lease is held with that fence", "[lease][conformance][guard]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  if (service_of(*manager).sql_features() == nullptr) {
    check_guard_unsupported(*manager);
    return;
  }
  auto admin = open_manager({}, prefix);
  const std::string table = prefix + "guarded";
  auto replace = [&](std::string sql) {
    auto at = sql.find("{T}");
    sql.replace(at, 3, table);
    return sql;
  };
  auto lease = manager->try_acquire("guarded");
  REQUIRE(lease);
  dblock::sql::Database(*manager).run_guarded(*lease, [&](Transaction& tx) {
    tx.execute(replace(context().guard_create));
    tx.execute(replace(context().guard_insert), {std::int64_t{1}, lease->fence()});
  });
  CHECK(admin->force_release("guarded"));  // the holder is evicted; its fence is stale now
  // Through the manager too (its flag may not have noticed yet: the backend check decides).
  bool rejected = false;
  try {
    dblock::sql::Database(*manager).run_guarded(*lease, [&](Transaction& tx) {
      tx.execute(replace(context().guard_insert), {std::int64_t{3}, lease->fence()});
    });
  } catch (const LeaseLostError&) {
    rejected = true;
  }
  CHECK(rejected);
  auto next = admin->try_acquire("guarded");
  REQUIRE(next);
  std::vector<std::vector<Value>> rows;
  dblock::sql::Database(*admin).run_guarded(*next, [&](Transaction& tx) { rows = tx.query("SELECT id FROM " + table + " ORDER BY id"); });
  REQUIRE(rows.size() == 1);
  CHECK(std::get<std::int64_t>(rows[0][0]) == 1);
}

TEST_CASE("guard: a refused guarded write marks the handle lost; the same thread may acquire the name again",
          "[lease][conformance][guard][needs:sql]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto admin = open_manager({}, prefix);
  LostWatch watch;
  AcquireOptions options;
  options.ttl = 30s;  // no renewal comes before the guard's answer
  options.on_lost = watch.callback();
  auto lease = manager->try_acquire("guard-lost", options);
  REQUIRE(lease);
  CHECK(admin->force_release("guard-lost"));
  CHECK_THROWS_AS(dblock::sql::Database(*manager).run_guarded(*lease, [](Transaction&) {}), LeaseLostError);
  CHECK(lease->lost());  // at once, not at the next renewal
  const std::optional<LostLease> lost = watch.wait(10s);
  REQUIRE(lost.has_value());
  CHECK(lost->reason.find("guarded write") != std::string::npos);
  const MetricsSnapshot metrics = manager->metrics();  // counted before the callback ran
  CHECK(metrics.lost.guard == 1);
  CHECK(metrics.lost.renewal_refused == 0);
  // The lost handle does not count as held: a wait on the same thread is not a deadlock.
  auto again = manager->acquire("guard-lost", 5s);
  REQUIRE(again);
  CHECK(again->fence() > lease->fence());
  // A released handle: a UsageError that says so (nothing reaches the service).
  REQUIRE(again->release() == ReleaseResult::kReleased);
  CHECK_THROWS_WITH(dblock::sql::Database(*manager).run_guarded(*again, [](Transaction&) {}),
                    Catch::Matchers::Contains("this one is released"));
}

TEST_CASE("guard: the late write of a holder paused past its TTL is rejected", "[lease][conformance][guard]") {
  const std::string prefix = unique_prefix();
  const std::string table = prefix + "paused_guard";
  auto manager = open_manager({}, prefix);
  if (service_of(*manager).sql_features() == nullptr) {
    check_guard_unsupported(*manager);
    return;
  }
  create_guard_table(*manager, table);

  Child holder({self_path(), "--child", "guarded", prefix, "paused-guard", "600", table});
  expect_line(holder, "acquired");
  holder.signal(SIGSTOP);
  auto lease = manager->acquire("paused-guard", 20s);  // takes over once the paused lease expired
  REQUIRE(lease);
  dblock::sql::Database(*manager).run_guarded(*lease, [&](Transaction& tx) {
    tx.execute(with_table(context().guard_insert, table), {std::int64_t{1}, lease->fence()});
  });
  holder.signal(SIGCONT);
  holder.write_line("write");
  CHECK(expect_line(holder, "guard") == "guard rejected");
  std::vector<std::vector<Value>> rows;
  dblock::sql::Database(*manager).run_guarded(*lease, [&](Transaction& tx) { rows = tx.query("SELECT id FROM " + table + " ORDER BY id"); });
  REQUIRE(rows.size() == 1);
  CHECK(std::get<std::int64_t>(rows[0][0]) == 1);
  REQUIRE(holder.wait(10s));
}

// ---- optional modes, on every backend that has them ---------------------------------------

void create_app_table(LockManager& manager, const std::string& prefix, const std::vector<std::string>& statements) {
  REQUIRE(dblock::sql::Database(manager).run_in_transaction_lock("setup-" + prefix, 5s, [&](Transaction& tx) {
    for (const std::string& statement : statements) tx.execute(statement);
  }));
}

namespace {

// For a service without SQL features: compare-and-set, reading a version and the transaction lock
// that creates the case's table each throw UnsupportedError.
void check_cas_unsupported(LockManager& manager, const std::string& table) {
  VersionedUpdate update;
  update.table = table;
  update.id = std::int64_t{1};
  update.set = {{"balance", std::int64_t{90}}};
  CHECK_THROWS_AS(dblock::sql::Database(manager).compare_and_set(update), UnsupportedError);
  CHECK_THROWS_AS(dblock::sql::Database(manager).read_version(table, "id", std::int64_t{1}, "version"), UnsupportedError);
  CHECK_THROWS_AS(dblock::sql::Database(manager).run_in_transaction_lock("tx-unsupported", 0ms, [](Transaction&) {}), UnsupportedError);
}

}  // namespace

TEST_CASE("optimistic compare-and-set: conflicts reported, concurrent increments exact", "[conformance][optimistic]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  const std::string table = prefix + "accounts";
  if (service_of(*manager).sql_features() == nullptr) {
    check_cas_unsupported(*manager, table);
    return;
  }
  create_app_table(*manager, prefix,
                   {"CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, balance BIGINT, version BIGINT NOT NULL)",
                    "INSERT INTO " + table + " VALUES (1, 100, 0)"});
  VersionedUpdate update;
  update.table = table;
  update.id = std::int64_t{1};
  update.expected_version = 0;
  update.set = {{"balance", std::int64_t{90}}};
  CHECK(dblock::sql::Database(*manager).compare_and_set(update));
  CHECK_FALSE(dblock::sql::Database(*manager).compare_and_set(update));  // stale version: conflict reported, nothing written
  CHECK(dblock::sql::Database(*manager).read_version(table, "id", std::int64_t{1}, "version") == 1);
  CHECK_FALSE(dblock::sql::Database(*manager).read_version(table, "id", std::int64_t{2}, "version"));

  // Four threads each add 1 to the balance 20 times through CAS + retry: no update lost.
  std::vector<std::thread> threads;
  std::atomic<int> gave_up{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        RetryOptions retry;
        retry.max_attempts = 200;
        bool ok = retry_optimistic(
            [&] {
              std::int64_t version = 0, balance = 0;
              bool locked = dblock::sql::Database(*manager).run_in_transaction_lock("read-" + prefix, 5s, [&](Transaction& tx) {
                auto row = tx.query("SELECT balance, version FROM " + table + " WHERE id = 1").at(0);
                balance = std::get<std::int64_t>(row[0]);
                version = std::get<std::int64_t>(row[1]);
              });
              if (!locked) return false;  // (no Catch2 assertions on worker threads)
              VersionedUpdate u;
              u.table = table;
              u.id = std::int64_t{1};
              u.expected_version = version;
              u.set = {{"balance", balance + 1}};
              return dblock::sql::Database(*manager).compare_and_set(u);
            },
            retry);
        if (!ok) ++gave_up;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(gave_up == 0);
  CHECK(*dblock::sql::Database(*manager).read_version(table, "id", std::int64_t{1}, "version") == 81);
  REQUIRE(dblock::sql::Database(*manager).run_in_transaction_lock("check-" + prefix, 5s, [&](Transaction& tx) {
    CHECK(std::get<std::int64_t>(tx.query("SELECT balance FROM " + table + " WHERE id = 1").at(0).at(0)) == 170);
  }));

  VersionedUpdate evil = update;
  evil.table = table + "; DROP TABLE " + table;
  CHECK_THROWS_AS(dblock::sql::Database(*manager).compare_and_set(evil), UsageError);
  evil = update;
  evil.set = {{"balance\" = 0 --", std::int64_t{1}}};
  CHECK_THROWS_AS(dblock::sql::Database(*manager).compare_and_set(evil), UsageError);
  CHECK_FALSE(retry_optimistic([] { return false; }, RetryOptions{3, 1ms, 2ms}));
}

TEST_CASE("FOR UPDATE row locks with NOWAIT, SKIP LOCKED, a wait timeout and a limit", "[conformance][rowlock]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  const std::string table = prefix + "jobs";
  if (row_locks_of(*a) == nullptr) {
    RowLockRequest request;
    request.table = table;
    request.keys = {std::int64_t{1}};
    CHECK_THROWS_AS(dblock::sql::Database(*a).with_locked_rows(request, [](Transaction&, const auto&) {}), UnsupportedError);
    return;
  }
  create_app_table(*a, prefix,
                   {"CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, state VARCHAR(16))",
                    "INSERT INTO " + table + " VALUES (1, 'new'), (2, 'new'), (3, 'new'), (4, 'new'), (5, 'new')"});
  RowLockRequest one;
  one.table = table;
  one.keys = {std::int64_t{1}};
  bool inner_nowait = true, inner_timeout = true, inner_shared = true;
  std::vector<std::int64_t> skipped;
  SteadyClock::duration timed_wait{};
  bool ran = dblock::sql::Database(*a).with_locked_rows(one, [&](Transaction& tx, const std::vector<std::vector<Value>>& rows) {
    REQUIRE(rows.size() == 1);
    CHECK(std::get<std::string>(rows[0][1]) == "new");
    tx.execute("UPDATE " + table + " SET state = 'taken' WHERE id = ?", {std::int64_t{1}});
    std::thread other([&] {
      RowLockRequest nowait = one;
      nowait.wait = RowLockWait::kNoWait;
      inner_nowait = dblock::sql::Database(*b).with_locked_rows(nowait, [](Transaction&, const auto&) {});
      RowLockRequest shared = nowait;
      shared.shared = true;
      inner_shared = dblock::sql::Database(*b).with_locked_rows(shared, [](Transaction&, const auto&) {});
      RowLockRequest timed = one;
      timed.wait_timeout = 200ms;
      auto start = SteadyClock::now();
      inner_timeout = dblock::sql::Database(*b).with_locked_rows(timed, [](Transaction&, const auto&) {});
      timed_wait = SteadyClock::now() - start;
      RowLockRequest skip;
      skip.table = table;
      skip.keys = {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}};
      skip.wait = RowLockWait::kSkipLocked;
      skip.columns = {"id"};
      dblock::sql::Database(*b).with_locked_rows(skip, [&](Transaction&, const std::vector<std::vector<Value>>& rows) {
        for (const auto& r : rows) skipped.push_back(std::get<std::int64_t>(r[0]));
      });
    });
    other.join();
  });
  CHECK(ran);
  CHECK_FALSE(inner_nowait);
  CHECK_FALSE(inner_shared);
  CHECK_FALSE(inner_timeout);
  CHECK(timed_wait >= 150ms);
  CHECK(timed_wait < 1s);  // milliseconds (MariaDB: not innodb_lock_wait_timeout's whole seconds)
  std::sort(skipped.begin(), skipped.end());
  CHECK(skipped == std::vector<std::int64_t>{2, 3});
  // The body's write committed.
  REQUIRE(dblock::sql::Database(*a).run_in_transaction_lock("check-" + prefix, 5s, [&](Transaction& tx) {
    CHECK(std::get<std::string>(tx.query("SELECT state FROM " + table + " WHERE id = 1").at(0).at(0)) == "taken");
  }));
  RowLockRequest evil = one;
  evil.table = "jobs; DROP TABLE x";
  CHECK_THROWS_AS(dblock::sql::Database(*a).with_locked_rows(evil, [](Transaction&, const auto&) {}), UsageError);
  RowLockRequest limited;
  limited.table = table;
  limited.keys = {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{4}};
  limited.wait = RowLockWait::kSkipLocked;
  limited.limit = 2;
  std::size_t got = 0;
  CHECK(dblock::sql::Database(*a).with_locked_rows(limited, [&](Transaction&, const auto& rows) { got = rows.size(); }));
  CHECK(got == 2);
}

TEST_CASE("session locks exclude across managers and across threads of one manager", "[conformance][session]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  if (service_of(*a).session_locks() == nullptr) {
    CHECK_THROWS_AS(a->session_lock("session-" + prefix, 0ms), UnsupportedError);
    return;
  }
  const std::string name = "session-" + prefix;
  auto held = a->session_lock(name, 0ms);
  REQUIRE(held);
  CHECK_FALSE(b->session_lock(name, 0ms));
  CHECK_FALSE(a->session_lock(name, 0ms));  // same manager, another connection: excluded too

  // Two threads of one manager race for the same session lock: exactly one wins.
  held->release();
  std::atomic<int> winners{0};
  std::vector<std::thread> threads;
  std::vector<std::optional<SessionLock>> locks(2);
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      locks[static_cast<std::size_t>(i)] = a->session_lock(name, 0ms);
      if (locks[static_cast<std::size_t>(i)]) ++winners;
    });
  }
  for (auto& t : threads) t.join();
  CHECK(winners == 1);
  locks.clear();

  // Waiting: times out, then succeeds after release.
  auto first = a->session_lock(name, 0ms);
  REQUIRE(first);
  auto start = SteadyClock::now();
  CHECK_FALSE(b->session_lock(name, 300ms));
  CHECK(SteadyClock::now() - start >= 250ms);
  std::thread releaser([&] {
    std::this_thread::sleep_for(200ms);  // the scenario: released while b waits (or just before)
    first->release();
  });
  auto second = b->session_lock(name, 10s);
  releaser.join();
  REQUIRE(second);
  CHECK(second->release() == ReleaseResult::kReleased);
}

TEST_CASE("a session lock asked again with a wait by its holding thread throws at once, as a lease does",
          "[conformance][session][needs:sessions]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  const std::string name = "session-again-" + prefix;
  auto held = manager->session_lock(name, 0ms);
  REQUIRE(held);
  const auto start = SteadyClock::now();
  CHECK_THROWS_AS(manager->session_lock(name, 5s), UsageError);
  CHECK(SteadyClock::now() - start < 2s);      // not after the whole wait
  CHECK_FALSE(manager->session_lock(name, 0ms));  // a try answers
  held->release();
  CHECK(manager->session_lock(name, 1s));  // released: no longer this thread's
}

// ---- guarantees stated in README ---------------------------------------------------------

TEST_CASE("safe-until is the TTL minus the drift margin from the acquire (its send time: stalled_connections.cc)",
          "[lease][conformance]") {
  auto manager = open_manager({}, unique_prefix());
  AcquireOptions options;
  options.ttl = 10s;
  // A session-bound service holds the lease for its session timeout when that is shorter.
  const milliseconds held = context().lease_bound > 0ms ? std::min(options.ttl, context().lease_bound) : options.ttl;
  const milliseconds margin = held / 100 + 2ms;  // ManagerOptions::drift_margin default
  const auto before = SteadyClock::now();
  auto lease = manager->try_acquire("safe-until", options);
  const auto after = SteadyClock::now();
  REQUIRE(lease);
  CHECK(lease->safe_until() >= before + held - margin);
  CHECK(lease->safe_until() <= after + held - margin);
  CHECK_FALSE(lease->lost());
}

TEST_CASE("destroying a manager releases its leases; the handles say shut down", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto other = open_manager({}, prefix);
  std::optional<Lease> orphan;
  {
    auto manager = open_manager({}, prefix);
    orphan = manager->try_acquire("orphan");  // default TTL 30 s: only a release frees it quickly
    REQUIRE(orphan);
  }
  CHECK(orphan->lost());
  CHECK(orphan->shut_down());
  CHECK_FALSE(orphan->held());
  CHECK(orphan->release() == ReleaseResult::kShutDown);
  CHECK(other->try_acquire("orphan"));
}

TEST_CASE("a waiter rides over a restart of the server within its wait", "[lease][conformance][faults][needs:restart]") {
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  AcquireOptions short_ttl;
  short_ttl.ttl = 2s;
  auto held = holder->try_acquire("restarted", short_ttl);
  REQUIRE(held);
  auto waiting = open_manager({}, prefix);
  std::optional<Lease> got;
  std::string error;
  const auto start = SteadyClock::now();
  std::thread waiter([&] {
    try {
      got = waiting->acquire("restarted", 60s);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  context().restart();  // the waiter's attempts fail meanwhile: refused, shutting down, starting up
  held->release();      // released, or lost if the restart outlasted its safe time: free either way
  waiter.join();
  INFO(error << " after " << std::chrono::duration_cast<milliseconds>(SteadyClock::now() - start).count() << " ms");
  REQUIRE(got);
  CHECK(got->fence() > held->fence());
  CHECK(SteadyClock::now() - start < 30s);
}

TEST_CASE("a queued waiter goes first: try_acquire of a free name fails while it waits", "[lease][conformance]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto holder = manager->try_acquire("fifo");
  REQUIRE(holder);
  // A waiter that has queued (what acquire() does after a failed attempt), with an entry that
  // outlives the test so that timing cannot matter.
  const OwnerSecret waiter = OwnerSecret::generate();
  ServiceDriver service(*manager);
  if (service.service.fair_queue() == nullptr) {
    // No line to join: a released name is free for the next attempt.
    REQUIRE(holder->release() == ReleaseResult::kReleased);
    CHECK(manager->try_acquire("fifo"));
    return;
  }
  REQUIRE_FALSE(service.attempt("fifo", LockMode::kExclusive, waiter, 30s, /*queue=*/true).acquired);
  REQUIRE(holder->release() == ReleaseResult::kReleased);
  CHECK_FALSE(manager->try_acquire("fifo"));  // free, but someone queued first
  service.leave("fifo", waiter);
  CHECK(manager->try_acquire("fifo"));
}

TEST_CASE("managers opened at once on a fresh namespace all open, and its schema is made once",
          "[lease][conformance][schema]") {
  constexpr int kOpeners = 4;
  for (int round = 0; round < 3; ++round) {
    const std::string prefix = unique_prefix();
    std::vector<std::unique_ptr<LockManager>> managers(kOpeners);
    std::vector<std::string> errors(kOpeners);
    std::atomic<int> ready{0};
    std::vector<std::thread> openers;
    for (int i = 0; i < kOpeners; ++i) {
      openers.emplace_back([&, i] {
        ++ready;
        for (int spin = 0; ready.load() < kOpeners && spin < 1'000'000; ++spin) std::this_thread::yield();
        try {
          managers[i] = open_manager({}, prefix);
        } catch (const std::exception& e) {
          errors[i] = e.what();
        }
      });
    }
    for (std::thread& t : openers) t.join();
    for (int i = 0; i < kOpeners; ++i) {
      INFO("round " << round << ", opener " << i << ": " << errors[i]);
      CHECK(errors[i].empty());
    }
    if (managers[0] && managers[1]) {
      auto lease = managers[0]->try_acquire("made-once");
      REQUIRE(lease);
      CHECK_FALSE(managers[1]->try_acquire("made-once"));
    }
  }
}

TEST_CASE("a bystander holding the migration lock blocks no open of a current schema", "[lease][conformance][schema][needs:migration-lock]") {
  const std::string prefix = unique_prefix();
  const std::string fresh = unique_prefix();
  open_manager({}, prefix);  // the schema is current from now on
  const auto held = context().hold_migration_lock(prefix);
  const auto held_fresh = context().hold_migration_lock(fresh);

  auto start = SteadyClock::now();
  auto manager = open_manager({}, prefix);
  CHECK(SteadyClock::now() - start < 5s);
  CHECK(manager->try_acquire("after-open"));

  // A schema that needs migrating waits for the lock a bounded time (15 s, or the open's own
  // wait when that is shorter), then says whose it is.
  start = SteadyClock::now();
  std::string message;
  try {
    ManagerOptions options;
    options.table_prefix = fresh;
    dblock::open(context().url, options, start + 3s);
  } catch (const TimeoutError& e) {
    message = e.what();
  }
  const auto waited = SteadyClock::now() - start;
  INFO(message);
  CHECK(message.find("migration lock") != std::string::npos);
  CHECK(message.find(held_fresh.named_as) != std::string::npos);
  CHECK(waited >= 2s);   // the lock waited for (1 s at least), and the open tried again
  CHECK(waited < 12s);   // by the open's wait, not the 15 s of an open without one
}

TEST_CASE("the tables hold digests of owner secrets, and a digest acts as no owner", "[lease][conformance][secret]") {
  REQUIRE(context().stored_owner);
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  ServiceDriver service(*manager);
  const auto stored = [&](const char* table, const char* name) { return context().stored_owner(prefix, table, name); };

  const OwnerSecret owner = OwnerSecret::generate();
  REQUIRE(service.attempt("x", LockMode::kExclusive, owner, 30s).acquired);
  CHECK(stored("leases", "x") == digest_hex(owner));
  // Someone who read the row presents what it read: no renewal, no release, and the owner still holds.
  const OwnerSecret read_back = secret_from_hex(stored("leases", "x"));
  CHECK_FALSE(service.renew("x", LockMode::kExclusive, read_back, 30s).renewed);
  CHECK_FALSE(service.release("x", LockMode::kExclusive, read_back));
  CHECK(service.renew("x", LockMode::kExclusive, owner, 30s).renewed);

  if (service.service.fair_queue() != nullptr) {
    const OwnerSecret waiter = OwnerSecret::generate();
    REQUIRE_FALSE(service.attempt("x", LockMode::kExclusive, waiter, 30s, /*queue=*/true).acquired);
    CHECK(stored("waiters", "x") == digest_hex(waiter));
    service.leave("x", waiter);
  }

  if (context().shared_leases) {
    const OwnerSecret reader = OwnerSecret::generate();
    REQUIRE(service.attempt("s", LockMode::kShared, reader, 30s).acquired);
    CHECK(stored("readers", "s") == digest_hex(reader));
    CHECK_FALSE(service.release("s", LockMode::kShared, secret_from_hex(stored("readers", "s"))));
    CHECK(service.release("s", LockMode::kShared, reader));
  }
  CHECK(service.release("x", LockMode::kExclusive, owner));
}

// ---- 10. bad input ---------------------------------------------------------------------------

TEST_CASE("bad input gets a clear error and writes nothing", "[lease][conformance][input]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  CHECK_THROWS_AS(manager->try_acquire(""), UsageError);
  CHECK_THROWS_AS(manager->try_acquire(std::string(kMaxNameBytes + 1, 'x')), UsageError);
  CHECK_THROWS_AS(manager->try_acquire(std::string("bad\xff", 4)), UsageError);
  CHECK_THROWS_AS(manager->try_acquire(std::string("nul\0byte", 8)), UsageError);
  CHECK_THROWS_AS(manager->try_acquire("new\nline"), UsageError);
  AcquireOptions negative;
  negative.ttl = -1ms;
  CHECK_THROWS_AS(manager->try_acquire("ttl", negative), UsageError);
  AcquireOptions huge;
  huge.ttl = std::chrono::hours(24 * 365);
  CHECK_THROWS_AS(manager->try_acquire("ttl", huge), UsageError);
  CHECK(manager->list().empty());

  // Odd but valid names are stored verbatim (every statement is parameterised).
  for (std::string name : {std::string(kMaxNameBytes, 'y'), std::string("'; DROP TABLE x; --"),
                           std::string("ключ/🔒 with spaces \"quoted\""), std::string("%_*?")}) {
    auto lease = manager->try_acquire(name);
    REQUIRE(lease);
    auto info = manager->inspect(name);
    REQUIRE(info);
    CHECK(info->name == name);
  }

  ManagerOptions bad_prefix;
  CHECK_THROWS_AS(open_manager(bad_prefix, "x\"; DROP TABLE y; --"), UsageError);
  ManagerOptions bad_ttl;
  bad_ttl.default_ttl = 0ms;
  CHECK_THROWS_AS(open_manager(bad_ttl, unique_prefix()), UsageError);

  for (const char* url : {"", "nonsense", "ftp://host/x", "sqlite:", "sqlite://relative", "postgresql://h:99999/db",
                          "postgresql://h:port/db", "mysql://[::1/db"}) {
    INFO(url);
    CHECK_THROWS_AS(dblock::open(url), UsageError);
  }
}

TEST_CASE("missing schema without auto-migration is a SchemaError", "[lease][conformance][input]") {
  ManagerOptions options;
  options.auto_migrate = false;
  if (service_of(*open_manager({}, unique_prefix())).maintenance() == nullptr) {
    // A service without a schema misses none: it opens, migrate() does nothing, the version is 0.
    auto manager = open_manager(options, unique_prefix());
    manager->migrate();
    CHECK(manager->schema_version() == 0);
    CHECK(manager->try_acquire("no-schema"));
    return;
  }
  CHECK_THROWS_AS(open_manager(options, unique_prefix()), SchemaError);
}

// ---- MultiLock ---------------------------------------------------------------------------------

TEST_CASE("acquire_all takes every name or none, in sorted order", "[lease][conformance][multi]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  CHECK_THROWS_AS(b->acquire_all({}, 0ms), UsageError);
  CHECK_THROWS_AS(b->acquire_all({"x", "y", "x"}, 0ms), UsageError);
  CHECK_THROWS_AS(b->acquire_all({"x", ""}, 0ms), UsageError);
  auto middle = a->try_acquire("multi-b");
  REQUIRE(middle);
  // "multi-a" is taken first, then "multi-b" is not within the wait: "multi-a" is given back.
  const auto start = SteadyClock::now();
  CHECK_FALSE(b->acquire_all({"multi-c", "multi-a", "multi-b"}, 300ms));
  CHECK(SteadyClock::now() - start >= 250ms);
  CHECK(a->try_acquire("multi-a"));  // free again (the temporary lease is released at once)
  REQUIRE(middle->release() == ReleaseResult::kReleased);
  auto all = b->acquire_all({"multi-c", "multi-b", "multi-d"}, 5s);
  REQUIRE(all);
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].name() == "multi-b");
  CHECK((*all)[2].name() == "multi-d");
  for (const Lease& lease : *all) CHECK(lease.fence() > 0);
  CHECK_FALSE(a->try_acquire("multi-c"));
}

TEST_CASE("MultiAcquire takes every name in one call or none", "[lease][conformance][multi][needs:multi]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  ServiceDriver service(*a);
  const std::vector<std::string> names = {"mc-a", "mc-b", "mc-c"};
  const std::vector<OwnerSecret> secrets = {OwnerSecret::generate(), OwnerSecret::generate(), OwnerSecret::generate()};
  std::vector<std::int64_t> earlier;  // each name's fence before the call
  for (const std::string& name : names) {
    auto lease = b->try_acquire(name);
    REQUIRE(lease);
    earlier.push_back(lease->fence());
    REQUIRE(lease->release() == ReleaseResult::kReleased);
  }

  // One name held elsewhere: nothing taken, every other name still free for another manager.
  auto middle = b->try_acquire("mc-b");
  REQUIRE(middle);
  CHECK(service.acquire_all(names, LockMode::kExclusive, secrets).empty());
  CHECK_FALSE(b->inspect("mc-a"));
  CHECK_FALSE(b->inspect("mc-c"));
  for (const char* name : {"mc-a", "mc-c"}) {
    auto free = b->try_acquire(name);
    CHECK(free);
    if (free) CHECK(free->release() == ReleaseResult::kReleased);
  }
  REQUIRE(middle->release() == ReleaseResult::kReleased);

  // Every name free: all taken, in request order, with fences above the earlier holders'.
  const std::vector<AcquireResult> first = service.acquire_all(names, LockMode::kExclusive, secrets);
  REQUIRE(first.size() == names.size());
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK(first[i].acquired);
    CHECK(first[i].fence > earlier[i]);
    CHECK_FALSE(b->try_acquire(names[i]));
  }
  for (std::size_t i = 0; i < names.size(); ++i) {
    CHECK(service.release(names[i], LockMode::kExclusive, secrets[i], first[i].tag));
  }
  for (const std::string& name : names) CHECK(b->try_acquire(name));

  // Shared: two owners' calls both join; an exclusive attempt is refused while they hold.
  if (!context().shared_leases) return;
  const std::vector<std::string> shared = {"ms-a", "ms-b"};
  const std::vector<OwnerSecret> readers1 = {OwnerSecret::generate(), OwnerSecret::generate()};
  const std::vector<OwnerSecret> readers2 = {OwnerSecret::generate(), OwnerSecret::generate()};
  CHECK(service.acquire_all(shared, LockMode::kShared, readers1).size() == 2);
  CHECK(service.acquire_all(shared, LockMode::kShared, readers2).size() == 2);
  CHECK_FALSE(b->try_acquire("ms-b"));
  auto writer = b->try_acquire("ms-x");
  REQUIRE(writer);
  CHECK(service.acquire_all({"ms-a", "ms-x"}, LockMode::kShared, {OwnerSecret::generate(), OwnerSecret::generate()})
            .empty());
  CHECK(b->inspect("ms-x"));
}

void check_repeated_acquire_all(LockManager& manager, LockManager& other) {
  ServiceDriver service(manager);
  const std::vector<std::string> names = {"again-a", "again-b"};
  const std::vector<OwnerSecret> secrets = {OwnerSecret::generate(), OwnerSecret::generate()};
  const std::vector<AcquireResult> first = service.acquire_all(names, LockMode::kExclusive, secrets);
  REQUIRE(first.size() == 2);
  const std::vector<AcquireResult> again = service.acquire_all(names, LockMode::kExclusive, secrets);
  REQUIRE(again.size() == 2);
  for (std::size_t i = 0; i < names.size(); ++i) {
    INFO(names[i]);
    CHECK(again[i].acquired);
    CHECK(again[i].fence > first[i].fence);
    CHECK_FALSE(other.try_acquire(names[i]));
    CHECK(service.release(names[i], LockMode::kExclusive, secrets[i], again[i].tag));
  }
}

void check_after_refused_acquire_all(LockManager& manager, LockManager& observer, LockManager& holder, Lease& held,
                                     std::int64_t before) {
  CHECK(observer.inspect("multi-b"));
  CHECK_FALSE(observer.inspect("multi-a"));
  REQUIRE(held.release() == ReleaseResult::kReleased);
  auto taken = manager.acquire_all({"multi-b", "multi-a"}, std::chrono::milliseconds(0));
  REQUIRE(taken);
  CHECK((*taken)[0].name() == "multi-a");
  CHECK((*taken)[0].fence() > before);
  CHECK_FALSE(observer.try_acquire("multi-a"));
  CHECK_FALSE(holder.try_acquire("multi-b"));
  check_repeated_acquire_all(manager, observer);
}

// ---- Mutex (TimedLockable) -------------------------------------------------------------------

TEST_CASE("dblock::Mutex works with std::unique_lock and try_lock_for", "[lease][conformance][mutex]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  Mutex ma(*a, "mutex");
  Mutex mb(*b, "mutex");
  {
    std::unique_lock<Mutex> lock(ma);
    CHECK(ma.fence() > 0);
    CHECK_FALSE(mb.try_lock());
    CHECK_FALSE(mb.try_lock_for(100ms));
    std::unique_lock<Mutex> timed(mb, std::defer_lock);
    CHECK_FALSE(timed.try_lock_until(std::chrono::system_clock::now() + 50ms));
  }
  std::unique_lock<Mutex> lock(mb, 5s);
  CHECK(lock.owns_lock());
}

}  // namespace dblock::testing
