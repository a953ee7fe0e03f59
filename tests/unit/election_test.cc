// Leader election (dblock/election.h) against the in-memory reference service: campaign, take-over
// on resign and on revocation, terms, observers, a stop while waiting, a failing callback.
#include <catch2/catch.hpp>

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "core_rig.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

// What one candidate's callbacks saw, in order. Thread-safe.
class Journal {
 public:
  ElectionOptions options(std::chrono::milliseconds ttl = 0ms) {
    ElectionOptions o;
    o.ttl = ttl;
    o.on_elected = [this](const Leadership& won) {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back("elected " + std::to_string(won.term));
    };
    o.on_revoked = [this](const Revocation& r) {
      std::lock_guard<std::mutex> lock(mutex_);
      events_.push_back(std::string(r.resigned ? "resigned " : "revoked ") + std::to_string(r.term));
      last_reason_ = r.reason;
    };
    return o;
  }
  std::vector<std::string> events() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return events_;
  }
  std::size_t size() const { return events().size(); }
  std::string last_reason() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_reason_;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> events_;
  std::string last_reason_;
};

ManagerOptions named(const std::string& holder, ManagerOptions options = {}) {
  options.holder = holder;
  return options;
}

TEST_CASE("election: one of two candidates leads; at its resignation the other leads with a greater term",
          "[unit][election]") {
  Rig rig;
  auto a = rig.open({}, named("host-a"));
  auto b = rig.open({}, named("host-b"));
  Journal ja, jb;
  CHECK_FALSE(current_leader(*b, "jobs"));
  Election ea(*a, "jobs", ja.options());
  REQUIRE(ea.await_leadership(5s));
  Election eb(*b, "jobs", jb.options());
  CHECK_FALSE(eb.await_leadership(200ms));
  const std::int64_t first_term = *ea.term();
  CHECK(ja.events() == std::vector<std::string>{"elected " + std::to_string(first_term)});

  // Observers see the leader and its term.
  const std::optional<Leader> seen = current_leader(*b, "jobs");
  REQUIRE(seen);
  CHECK(seen->holder == "host-a");
  CHECK(seen->term == first_term);

  ea.resign();
  CHECK_FALSE(ea.is_leader());
  CHECK(ja.events().back() == "resigned " + std::to_string(first_term));
  REQUIRE(eb.await_leadership(5s));
  CHECK(*eb.term() > first_term);
  CHECK(current_leader(*a, "jobs")->holder == "host-b");
  ea.resign();  // idempotent
  CHECK(ja.size() == 2);  // a resigned candidate does not campaign again
}

TEST_CASE("election: a leader whose renewals are refused is revoked, campaigns again, and the other leads",
          "[unit][election][lost]") {
  Rig rig;
  MemoryService* service_a = nullptr;
  auto a = rig.open({}, named("host-a"), &service_a);
  auto b = rig.open({}, named("host-b"));
  Journal ja, jb;
  // 600 ms: a's next renewal (within 200 ms) is refused long before its safe-until could pass.
  Election ea(*a, "jobs", ja.options(600ms));
  REQUIRE(ea.await_leadership(5s));
  const std::int64_t first_term = *ea.term();
  Election eb(*b, "jobs", jb.options(600ms));
  service_a->refuse_renewals(true);
  // b leads once a's lease ran out; a learned it lost, before or at that point.
  REQUIRE(eb.await_leadership(5s));
  REQUIRE(eventually([&] { return ja.size() >= 2; }));
  CHECK(ja.events()[1] == "revoked " + std::to_string(first_term));
  CHECK(ja.last_reason().find("refused") != std::string::npos);
  CHECK(*eb.term() > first_term);
  CHECK_FALSE(ea.is_leader());
  service_a->refuse_renewals(false);
  // a campaigns again: it leads once b resigns.
  eb.resign();
  REQUIRE(ea.await_leadership(5s));
  CHECK(*ea.term() > first_term);
}

TEST_CASE("election: a leader whose renewals hang stops being leader at its safe time; another leads",
          "[unit][election][lost]") {
  Rig rig;
  MemoryService* service_a = nullptr;
  auto a = rig.open({}, named("host-a"), &service_a);
  auto b = rig.open({}, named("host-b"));
  Journal ja;
  Election ea(*a, "jobs", ja.options(300ms));
  REQUIRE(ea.await_leadership(5s));
  const std::int64_t first = *ea.term();
  Election eb(*b, "jobs", ElectionOptions{300ms, {}, {}});
  service_a->set_renew_delay(1500ms);  // a's renewals hang past its TTL: only its safe time ends it
  REQUIRE(eb.await_leadership(5s));  // b leads once a's lease expired in the service
  CHECK_FALSE(ea.is_leader());       // and a knows it is not leader, its renewal still hanging
  CHECK_FALSE(ea.term());
  CHECK(*eb.term() > first);
  REQUIRE(eventually([&] { return ja.size() >= 2; }));
  CHECK(ja.events()[1] == "revoked " + std::to_string(first));
  service_a->set_renew_delay(0ms);
}

TEST_CASE("election: resign while campaigning ends the wait at once and never leads", "[unit][election][stop]") {
  Rig rig;
  auto holder = rig.open();
  auto manager = rig.open({}, slow_polls());
  auto held = holder->try_acquire("jobs");
  REQUIRE(held);
  Journal journal;
  Election election(*manager, "jobs", journal.options());
  CHECK_FALSE(election.await_leadership(100ms));
  const auto start = SteadyClock::now();
  election.resign();
  CHECK(SteadyClock::now() - start < 2s);  // polls are 5 s apart: the stop ended the wait
  CHECK(journal.size() == 0);
  CHECK_FALSE(election.failure());
  REQUIRE(held->release() == ReleaseResult::kReleased);
  CHECK(manager->try_acquire("jobs"));  // the resigned candidate left nothing behind
}

TEST_CASE("election: callbacks may resign; a throwing on_elected ends the campaign with its error",
          "[unit][election]") {
  Rig rig;
  auto manager = rig.open();
  {
    auto holder = rig.open();
    auto held = holder->try_acquire("a");  // so that nobody is elected before `self` is set
    REQUIRE(held);
    ElectionOptions options;
    std::atomic<Election*> self{nullptr};
    std::atomic<int> revoked{0};
    options.on_elected = [&self](const Leadership&) { self.load()->resign(); };
    options.on_revoked = [&revoked](const Revocation& r) { revoked += r.resigned ? 1 : 100; };
    Election election(*manager, "a", options);
    self = &election;
    REQUIRE(held->release() == ReleaseResult::kReleased);
    REQUIRE(eventually([&] { return revoked.load() == 1; }));
    CHECK_FALSE(election.is_leader());
    CHECK(holder->try_acquire("a"));  // given up, and not campaigned for again
  }
  ElectionOptions throwing;
  throwing.on_elected = [](const Leadership&) { throw std::runtime_error("job failed to start"); };
  Election election(*manager, "b", throwing);
  REQUIRE(eventually([&] { return election.failure() != nullptr; }));
  CHECK_THROWS_WITH(std::rethrow_exception(election.failure()), "job failed to start");
  CHECK_FALSE(election.is_leader());
  CHECK(manager->try_acquire("b"));  // the lease was given up
}

TEST_CASE("election: a bad name is a usage error", "[unit][election]") {
  Rig rig;
  auto manager = rig.open();
  CHECK_THROWS_AS(Election(*manager, ""), UsageError);
}

}  // namespace
}  // namespace dblock::testing
