// The stalled-connection cases of the conformance suite (docs/design.md, "Conformance"): a TCP
// relay the tests start between the service and its server stops forwarding without closing
// anything, as a dead network path or a stopped server does, and every call must still end by its
// deadline. Services without a network connection (SQLite) skip them.
#include <catch2/catch.hpp>

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "context.h"
#include "relay.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

// A tcp_relay in front of each of the test URL's servers (Redlock's three masters, an ensemble),
// with the test URL through them: pause() and delay() act on every path at once.
class Relay {
 public:
  // `reply_delay`: how late delay() makes every answer.
  explicit Relay(std::chrono::milliseconds reply_delay = 3s) {
    for (const Url::Host& server : parse_url(context().url).hosts) {
      relays_.push_back(std::make_unique<TcpRelay>(DBLOCK_TCP_RELAY, server.port, 0, reply_delay));
    }
  }
  ~Relay() { resume(); }
  // The test URL through the relays: each host:port replaced by its relay's.
  std::string url() const {
    std::string url = context().url;
    const std::vector<Url::Host> servers = parse_url(url).hosts;
    std::size_t from = 0;
    for (std::size_t i = 0; i < servers.size(); ++i) {
      const std::string server_at = servers[i].host + ":" + std::to_string(servers[i].port);
      const std::size_t at = url.find(server_at, from);
      REQUIRE(at != std::string::npos);
      url.replace(at, server_at.size(), relays_[i]->address());
      from = at + relays_[i]->address().size();
    }
    if (!context().relay_params.empty()) {
      url += (url.find('?') == std::string::npos ? "?" : "&") + context().relay_params;
    }
    return url;
  }
  void pause() {
    for (auto& r : relays_) r->pause();
  }
  void resume() {
    for (auto& r : relays_) r->resume();
  }
  void delay() {  // every answer `reply_delay` after the server sent it
    for (auto& r : relays_) r->delay_replies();
  }

 private:
  std::vector<std::unique_ptr<TcpRelay>> relays_;
};

std::unique_ptr<LockManager> open_through(const Relay& relay, const std::string& prefix,
                                          ManagerOptions options = {}) {
  options.table_prefix = prefix;
  options.reaper = false;
  return dblock::open(relay.url(), options);
}

// Runs `fn` in a thread; how long it took, or nullopt when it had not returned within `limit`
// (then `unstick` runs, so that it can, and the thread is joined).
std::optional<std::chrono::steady_clock::duration> timed(const std::function<void()>& fn, std::chrono::seconds limit,
                                                         const std::function<void()>& unstick) {
  const auto start = std::chrono::steady_clock::now();
  auto done = std::async(std::launch::async, fn);
  if (done.wait_for(limit) != std::future_status::ready) {
    unstick();
    done.get();
    return std::nullopt;
  }
  done.get();
  return std::chrono::steady_clock::now() - start;
}

}  // namespace

TEST_CASE("on a stalled connection the lease is lost at its safe time and the manager closes in time",
          "[lease][conformance][faults][deadline][needs:tcp]") {
  Relay relay;
  auto manager = open_through(relay, unique_prefix());
  std::mutex mutex;
  std::optional<std::chrono::steady_clock::time_point> lost_at;
  AcquireOptions options;
  options.ttl = 3s;
  options.on_lost = [&](const LostLease&) {
    std::lock_guard<std::mutex> lock(mutex);
    lost_at = std::chrono::steady_clock::now();
  };
  auto lease = manager->try_acquire("stalled", options);
  REQUIRE(lease);
  const auto safe_until = lease->safe_until();
  relay.pause();
  // The renewal blocked on the stalled connection ends at the lease's safe time: the loss is
  // reported then, not when the network comes back.
  const auto reported = timed(
      [&] {
        while (true) {
          {
            std::lock_guard<std::mutex> lock(mutex);
            if (lost_at) return;
          }
          std::this_thread::sleep_for(20ms);
        }
      },
      15s, [&] { relay.resume(); });
  REQUIRE(reported);
  CHECK(*lost_at < safe_until + 2500ms);
  // Closing the manager waits on no blocked call for longer than a call's deadline.
  const auto closed = timed([&] { lease.reset(), manager.reset(); }, 15s, [&] { relay.resume(); });
  REQUIRE(closed);
  CHECK(*closed < 3s);
}

TEST_CASE("a grant answered after its TTL is never handed out; the acquire takes the name again once answers are prompt",
          "[lease][conformance][faults][deadline][needs:tcp][needs:late-answers]") {
  Relay relay;
  auto manager = open_through(relay, unique_prefix());
  AcquireOptions options;
  options.ttl = 1s;
  // For 5 s every answer comes 3 s after the server sent it: each grant in that time arrives past
  // its safe-until (sent + 1 s - drift) and must not be returned.
  relay.delay();
  std::thread prompt([&] {
    std::this_thread::sleep_for(5s);  // the scenario: a 5 s stretch of late answers
    relay.resume();
  });
  std::optional<Lease> lease;
  try {
    lease = manager->acquire("late", 30s, options);
  } catch (...) {
    prompt.join();
    throw;
  }
  const auto returned = SteadyClock::now();
  prompt.join();
  REQUIRE(lease);
  CHECK_FALSE(lease->lost());
  // Taken on a prompt answer: most of its TTL ahead (a session-bound lease: what its session gives).
  if (context().lease_bound.count() == 0) CHECK(lease->safe_until() - returned > 500ms);
  CHECK(lease->release() == ReleaseResult::kReleased);
}

TEST_CASE("safe-until counts from before the acquire was sent, not from its answer",
          "[lease][conformance][deadline][needs:tcp]") {
  Relay relay(200ms);  // an attempt may take several round trips (ZooKeeper's): each 200 ms late
  auto manager = open_through(relay, unique_prefix());
  AcquireOptions options;
  options.ttl = 10s;
  const milliseconds held = context().lease_bound > 0ms ? std::min(options.ttl, context().lease_bound) : options.ttl;
  const milliseconds margin = held / 100 + 2ms;  // ManagerOptions::drift_margin default
  relay.delay();  // every answer 200 ms late: the acquire's too
  const auto before = SteadyClock::now();
  auto lease = manager->try_acquire("sent-at", options);
  const auto after = SteadyClock::now();
  relay.resume();
  REQUIRE(lease);
  CHECK(after - before >= 200ms);  // the answer did come late
  CHECK(lease->safe_until() >= before + held - margin);
  // From the answer it would be at least `before` + 0.2 s + held - margin.
  CHECK(lease->safe_until() < before + held - margin + 150ms);
}

TEST_CASE("on a stalled connection a manager closing with a lease held ends by its safe time and one call more",
          "[lease][conformance][faults][deadline][needs:tcp]") {
  Relay relay;
  auto manager = open_through(relay, unique_prefix());
  AcquireOptions options;
  options.ttl = 3s;
  auto lease = manager->try_acquire("held-at-close", options);
  REQUIRE(lease);
  relay.pause();
  const auto safe_until = lease->safe_until();
  // A renewal in flight ends by safe-until; the release then gets the least time a call is given.
  const auto closed = timed([&] { lease.reset(), manager.reset(); }, 20s, [&] { relay.resume(); });
  REQUIRE(closed);
  CHECK(std::chrono::steady_clock::now() < safe_until + 2s + 1500ms);
}

TEST_CASE("on a stalled connection a wait ends at its deadline", "[lease][conformance][faults][deadline][needs:tcp]") {
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  auto held = holder->try_acquire("busy");
  REQUIRE(held);
  Relay relay;
  auto waiter = open_through(relay, prefix);  // connected before the stall
  relay.pause();
  std::string error;
  const auto waited = timed(
      [&] {
        try {
          waiter->acquire("busy", 2s);
        } catch (const ConnectionError& e) {
          error = e.what();
        }
      },
      20s, [&] { relay.resume(); });
  REQUIRE(waited);
  INFO(error);
  CHECK(*waited < 2s + 2500ms);  // the wait, and at most the least time a call is given
  CHECK(error.find("deadline") != std::string::npos);
  relay.resume();
  waiter.reset();
}

TEST_CASE("on a stalled connection a guarded write ends by the lease's safe time", "[conformance][faults][deadline][needs:tcp]") {
  const std::string prefix = unique_prefix();
  const std::string table = prefix + "guarded";
  auto direct = open_manager({}, prefix);
  if (service_of(*direct).sql_features() == nullptr) {
    check_guard_unsupported(*direct);
    return;
  }
  create_guard_table(*direct, table);
  Relay relay;
  auto manager = open_through(relay, prefix);
  AcquireOptions options;
  options.ttl = 3s;
  auto lease = manager->try_acquire("guarded", options);
  REQUIRE(lease);
  const auto safe_until = lease->safe_until();
  relay.pause();
  bool committed = false;
  const auto took = timed(
      [&] {
        try {
          dblock::sql::Database(*manager).run_guarded(*lease, [&](Transaction& tx) {
            tx.execute(with_table(context().guard_insert, table), {std::int64_t{1}, lease->fence()});
          });
          committed = true;
        } catch (const Error&) {  // cut at the deadline: connection dropped, write in doubt or lost
        }
      },
      20s, [&] { relay.resume(); });
  REQUIRE(took);
  CHECK_FALSE(committed);
  CHECK(SteadyClock::now() < safe_until + 2500ms);
  relay.resume();
  lease.reset();
  manager.reset();
}

TEST_CASE("on a stalled connection a session lock is reported lost, and its waits and release end in time",
          "[conformance][session][faults][deadline][needs:tcp]") {
  const std::string prefix = unique_prefix();
  Relay relay;
  auto manager = open_through(relay, prefix);
  if (service_of(*manager).session_locks() == nullptr) {
    CHECK_THROWS_AS(manager->session_lock("stalled-session", 0ms), UnsupportedError);
    return;
  }
  std::atomic<bool> lost{false};
  SessionLockOptions options;
  options.on_lost = [&](const LostLease&) { lost = true; };
  auto held = manager->session_lock("stalled-session", 0ms, options);
  REQUIRE(held);
  auto other = open_manager({}, prefix);  // direct: holds a second name while the path stalls
  auto busy = other->session_lock("busy-session", 0ms);
  REQUIRE(busy);
  relay.pause();
  // The periodic check (every second) that finds no answer within its 5 s reports the loss.
  const auto reported = timed(
      [&] {
        const auto give_up = SteadyClock::now() + 20s;
        while (!lost && SteadyClock::now() < give_up) std::this_thread::sleep_for(20ms);
      },
      30s, [&] { relay.resume(); });
  REQUIRE(reported);
  CHECK(lost);
  CHECK(*reported < 8s);
  // A wait for a held session lock on the stalled path ends at its wait + the least call time.
  bool got = false;
  const auto waited = timed(
      [&] {
        try {
          got = manager->session_lock("busy-session", 2s).has_value();
        } catch (const Error&) {  // the stalled connect: any error, so long as it comes in time
        }
      },
      20s, [&] { relay.resume(); });
  REQUIRE(waited);
  CHECK_FALSE(got);
  CHECK(*waited < 2s + 2500ms);
  const auto released = timed([&] { held->release(); }, 15s, [&] { relay.resume(); });
  REQUIRE(released);
  CHECK(*released < 2500ms);
  const auto closed = timed([&] { manager.reset(); }, 15s, [&] { relay.resume(); });
  REQUIRE(closed);
  CHECK(*closed < 3s);
  relay.resume();
}

TEST_CASE("on a stalled connection admin calls and lock transactions end by call_timeout",
          "[conformance][faults][deadline][needs:tcp]") {
  const std::string prefix = unique_prefix();
  const std::string table = prefix + "rows";
  auto direct = open_manager({}, prefix);
  const bool reaps = service_of(*direct).maintenance() != nullptr;
  const bool transaction_locks = service_of(*direct).sql_features() != nullptr;
  const bool row_locks = row_locks_of(*direct) != nullptr;
  if (row_locks) create_guard_table(*direct, table);
  Relay relay;
  ManagerOptions options;
  options.call_timeout = 1s;
  const milliseconds call = options.call_timeout;
  auto manager = open_through(relay, prefix, options);
  relay.pause();
  // Each call is cut at its bound (call_timeout, or the lock wait + call_timeout) with an error;
  // the next one reconnects through the stalled path and is cut in turn.
  const auto ends_in_time = [&](const char* what, std::chrono::milliseconds bound, const std::function<void()>& call) {
    INFO(what);
    bool failed = false;
    const auto took = timed(
        [&] {
          try {
            call();
          } catch (const Error&) {
            failed = true;
          }
        },
        20s, [&] { relay.resume(); });
    REQUIRE(took);
    CHECK(failed);
    CHECK(*took < bound + 1500ms);
  };
  ends_in_time("list", call, [&] { manager->list(); });
  ends_in_time("inspect", call, [&] { manager->inspect("k"); });
  ends_in_time("force_release", call, [&] { manager->force_release("k"); });
  // A capability the service lacks makes no call: reap() returns 0, the others throw UnsupportedError.
  if (reaps) {
    ends_in_time("reap", call, [&] { manager->reap(10); });
  } else {
    CHECK(manager->reap(10) == 0);
  }
  const auto transaction_lock = [&] { dblock::sql::Database(*manager).run_in_transaction_lock("k", 1s, [](Transaction&) {}); };
  if (transaction_locks) {
    ends_in_time("transaction lock", 1s + call, transaction_lock);
  } else {
    CHECK_THROWS_AS(transaction_lock(), UnsupportedError);
  }
  RowLockRequest request;
  request.table = table;
  request.keys = {Value{std::int64_t{1}}};
  request.wait_timeout = 1s;
  const auto row_lock = [&] { dblock::sql::Database(*manager).with_locked_rows(request, [](Transaction&, const auto&) {}); };
  if (row_locks) {
    ends_in_time("row lock", 1s + call, row_lock);
  } else {
    CHECK_THROWS_AS(row_lock(), UnsupportedError);
  }
  relay.resume();
  manager.reset();
}

TEST_CASE("on a stalled path a new connection is given what is left of its call, not whole seconds",
          "[conformance][faults][deadline][needs:tcp]") {
  Relay relay;
  ManagerOptions options;
  // Not whole seconds: libpq's own connect_timeout would have rounded this up to 5 s (counted on
  // time()'s one-second ticks), overrunning by up to 0.9 s.
  options.call_timeout = 4100ms;
  auto manager = open_through(relay, unique_prefix(), options);
  relay.pause();
  // The first call is cut on its pooled connection, which is dropped; the second must connect
  // through the stalled path (the relay answers TCP, never the server's greeting).
  for (const char* call : {"first list", "second list"}) {
    INFO(call);
    std::string error;
    const auto took = timed(
        [&] {
          try {
            manager->list();
          } catch (const ConnectionError& e) {
            error = e.what();
          }
        },
        20s, [&] { relay.resume(); });
    REQUIRE(took);
    CHECK(!error.empty());
    CHECK(*took < 4100ms + 400ms);
  }
  relay.resume();
  manager.reset();
}

}  // namespace dblock::testing
