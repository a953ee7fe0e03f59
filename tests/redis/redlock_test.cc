// Redlock over three throwaway masters: the cases only Redlock has (the suite's context:
// redlock_context.cc) (quorum with nodes down, the fence's second round, renewal re-taking a node).
// ctest starts the servers (scripts/servers/redis.sh) and passes their URL.
#include <catch2/catch.hpp>

#include <signal.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "context.h"
#include "environment.h"
#include "raw_redis.h"
#include "connection.h"
#include "redlock_service.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

std::vector<Url::Host> nodes() { return parse_url(context().url).hosts; }


std::string script() { return env("DBLOCK_TEST_REDLOCK_SCRIPT"); }
std::string state() { return env("DBLOCK_TEST_REDLOCK_STATE"); }

void server(const std::string& command, const Url::Host& node) {
  const std::string line = script() + " " + command + " " + state() + " " + std::to_string(node.port) + " >/dev/null";
  REQUIRE(std::system(line.c_str()) == 0);
}

// Stops a node for as long as it lives, then starts it again (empty: no AOF on the test nodes).
struct NodeDown {
  explicit NodeDown(const Url::Host& n) : node(n) { server("kill", node); }
  ~NodeDown() { server("start-one", node); }
  Url::Host node;
};

// SIGSTOPs a node for as long as it lives (a stuck host, a stalled path: connects are accepted by
// the kernel, nothing is answered), then SIGCONTs it. By the pid in its pid file.
struct NodeFrozen {
  explicit NodeFrozen(const Url::Host& n) {
    std::ifstream in(state() + "/" + std::to_string(n.port) + "/redis.pid");
    REQUIRE(in >> pid);
    REQUIRE(pid > 1);
    REQUIRE(::kill(pid, SIGSTOP) == 0);
  }
  ~NodeFrozen() { ::kill(pid, SIGCONT); }
  pid_t pid = 0;
};

std::vector<redis::Options> node_options(const std::string& prefix) {
  std::vector<redis::Options> out;
  for (const Url::Host& host : nodes()) {
    redis::Options o;
    o.host = host.host;
    o.port = host.port;
    o.prefix = prefix;
    o.listen = false;
    out.push_back(o);
  }
  return out;
}

AcquireRequest request(std::string_view name, const OwnerSecret& secret) {
  AcquireRequest r;
  r.name = name;
  r.ttl = 30s;
  r.secret = &secret;
  r.holder = "test";
  return r;
}

}  // namespace

TEST_CASE("redlock: 3 or 5 nodes, and a lease with one node of three down", "[redlock][quorum]") {
  CHECK_THROWS_AS(dblock::open("redlock://127.0.0.1:1,127.0.0.1:2"), UsageError);
  CHECK_THROWS_AS(dblock::open("redlock://127.0.0.1:1,127.0.0.1:2,127.0.0.1:3,127.0.0.1:4"), UsageError);
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto before = manager->try_acquire("quorum");
  REQUIRE(before);
  REQUIRE(before->release() == ReleaseResult::kReleased);
  {
    const NodeDown down(nodes().at(2));
    auto lease = manager->try_acquire("quorum");
    REQUIRE(lease);
    CHECK(lease->fence() > before->fence());
    CHECK_FALSE(open_manager({}, prefix)->try_acquire("quorum"));  // held on the two that answer
    CHECK(lease->release() == ReleaseResult::kReleased);
    {
      const NodeDown second(nodes().at(1));
      CHECK_THROWS_AS(manager->try_acquire("quorum"), ConnectionError);  // one of three answers
    }
  }
}

TEST_CASE("redlock: with prefix \"\" a name that could be a companion key is refused", "[redlock][keys]") {
  auto bare = dblock::open(context().url + "?prefix=");
  CHECK_THROWS_AS(bare->try_acquire("{" + unique_prefix() + "x}:fence"), UsageError);
}

TEST_CASE("redlock: the fence's second round keeps fences growing when a later majority misses a node",
          "[redlock][fence]") {
  // Node 0's counter is far ahead of the others' (it drew fences for leases the others missed).
  // Lease A is held on all three and takes node 0's fence; then node 0 refuses the name (another
  // client's string there) and lease B is taken on nodes 1 and 2 only.
  const auto fences_of_a_then_b = [](bool raise_fences) {
    const std::string prefix = unique_prefix();
    const std::string name = "fence";
    Raw first(nodes().at(0));
    const std::int64_t ahead = std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch()).count() + 1'000'000'000'000;
    REQUIRE(first.text({"SET", "{" + prefix + name + "}:fence", std::to_string(ahead)}) == "OK");
    redis::RedlockService service(node_options(prefix), raise_fences);
    const OwnerSecret a = OwnerSecret::generate(), b = OwnerSecret::generate();
    const AcquireResult got_a = service.try_acquire(request(name, a));
    REQUIRE(got_a.acquired);
    REQUIRE(service.release(LeaseKey{name, LockMode::kExclusive, &a, 0}));
    REQUIRE(first.text({"SET", prefix + name, "another-client", "PX", "30000"}) == "OK");
    const AcquireResult got_b = service.try_acquire(request(name, b));
    REQUIRE(got_b.acquired);
    first.text({"DEL", prefix + name});
    return std::make_pair(got_a.fence, got_b.fence);
  };
  const auto [a_max, b_max] = fences_of_a_then_b(false);
  INFO("maximum of the per-node counters alone: A " << a_max << ", B " << b_max);
  CHECK(b_max < a_max);  // the regression the second round exists for
  const auto [a, b] = fences_of_a_then_b(true);
  INFO("with the second round: A " << a << ", B " << b);
  CHECK(b > a);
}

TEST_CASE("redlock: fences are exact up to 2^53 - 1 across the nodes; past it every node refuses",
          "[redlock][fence]") {
  const std::string prefix = unique_prefix();
  const std::string counter = "{" + prefix + "edge}:fence";
  Raw first(nodes().at(0));
  REQUIRE(first.text({"SET", counter, "9007199254740990"}) == "OK");  // the others are at the clock's floor
  ManagerOptions options;
  options.table_prefix = prefix;
  auto manager = dblock::open(context().url, options);
  auto lease = manager->try_acquire("edge");
  REQUIRE(lease);
  CHECK(lease->fence() == 9007199254740991);
  // The second round raised a majority to it, exactly (a node slower than the round's grace may
  // be left at its own lower fence; exclusion needs only the majority).
  const auto at_the_edge = [&] {
    std::size_t exact = 0;
    for (const Url::Host& node : nodes()) {
      Raw raw(node);
      const std::string value = raw.text({"GET", counter});
      INFO("node " << node.port << ": counter " << value);
      CHECK(std::stoll(value) <= 9007199254740991);
      if (value == "9007199254740991") ++exact;
    }
    return exact;
  };
  CHECK(at_the_edge() >= 2);
  std::size_t held_exactly = 0;
  for (const Url::Host& node : nodes()) held_exactly += Raw(node).text({"HGET", prefix + "edge", "fence"}) == "9007199254740991";
  CHECK(held_exactly >= 2);
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  try {
    manager->try_acquire("edge");
    FAIL("acquired");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find(counter) != std::string::npos);
  }
  CHECK(at_the_edge() >= 2);  // the refusal moved no counter past the edge
}

// hiredis writes with write(2): on a connection its server closed, the write after the peer's
// reset raises SIGPIPE, whose default action ends the process that embeds dblock (the ASan run
// of the stalled-connection cases died so). A write there fails as a broken connection instead.
TEST_CASE("redis connection: a write to a connection its server closed fails, raising no SIGPIPE", "[redlock][faults]") {
  const redis::Options options = node_options(unique_prefix()).at(0);
  auto c = redis::Connection::open(options, SteadyClock::now() + 5s);
  const std::int64_t id = c->command({"CLIENT", "ID"}, SteadyClock::now() + 5s).integer();
  REQUIRE(Raw(nodes().at(0)).text({"CLIENT", "KILL", "ID", std::to_string(id)}) == "1");
  bool broken = false;
  for (int i = 0; i < 50 && !broken; ++i) {  // the first write after the close draws the reset
    try {
      c->send({"PING"}, SteadyClock::now() + 2s);
      std::this_thread::sleep_for(10ms);
    } catch (const redis::Broken& e) {
      INFO(e.message);
      broken = true;
    }
  }
  CHECK(broken);
  sigset_t pending;
  sigemptyset(&pending);
  REQUIRE(::sigpending(&pending) == 0);
  CHECK(sigismember(&pending, SIGPIPE) == 0);  // consumed, not left to strike later
}

TEST_CASE("redlock: a renewal takes a node that lost the key again, with the lease's fence", "[redlock][faults]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  options.default_ttl = 3s;
  auto manager = open_manager(options, prefix);
  auto lease = manager->try_acquire("retake");
  REQUIRE(lease);
  Raw third(nodes().at(2));
  REQUIRE(third.text({"DEL", prefix + "retake"}) == "1");  // as a restart without persistence would
  const auto until = SteadyClock::now() + 10s;
  while (third.text({"HGET", prefix + "retake", "fence"}).empty() && SteadyClock::now() < until) {
    std::this_thread::sleep_for(20ms);
  }
  CHECK(third.text({"HGET", prefix + "retake", "fence"}) == std::to_string(lease->fence()));
  CHECK(std::stoll(third.text({"GET", "{" + prefix + "retake}:fence"})) >= lease->fence());
  CHECK_FALSE(lease->lost());
  CHECK(lease->expires_at_us() == 0);  // README: no single server clock, no clock-step check
  CHECK(lease->release() == ReleaseResult::kReleased);
}

TEST_CASE("redlock: inspect shows the holder of a majority, not what the first node shows", "[redlock][list]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lease = manager->try_acquire("view");
  REQUIRE(lease);
  // Node 0 loses the key and another owner takes that node alone, as a waiter's partial take does.
  Raw first(nodes().at(0));
  REQUIRE(first.text({"DEL", prefix + "view"}) == "1");
  const Url::Host node0 = nodes().at(0);
  auto alone = dblock::open("redis://" + node0.host + ":" + std::to_string(node0.port) + "?prefix=" + prefix);
  auto partial = alone->try_acquire("view");
  REQUIRE(partial);
  REQUIRE(partial->fence() != lease->fence());
  auto seen = manager->inspect("view");
  REQUIRE(seen);
  CHECK(seen->fence == lease->fence());
  CHECK(lease->release() == ReleaseResult::kReleased);
}

TEST_CASE("redlock: one frozen master of three: a held lease stays held, and tries and opens are answered by the two",
          "[redlock][faults][deadline]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  options.default_ttl = 2s;
  auto manager = open_manager(options, prefix);
  LostWatch watch;
  AcquireOptions held_options;
  held_options.on_lost = watch.callback();
  auto held = manager->try_acquire("frozen-held", held_options);
  REQUIRE(held);
  const NodeFrozen frozen(nodes().at(2));
  // Three TTLs of renewals, each answered by the two nodes that answer.
  CHECK_FALSE(watch.wait(6s).has_value());
  CHECK_FALSE(held->lost());
  auto other = open_manager(options, prefix);
  auto fresh = other->try_acquire("frozen-new");
  CHECK(fresh);  // the two answering nodes decide; the silent one does not eat the validity window
  CHECK_FALSE(other->try_acquire("frozen-held"));  // still held on the two
  // An open waits for a majority, not for the silent node: well within its connect_timeout (5 s).
  const auto opening = SteadyClock::now();
  auto third = open_manager(options, prefix);
  CHECK(SteadyClock::now() - opening < 5s);
  CHECK(third->try_acquire("frozen-third"));
  CHECK(held->release() == ReleaseResult::kReleased);
}

TEST_CASE("redlock: a release that a majority reports \"not held\" finds the lease already lost",
          "[redlock][faults]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lease = manager->try_acquire("gone");
  REQUIRE(lease);
  // Two nodes lost the key (restarted empty, then taken and given up by another owner): the lease
  // was gone, whatever the third node still holds.
  for (int i : {0, 1}) {
    Raw raw(nodes().at(i));
    REQUIRE(raw.text({"DEL", prefix + "gone"}) == "1");
  }
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
}

TEST_CASE("redlock: a renewal that a majority no longer holds loses the lease at once", "[redlock][faults]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  options.default_ttl = 3s;  // renewed every second
  auto manager = open_manager(options, prefix);
  LostWatch watch;
  AcquireOptions acquire;
  acquire.on_lost = watch.callback();
  auto lease = manager->try_acquire("taken-over", acquire);
  REQUIRE(lease);
  // Nodes 0 and 1 restarted empty and another owner took them: a majority of another holder.
  const OwnerSecret intruder = OwnerSecret::generate();
  redis::RedlockService service(node_options(prefix));
  for (int i : {0, 1}) {
    Raw raw(nodes().at(i));
    REQUIRE(raw.text({"DEL", prefix + "taken-over"}) == "1");
  }
  AcquireRequest r = request("taken-over", intruder);
  REQUIRE(service.try_acquire(r).acquired);  // nodes 0 and 1: a majority
  const auto lost = watch.wait(5s);
  REQUIRE(lost);
  CHECK(lost->reason.find("refused") != std::string::npos);
  CHECK(lease->lost());
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
}

TEST_CASE("redlock: a release that reaches no majority is in doubt", "[redlock][faults]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lease = manager->try_acquire("doubt");
  REQUIRE(lease);
  Raw first(nodes().at(0));
  REQUIRE(first.text({"DEL", prefix + "doubt"}) == "1");  // node 0 lost it
  const NodeDown down(nodes().at(2));                      // node 2 does not answer
  CHECK(lease->release() == ReleaseResult::kInDoubt);      // released on one node of three
}

TEST_CASE("redlock: inspect cannot tell when the nodes that do not answer could hold a majority", "[redlock][list]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lease = manager->try_acquire("unsure");
  REQUIRE(lease);
  Raw first(nodes().at(0));
  REQUIRE(first.text({"DEL", prefix + "unsure"}) == "1");  // node 0 lost it (not yet taken again)
  {
    const NodeDown down(nodes().at(2));  // node 2, which may still hold it, does not answer
    // Held on one of the two nodes that answer: held or free depends on node 2.
    CHECK_THROWS_AS(manager->inspect("unsure"), ConnectionError);
    CHECK(manager->list().empty());  // the listing of every name shows only what a majority shows
  }
  Raw second(nodes().at(1));
  REQUIRE(second.text({"DEL", prefix + "unsure"}) == "1");
  CHECK_FALSE(manager->inspect("unsure"));  // node 2 came back empty: free on all three
}

}  // namespace dblock::testing
