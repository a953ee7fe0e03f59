// ZooKeeper: the cases only ZooKeeper has (the suite's context: zookeeper_context.cc) (URLs, the node
// layout Curator shares, escaping, the order Curator decides holding by). ctest starts the server
// (scripts/servers/zookeeper.sh) and passes its URL.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "context.h"
#include "environment.h"
#include "audit.h"
#include "paths.h"
#include "raw_zookeeper.h"
#include "relay.h"
#include "service_driver.h"
#include "zookeeper_service.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
namespace zk = dblock::zookeeper;

namespace {

std::unique_ptr<LockManager> open_on(const std::string& url, const std::string& prefix,
                                     const std::string& holder = "") {
  ManagerOptions options;
  options.table_prefix = prefix;
  options.holder = holder;
  return dblock::open(url, options);
}

std::string with_params(const std::string& params) {
  const std::string url = context().url;
  return url + (url.find('?') == std::string::npos ? "?" : "&") + params;
}

}  // namespace

TEST_CASE("zookeeper: bad URLs are usage errors naming the option", "[zookeeper][input]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"zookeeper://127.0.0.1:1?session_timeout=999", "session_timeout"},
      {"zookeeper://127.0.0.1:1?session_timeout=60001", "session_timeout"},
      {"zookeeper://127.0.0.1:1?session_timeout=soon", "session_timeout"},
      {"zookeeper://127.0.0.1:1?layout=fifo", "layout"},
      {"zookeeper://127.0.0.1:1?layout=rw&layout=rw", "layout"},
      {"zookeeper://127.0.0.1:1?base=relative", "base"},
      {"zookeeper://127.0.0.1:1?base=/a//b", "base"},
      {"zookeeper://127.0.0.1:1?base=/a/", "base"},
      {"zookeeper://127.0.0.1:1?base=/a/../b", "base"},
      {"zookeeper://127.0.0.1:1?base=", "base"},
      {"zookeeper://127.0.0.1:1?base=/", "base"},
      {"zookeeper://127.0.0.1:1?base=/zookeeper/x", "base"},
      {"zookeeper://127.0.0.1:1/a%2F%2Fb", "chroot"},
      {"zookeeper://127.0.0.1:1/a/", "chroot"},
      {"zookeeper://127.0.0.1:1/a/./b", "chroot"},
      {"zookeeper://127.0.0.1:1?connect_timeout=0", "connect_timeout"},
      {"zookeeper://127.0.0.1:1?nope=1", "nope"},
  };
  for (const auto& [url, option] : cases) {
    INFO(url);
    try {
      dblock::open(url);
      FAIL("opened");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(option) != std::string::npos);
    }
  }
  // Credentials are digest authentication's: a user and a password, both or neither.
  for (const char* url : {"zookeeper://:hunter2@127.0.0.1:1", "zookeeper://user@127.0.0.1:1",
                          "zookeeper://a%3Ab:hunter2@127.0.0.1:1"}) {
    INFO(url);
    try {
      dblock::open(url);
      FAIL("opened");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find("hunter2") == std::string::npos);
      CHECK(std::string(e.what()).find("digest") != std::string::npos);
    }
  }
}

TEST_CASE("zookeeper: no server answering by the deadline is a ConnectionError", "[zookeeper][input]") {
  auto start = SteadyClock::now();
  // Nothing listens there.
  CHECK_THROWS_AS(dblock::open("zookeeper://127.0.0.1:1?connect_timeout=1"), ConnectionError);
  CHECK(SteadyClock::now() - start < 4s);
  start = SteadyClock::now();  // an open with a deadline of its own (dblock run --wait)
  CHECK_THROWS_AS(dblock::open("zookeeper://127.0.0.1:1", {}, SteadyClock::now() + 2s), ConnectionError);
  CHECK(SteadyClock::now() - start < 5s);
}

TEST_CASE("zookeeper: lock names round-trip through one path segment", "[zookeeper][paths]") {
  for (const std::string name : {"plain", "a/b", "%", "%41", ".", "..", "...", "x\xEE\x80\x80y", "\xEF\xBF\xBFz",
                                 "\xC3\xBC-\xE2\x82\xAC", "-_:@", "\xF0\x9F\x94\x92 lock"}) {
    INFO(name);
    const std::string segment = zk::escape_name(name);
    CHECK(segment.find('/') == std::string::npos);
    CHECK_NOTHROW(zk::validate_path("/" + segment, "name"));
    CHECK(zk::unescape_name(segment) == name);
  }
  CHECK(zk::escape_name("a/b") == "a%2Fb");
  CHECK(zk::escape_name("..") == "%2E%2E");
  CHECK(zk::escape_name("\xF0\x9F\x94\x92") == "%F0%9F%94%92");
  CHECK_FALSE(zk::unescape_name("%zz").has_value());
  CHECK_FALSE(zk::unescape_name("%%audit").has_value());
}

TEST_CASE("zookeeper: children are ordered and hold as Curator decides", "[zookeeper][paths]") {
  const std::string g = "_c_00000000-0000-0000-0000-00000000000";
  const std::vector<zk::Child> rw = zk::sorted_children(
      zk::Layout::kReadWrite, {g + "3-__READ__0000000003", g + "2-__WRIT__0000000002", g + "1-__READ__0000000001"});
  REQUIRE(rw.size() == 3);
  CHECK(rw[0].sequence == 1);
  CHECK(rw[1].sequence == 2);
  CHECK(zk::holds(rw, 0));        // a reader with no writer before it
  CHECK_FALSE(zk::holds(rw, 1));  // a writer not first
  CHECK_FALSE(zk::holds(rw, 2));  // a reader behind a writer
  const std::vector<zk::Child> readers =
      zk::sorted_children(zk::Layout::kReadWrite, {g + "2-__READ__0000000002", g + "1-__READ__0000000001"});
  CHECK((zk::holds(readers, 0) && zk::holds(readers, 1)));
  const std::vector<zk::Child> mutex =
      zk::sorted_children(zk::Layout::kCuratorMutex, {g + "2-lock-0000000009", g + "1-lock-0000000004"});
  CHECK(mutex[0].sequence == 4);
  CHECK(zk::holds(mutex, 0));
  CHECK_FALSE(zk::holds(mutex, 1));
}

TEST_CASE("zookeeper: audit records round-trip, whatever the fields hold", "[zookeeper][audit-format]") {
  ForceReleaseRecord r;
  r.name = "a:b\n7:c";
  r.by = "ops:1";
  r.evicted = "reader-2,worker-1";
  r.mode = LockMode::kShared;
  r.old_fence = 0x100000007;
  const auto back = zk::decode_record(zk::encode_record(r));
  REQUIRE(back);
  CHECK(back->name == r.name);
  CHECK(back->by == r.by);
  CHECK(back->evicted == r.evicted);
  CHECK(back->mode == LockMode::kShared);
  CHECK(back->old_fence == r.old_fence);
  CHECK_FALSE(zk::decode_record("10.0.0.1"));  // not a record (Curator's data, say)
  CHECK_FALSE(zk::decode_record(zk::encode_record(r).substr(0, 30)));
}

TEST_CASE("zookeeper: a lease is an ephemeral sequential node named as Curator names it, fenced by its czxid",
          "[zookeeper][layout]") {
  const std::string prefix = unique_prefix();
  auto manager = open_on(context().url, prefix, "worker-1");
  auto lease = manager->try_acquire("nodes/one");
  REQUIRE(lease);
  RawZk raw(context().url);
  const std::string dir = root_for(prefix) + "/nodes%2Fone";
  const std::vector<std::string> children = raw.children(dir);
  REQUIRE(children.size() == 1);
  static const std::regex kWriter("_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-__WRIT__[0-9]{10}");
  CHECK(std::regex_match(children[0], kWriter));
  const auto stat = raw.stat(dir + "/" + children[0]);
  REQUIRE(stat);
  CHECK(stat->ephemeralOwner != 0);
  CHECK(lease->fence() == stat->czxid);
  CHECK(raw.data(dir + "/" + children[0]) == "dblock:worker-1");  // tagged: a dblock holder
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  CHECK(raw.children(dir).empty());
}

TEST_CASE("zookeeper: layout=curator-mutex names nodes as InterProcessMutex and has no shared leases",
          "[zookeeper][layout]") {
  const std::string prefix = unique_prefix();
  auto manager = open_on(with_params("layout=curator-mutex"), prefix);
  auto lease = manager->try_acquire("m");
  REQUIRE(lease);
  RawZk raw(context().url);
  const std::vector<std::string> children = raw.children(root_for(prefix) + "/m");
  REQUIRE(children.size() == 1);
  CHECK(std::regex_match(children[0], std::regex("_c_[0-9a-f-]{36}-lock-[0-9]{10}")));
  auto other = open_on(with_params("layout=curator-mutex"), prefix);
  CHECK_FALSE(other->try_acquire("m"));
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  CHECK_THROWS_AS(other->try_acquire("m", shared), UnsupportedError);
}

TEST_CASE("zookeeper: base= places the containers, under the chroot", "[zookeeper][layout]") {
  const std::string prefix = unique_prefix();
  const std::string base = "/dblock-base-" + prefix;
  auto manager = open_on(with_params("base=" + base), prefix);
  auto lease = manager->try_acquire("b");
  REQUIRE(lease);
  RawZk raw(context().url);
  CHECK(raw.children(base + "/b").size() == 1);
  CHECK(raw.children(root_for(prefix)).empty());  // table_prefix plays no part with base=
  lease->release();
}

namespace {

// "$DBLOCK_TEST_ZOOKEEPER_SCRIPT <command> $DBLOCK_TEST_ZOOKEEPER_STATE <args>"'s standard output.
std::string server_script(const std::string& command, const std::string& args = "") {
  const std::string line = env("DBLOCK_TEST_ZOOKEEPER_SCRIPT") + " " + command + " " +
                           env("DBLOCK_TEST_ZOOKEEPER_STATE") + " " + args;
  std::FILE* out = ::popen(line.c_str(), "r");
  REQUIRE(out != nullptr);
  std::string text;
  char buffer[256];
  while (std::fgets(buffer, sizeof buffer, out) != nullptr) text += buffer;
  REQUIRE(::pclose(out) == 0);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

std::int64_t take_and_release(LockManager& manager, const std::string& name) {
  auto lease = manager.acquire(name, std::chrono::seconds(20));
  REQUIRE(lease);
  const std::int64_t fence = lease->fence();
  lease->release();
  return fence;
}

}  // namespace

TEST_CASE("zookeeper: czxid fences increase across node deletions and, on an ensemble, the leader's death",
          "[zookeeper][fences][ensemble]") {
  auto manager = open_on(context().url, unique_prefix());
  const std::int64_t first = take_and_release(*manager, "elect");
  const std::int64_t second = take_and_release(*manager, "elect");  // a new node: a new czxid
  CHECK(second > first);
  const std::string leader = server_script("leader");
  REQUIRE_FALSE(leader.empty());
  server_script("kill", leader);
  struct Restart {
    std::string port;
    ~Restart() { std::system((env("DBLOCK_TEST_ZOOKEEPER_SCRIPT") + " start-one " +
                              env("DBLOCK_TEST_ZOOKEEPER_STATE") + " " + port + " >/dev/null").c_str()); }
  } restart{leader};
  // The session moves to a follower (or expires, and the service opens a new one); a new leader's
  // epoch is in the high 32 bits of every zxid it writes.
  const std::int64_t third = take_and_release(*manager, "elect");
  CHECK(third > second);
  CHECK((third >> 32) > (second >> 32));
}

TEST_CASE("zookeeper: a waiter in line is woken by the watch on the node ahead, not by polling",
          "[zookeeper][events]") {
  const std::string prefix = unique_prefix();
  ManagerOptions slow_polls;
  slow_polls.max_poll = 5s;  // a poll cannot explain a prompt hand-off
  auto holder_manager = open_on(context().url, prefix);
  ManagerOptions options = slow_polls;
  options.table_prefix = prefix;
  auto waiter_manager = dblock::open(context().url, options);
  auto lease = holder_manager->try_acquire("watched");
  REQUIRE(lease);
  std::optional<Lease> got;
  SteadyClock::time_point got_at;
  std::thread waiter([&] {
    got = waiter_manager->acquire("watched", 20s);
    got_at = SteadyClock::now();
  });
  std::this_thread::sleep_for(2s);  // the waiter's backoff grows past a second meanwhile
  const auto released_at = SteadyClock::now();
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  waiter.join();
  REQUIRE(got);
  CHECK(got->fence() > lease->fence());
  INFO("hand-off took " << std::chrono::duration_cast<std::chrono::milliseconds>(got_at - released_at).count()
                        << " ms");
  CHECK(got_at - released_at < 500ms);
}

TEST_CASE("zookeeper: a reader queued behind a waiting writer is woken by the watch when that writer releases",
          "[zookeeper][events]") {
  // A reader's wake-up names no ticket: a reader with waiters ahead asks position(), where its own
  // node, holding by then, must not count as a holder to wait for (it did: the reader slept for a
  // session timeout).
  const std::string prefix = unique_prefix();
  const std::string name = "read-after-write";
  const std::string url = std::regex_replace(context().url, std::regex("session_timeout=[0-9]+"),
                                             "session_timeout=10000");
  ManagerOptions slow;
  slow.table_prefix = prefix;
  slow.min_poll = 20s;  // polls every 10-30 s: a prompt hand-off is the watch's
  slow.max_poll = 20s;
  auto first_manager = open_on(url, prefix);
  auto writer_manager = dblock::open(url, slow);
  auto reader_manager = dblock::open(url, slow);
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  RawZk raw(url);
  const std::string dir = root_for(prefix) + "/" + name;
  const auto await_children = [&](std::size_t n) {
    for (int i = 0; i < 1000 && raw.children(dir).size() != n; ++i) std::this_thread::sleep_for(10ms);  // bounded
    REQUIRE(raw.children(dir).size() == n);
  };

  auto first_reader = first_manager->try_acquire(name, shared);
  REQUIRE(first_reader);
  std::optional<Lease> writer;
  std::jthread writer_thread([&] { writer = writer_manager->acquire(name, 60s); });
  await_children(2);
  std::optional<Lease> reader;
  SteadyClock::time_point reader_at;
  std::jthread reader_thread([&] {
    reader = reader_manager->acquire(name, 60s, shared);
    reader_at = SteadyClock::now();
  });
  await_children(3);  // reader, waiting writer, waiting reader
  REQUIRE(first_reader->release() == ReleaseResult::kReleased);
  writer_thread.join();
  REQUIRE(writer);
  const auto released_at = SteadyClock::now();
  REQUIRE(writer->release() == ReleaseResult::kReleased);
  reader_thread.join();
  REQUIRE(reader);
  INFO("hand-off took " << std::chrono::duration_cast<std::chrono::milliseconds>(reader_at - released_at).count()
                        << " ms");
  CHECK(reader_at - released_at < 5s);  // the session timeout is 10 s
}

}  // namespace dblock::testing

namespace dblock::testing {

namespace {

// Takes the session over with its id and password and closes it: the server ends it, and its own
// client learns that it expired at its next contact.
void expire_session(const std::string& url, const std::pair<std::int64_t, std::string>& credentials) {
  REQUIRE(credentials.second.size() == sizeof(clientid_t{}.passwd));
  clientid_t id{};
  id.client_id = credentials.first;
  std::memcpy(id.passwd, credentials.second.data(), sizeof id.passwd);
  const Url::Host host = parse_url(url).hosts.at(0);
  const std::string at = host.host + ":" + std::to_string(host.port);
  zhandle_t* zh = zookeeper_init(at.c_str(), nullptr, 10'000, &id, nullptr, 0);
  REQUIRE(zh != nullptr);
  for (int i = 0; i < 1000 && zoo_state(zh) != ZOO_CONNECTED_STATE; ++i) {
    std::this_thread::sleep_for(10ms);  // no watcher: poll the state, bounded
  }
  CHECK(zoo_state(zh) == ZOO_CONNECTED_STATE);
  zookeeper_close(zh);
}

// Waits (bounded, 10 s) until a client request waits in `relay`'s stalled path: the bytes the
// relay holds unread grow past `before` (what it held before the request was made).
bool request_stalled(TcpRelay& relay, long before) {
  for (int i = 0; i < 500; ++i) {
    const long now = relay.pending_request_bytes();
    if (now > std::max(before, 0L)) return true;
    std::this_thread::sleep_for(20ms);
  }
  return false;
}

}  // namespace

TEST_CASE("zookeeper: an expired session loses its leases when the client hears of it, before safe-until, saying so; later acquires use a new session",
          "[zookeeper][expiry][standalone]") {
  const std::string prefix = unique_prefix();
  // A long session and TTL: safe-until (10 s) and the client's own timeout (6.7 s) come later; the
  // first renewal (3.3 s) meets the expiry if the watcher has not reported it by then.
  const std::string url = parse_url(context().url).hosts.size() == 1
                              ? "zookeeper://127.0.0.1:" + std::to_string(parse_url(context().url).hosts[0].port) +
                                    "?session_timeout=10000"
                              : "";
  auto manager = open_on(url, prefix);
  auto* service = dynamic_cast<zk::ZooKeeperService*>(&ServiceDriver(*manager).service);
  REQUIRE(service != nullptr);
  LostWatch lost;
  AcquireOptions options;
  options.ttl = 60s;
  options.on_lost = lost.callback();
  auto lease = manager->try_acquire("expiring", options);
  REQUIRE(lease);
  const auto expired_at = SteadyClock::now();
  expire_session(url, service->session_credentials());
  // Usually within a second (the server closes the connection; the reconnect hears "expired").
  // The takeover can also leave the old connection open and silent: the client then gives it up
  // at two thirds of the session timeout (6.7 s) and hears it then, still before safe-until (10 s).
  const std::optional<LostLease> loss = lost.wait(9500ms);
  REQUIRE(loss);
  CHECK(SteadyClock::now() - expired_at < 9500ms);
  CHECK(loss->reason.find("session expired") != std::string::npos);
  CHECK(lease->lost());
  // The node went with the session; the next acquire opens a new one.
  auto again = manager->try_acquire("expiring");
  REQUIRE(again);
  CHECK(again->fence() > lease->fence());
}

TEST_CASE("zookeeper: a holder that is not dblock's shows as foreign and is force-released only with force_foreign=1",
          "[zookeeper][foreign]") {
  const std::string prefix = unique_prefix();
  auto manager = open_on(with_params("layout=curator-mutex"), prefix);
  REQUIRE(manager->try_acquire("shared-with-java"));  // makes the container; released at once
  RawZk raw(context().url);
  const std::string dir = root_for(prefix) + "/shared-with-java";
  // As Curator's InterProcessMutex writes its node: the client's IP address as data.
  const std::string made =
      raw.create(dir + "/_c_0f0e0d0c-0b0a-4908-8706-050403020100-lock-", "10.1.2.3", ZOO_EPHEMERAL_SEQUENTIAL);
  REQUIRE_FALSE(made.empty());
  const std::string child = made.substr(made.rfind('/') + 1);
  CHECK_FALSE(manager->try_acquire("shared-with-java"));
  const std::vector<LeaseInfo> listed = manager->list();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].holder == "foreign " + child + " (10.1.2.3)");
  try {
    manager->force_release("shared-with-java");
    FAIL("force-released a foreign holder without force_foreign");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("force_foreign=1") != std::string::npos);
  }
  CHECK(raw.stat(made));  // untouched
  auto admin = open_on(with_params("layout=curator-mutex&force_foreign=1"), prefix);
  CHECK(admin->force_release("shared-with-java"));
  CHECK_FALSE(raw.stat(made));
  const auto history = admin->force_release_history("shared-with-java");
  REQUIRE_FALSE(history.empty());
  CHECK(history[0].evicted == "foreign " + child + " (10.1.2.3)");
  CHECK(manager->try_acquire("shared-with-java"));
}

namespace {

// Bounded: true once `condition` holds, false when `limit` passed first.
bool within(std::chrono::milliseconds limit, const std::function<bool()>& condition) {
  const auto until = SteadyClock::now() + limit;
  while (!condition()) {
    if (SteadyClock::now() >= until) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

}  // namespace

TEST_CASE("zookeeper: a create whose reply never came leaves no node behind once the session is connected again",
          "[zookeeper][orphans][standalone]") {
  const Url server = parse_url(context().url);
  TcpRelay relay(DBLOCK_TCP_RELAY, server.hosts[0].port);
  // A session that outlives the muted seconds; the client declares the connection lost at 4 s.
  const std::string url = "zookeeper://" + relay.address() + "?session_timeout=6000";
  const std::string prefix = unique_prefix();
  const std::string dir = root_for(prefix) + "/" + zk::escape_name("orphan");
  auto manager = open_on(url, prefix);
  auto other = open_on(context().url, prefix);
  auto held = other->try_acquire("orphan");  // the container exists; the orphan would queue behind
  REQUIRE(held);
  RawZk raw(context().url);

  relay.mute_replies();  // the create reaches the server; its reply never comes back
  std::optional<Lease> lease;
  CHECK_THROWS_AS(lease = manager->try_acquire("orphan"), ConnectionError);
  CHECK_FALSE(lease);
  REQUIRE(raw.children(dir).size() == 2);  // the holder's node and the orphan, of a live session

  relay.cut();  // the client reconnects, with the same session
  CHECK(within(10s, [&] { return raw.children(dir).size() == 1; }));
  held->release();
  // Nothing is left ahead of a newcomer: the orphan would hold the lock now, for nobody.
  auto third = open_on(context().url, prefix);
  CHECK(third->try_acquire("orphan"));
  third.reset();
  // The manager that left the orphan works on.
  CHECK(within(10s, [&] { return manager->try_acquire("orphan").has_value(); }));
}

// Found by the fault harness's session-expire row: a release whose delete met the takeover kept
// retrying on the expired handle until its deadline and answered "in doubt".
TEST_CASE("zookeeper: a release whose session is taken over and closed meanwhile answers already lost, not in doubt",
          "[zookeeper][expiry][standalone]") {
  const std::vector<Url::Host> hosts = parse_url(context().url).hosts;
  const std::string direct = "zookeeper://127.0.0.1:" + std::to_string(hosts[0].port) + "?session_timeout=10000";
  TcpRelay relay(DBLOCK_TCP_RELAY, hosts[0].port);
  // A 10 s session: the release's deadline is its safe-until, up to 10 s away, far after the
  // expiry is known (the client's own timeout, 6.7 s, never fires).
  auto manager = open_on("zookeeper://" + relay.address() + "?session_timeout=10000", unique_prefix());
  auto* service = dynamic_cast<zk::ZooKeeperService*>(&ServiceDriver(*manager).service);
  REQUIRE(service != nullptr);
  AcquireOptions options;
  options.ttl = 60s;
  auto lease = manager->try_acquire("taken-over", options);
  REQUIRE(lease);
  const auto credentials = service->session_credentials();
  relay.pause();  // the holder's path stalls: it sees nothing of the takeover yet
  expire_session(direct, credentials);
  const long before = relay.pending_request_bytes();
  const auto started = SteadyClock::now();
  auto released = std::async(std::launch::async, [&] { return lease->release(); });
  REQUIRE(request_stalled(relay, before));  // the delete waits in the stalled path
  relay.resume();  // the server closed that connection: the client reconnects and finds its session expired
  REQUIRE(released.wait_for(30s) == std::future_status::ready);
  const ReleaseResult result = released.get();
  INFO("release took " << std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started).count()
                       << " ms");
  CHECK(result == ReleaseResult::kAlreadyLost);
}

// Found by the fault harness's leader-stop row: a wrong owner's release whose delete met a lost
// connection was sent again, found no node, and answered "released" (a retry's "no such node"
// counted as the first delete's doing, for a node nobody of that secret ever took).
TEST_CASE("zookeeper: a wrong owner's release that meets a lost connection is not reported released",
          "[zookeeper][faults][standalone]") {
  const std::vector<Url::Host> hosts = parse_url(context().url).hosts;
  REQUIRE(context().restart);
  TcpRelay relay(DBLOCK_TCP_RELAY, hosts[0].port);
  // A 10 s session: it outlives the restart below (the server keeps it in its data).
  auto manager = open_on("zookeeper://" + relay.address() + "?session_timeout=10000", unique_prefix());
  auto lease = manager->try_acquire("wrong-owner");
  REQUIRE(lease);
  ServiceDriver service(*manager);
  relay.pause();
  const long before = relay.pending_request_bytes();
  auto released = std::async(std::launch::async, [&] {
    return service.release("wrong-owner", LockMode::kExclusive, OwnerSecret::generate());
  });
  REQUIRE(request_stalled(relay, before));  // the delete waits in the stalled path
  context().restart();  // the server closes every connection, the stalled one too
  relay.resume();       // the client sees it closed: its delete failed with a lost connection, and is retried
  REQUIRE(released.wait_for(30s) == std::future_status::ready);
  CHECK_FALSE(released.get());
}

}  // namespace dblock::testing

namespace dblock::testing {

namespace {

// The URL of the test server(s) without parameters: the session timeout is the service's choice.
std::string bare_url() {
  std::string hosts;
  for (const Url::Host& host : parse_url(context().url).hosts) {
    hosts += (hosts.empty() ? "" : ",") + host.host + ":" + std::to_string(host.port);
  }
  return "zookeeper://" + hosts;
}

zk::ZooKeeperService& zookeeper_service(LockManager& manager) {
  auto* service = dynamic_cast<zk::ZooKeeperService*>(&ServiceDriver(manager).service);
  REQUIRE(service != nullptr);
  return *service;
}

}  // namespace

// Issue 47, item 6: the sweep that deletes such an orphan runs when the session reconnects; a
// manager closed before that (a `dblock run --wait 0` that exits on the ConnectionError) closed a
// disconnected session, which leaves its nodes to the server's expiry of the session.
TEST_CASE("zookeeper: a manager closed while its connection is down after a create whose reply was lost leaves no "
          "node behind",
          "[zookeeper][orphans][standalone]") {
  const Url server = parse_url(context().url);
  TcpRelay relay(DBLOCK_TCP_RELAY, server.hosts[0].port);
  // A session far longer than the checks below: its expiry cannot explain the node's end.
  const std::string url = "zookeeper://" + relay.address() + "?session_timeout=30000";
  const std::string prefix = unique_prefix();
  const std::string dir = root_for(prefix) + "/" + zk::escape_name("closed");
  auto manager = open_on(url, prefix);
  auto other = open_on(context().url, prefix);
  auto held = other->try_acquire("closed");  // the container exists; the orphan would queue behind
  REQUIRE(held);
  RawZk raw(context().url);

  relay.mute_replies();  // the create reaches the server, its reply stays in the relay
  auto attempt = std::async(std::launch::async, [&] { return manager->try_acquire("closed").has_value(); });
  REQUIRE(within(10s, [&] { return raw.children(dir).size() == 2; }));
  relay.cut_and_pause();  // the reply is lost with the connection; no new one gets through yet
  CHECK_THROWS_AS(attempt.get(), ConnectionError);

  const auto closing_at = SteadyClock::now();
  auto closed = std::async(std::launch::async, [&] { manager.reset(); });
  // The path comes back after a second, or as soon as the close returned without waiting for it.
  closed.wait_for(1s);
  relay.resume();
  REQUIRE(closed.wait_for(30s) == std::future_status::ready);
  const double took = std::chrono::duration<double>(SteadyClock::now() - closing_at).count();
  INFO("the close took " << took << " s");
  CHECK(took < 5.0 + 3.0);  // connect_timeout bounds its wait for the session, plus a sanitizer's slack
  // Gone with the closed session, long before the server would have expired it.
  CHECK(within(5s, [&] { return raw.children(dir).size() == 1; }));
  held->release();
}

// Issue 47, item 5: a no-server-yet failure was not retryable, so a wait longer than
// connect_timeout ended with it at connect_timeout.
TEST_CASE("zookeeper: an open that is part of a wait tries until the wait ends, and uses a server that starts "
          "during it",
          "[zookeeper][input][deadline][standalone]") {
  // Nothing listens on port 1: the open tries for the whole wait, not one connect_timeout (1 s).
  auto start = SteadyClock::now();
  CHECK_THROWS_AS(dblock::open("zookeeper://127.0.0.1:1?connect_timeout=1", {}, SteadyClock::now() + 3s),
                  ConnectionError);
  const double tried = std::chrono::duration<double>(SteadyClock::now() - start).count();
  INFO("tried for " << tried << " s");
  CHECK(tried >= 2.9);
  CHECK(tried < 3.0 + 3.0);

  const std::vector<Url::Host> hosts = parse_url(context().url).hosts;
  const std::string port = std::to_string(hosts[0].port);
  server_script("kill", port);
  struct Restart {  // whatever happens below, the server is back for the next case
    std::string port;
    bool done = false;
    ~Restart() {
      if (!done) std::system((env("DBLOCK_TEST_ZOOKEEPER_SCRIPT") + " start-one " +
                              env("DBLOCK_TEST_ZOOKEEPER_STATE") + " " + port + " >/dev/null").c_str());
    }
  } restart{port};
  start = SteadyClock::now();
  auto opened = std::async(std::launch::async, [&] {
    return dblock::open(context().url + "&connect_timeout=1", {}, SteadyClock::now() + 20s);
  });
  std::this_thread::sleep_for(2s);  // the scenario: the server starts 2 s into the wait
  server_script("start-one", port);
  restart.done = true;
  std::unique_ptr<LockManager> manager;
  REQUIRE_NOTHROW(manager = opened.get());
  INFO("opened after " << std::chrono::duration<double>(SteadyClock::now() - start).count() << " s");
  CHECK(manager->try_acquire("opened-in-the-wait"));
}

// Issue 47, item 13: the session timeout was 10 s whatever the TTL, so a dead holder of a 4 s
// lease kept the name for 10 s.
TEST_CASE("zookeeper: without session_timeout in the URL the session asks for the manager's default TTL, within 1 s "
          "to 60 s",
          "[zookeeper][session]") {
  const std::vector<std::pair<std::chrono::milliseconds, std::chrono::milliseconds>> cases = {
      {4s, 4s}, {300ms, 1s}, {std::chrono::minutes(2), 60s}};
  for (const auto& [ttl, session] : cases) {
    INFO("default_ttl " << ttl.count() << " ms");
    ManagerOptions options;
    options.table_prefix = unique_prefix();
    options.default_ttl = ttl;
    auto manager = dblock::open(bare_url(), options);
    CHECK(zookeeper_service(*manager).session_timeout() == session);  // the test servers grant 1 s .. 60 s
  }
  ManagerOptions options;
  options.default_ttl = 4s;
  auto manager = dblock::open(bare_url() + "?session_timeout=3000", options);  // the URL's says
  CHECK(zookeeper_service(*manager).session_timeout() == 3s);
}

// Issue 47, item 14: list and inspect had no way to say "until the session ends" and showed an
// expiry of 0.
TEST_CASE("zookeeper: list and inspect say that a holder's node ends with its session", "[zookeeper][layout]") {
  const std::string prefix = unique_prefix();
  auto manager = open_on(context().url, prefix, "worker-1");
  auto lease = manager->try_acquire("bound");
  REQUIRE(lease);
  const std::optional<LeaseInfo> info = manager->inspect("bound");
  REQUIRE(info);
  CHECK(info->bound == LeaseBound::kSession);
  CHECK(info->expires_at_us == 0);
  CHECK(info->holder == "worker-1");
}

// Issue 47, item 14: nodes were created world:anyone with every permission, ADMIN included: any
// client could set a dblock base read-only and lock every new name out.
TEST_CASE("zookeeper: nodes are created without ADMIN for anyone, so a co-tenant cannot change their ACL",
          "[zookeeper][acl]") {
  const std::string prefix = unique_prefix();
  auto manager = open_on(context().url, prefix);
  auto lease = manager->try_acquire("acl/one");
  REQUIRE(lease);
  RawZk raw(context().url);
  const std::string root = root_for(prefix);
  const std::string dir = root + "/acl%2Fone";
  const std::vector<std::string> children = raw.children(dir);
  REQUIRE(children.size() == 1);
  const std::vector<std::string> world = {"world:anyone:15"};  // READ | WRITE | CREATE | DELETE
  CHECK(raw.acl(root) == world);
  CHECK(raw.acl(dir) == world);
  CHECK(raw.acl(dir + "/" + children[0]) == world);
  // A co-tenant: no node of dblock's can be made read-only, and new names stay open.
  CHECK(raw.make_read_only(root) == ZNOAUTH);
  CHECK(raw.make_read_only(dir) == ZNOAUTH);
  CHECK(manager->try_acquire("acl/two"));
  // What a co-tenant can still do (README, "ZooKeeper"): delete a holder's node, as force_release does.
  CHECK(raw.remove(dir + "/" + children[0]) == ZOK);
}

TEST_CASE("zookeeper: with a user and password in the URL, dblock's nodes belong to that digest identity alone",
          "[zookeeper][acl]") {
  const std::string prefix = unique_prefix();
  const std::string hosts = bare_url().substr(std::string("zookeeper://").size());
  auto manager = open_on("zookeeper://locker:s3cret@" + hosts, prefix);
  auto lease = manager->try_acquire("private");
  REQUIRE(lease);
  const std::string root = root_for(prefix);
  const std::string dir = root + "/private";
  RawZk stranger(context().url);
  CHECK(stranger.children_rc(dir) == ZNOAUTH);
  CHECK(stranger.children_rc(root) == ZNOAUTH);
  CHECK(stranger.make_read_only(root) == ZNOAUTH);
  RawZk owner(context().url, "locker:s3cret");
  REQUIRE(owner.children_rc(dir) == ZOK);
  const std::vector<std::string> acl = owner.acl(dir);
  REQUIRE(acl.size() == 1);
  CHECK(acl[0].rfind("digest:locker:", 0) == 0);
  CHECK(acl[0].substr(acl[0].rfind(':') + 1) == "31");  // every permission, for the identity only
  CHECK(owner.acl(dir + "/" + owner.children(dir).at(0)) == acl);
  // The same identity shares the locks; another password is refused (exit 77 from the CLI).
  auto same = open_on("zookeeper://locker:s3cret@" + hosts, prefix);
  CHECK_FALSE(same->try_acquire("private"));
  auto wrong = open_on("zookeeper://locker:guess@" + hosts, prefix);
  CHECK_THROWS_AS(wrong->try_acquire("private"), PermissionError);
  CHECK_THROWS_AS(wrong->try_acquire("other-name"), PermissionError);  // nor a new name under the base
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  CHECK(same->try_acquire("private"));
}

// Issue 47, item 12: Curator's InterProcessMutex sorts dblock's rw nodes after its own (and the
// read-write lock sorts "lock-" nodes after its own), so on one path each recipe's holder held
// beside the other's, and dblock took its lock without a word.
TEST_CASE("zookeeper: an acquire beside nodes of the Curator recipe its layout does not pair with is refused, naming "
          "layout=",
          "[zookeeper][layout][foreign]") {
  const std::string prefix = unique_prefix();
  RawZk raw(context().url);
  const auto foreign_node = [&](const std::string& name, const std::string& lock) {
    const std::string made = raw.create(root_for(prefix) + "/" + name + "/_c_0f0e0d0c-0b0a-4908-8706-050403020100-" +
                                            lock,
                                        "10.1.2.3", ZOO_EPHEMERAL_SEQUENTIAL);
    REQUIRE_FALSE(made.empty());
    return made.substr(made.rfind('/') + 1);
  };
  SECTION("layout=rw beside an InterProcessMutex node") {
    auto manager = open_on(context().url, prefix);
    REQUIRE(manager->try_acquire("mixed"));  // makes the container; released at once
    const std::string mutex = foreign_node("mixed", "lock-");
    for (int i = 0; i < 2; ++i) {
      try {
        AcquireOptions shared;
        shared.mode = i == 0 ? LockMode::kExclusive : LockMode::kShared;
        manager->acquire("mixed", 2s, shared);
        FAIL("acquired beside an InterProcessMutex node");
      } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find("layout=curator-mutex") != std::string::npos);
        CHECK(std::string(e.what()).find(mutex) != std::string::npos);
      }
    }
    CHECK_THROWS_AS(manager->session_lock("mixed", 1s), UsageError);
    CHECK(raw.children(root_for(prefix) + "/mixed") == std::vector<std::string>{mutex});  // none of dblock's left
    // list agrees with run: the InterProcessMutex node holds (as Curator decides).
    std::optional<LeaseInfo> info = manager->inspect("mixed");
    REQUIRE(info);
    CHECK(info->holder == "foreign " + mutex + " (10.1.2.3)");
  }
  SECTION("layout=curator-mutex beside a read-write lock's node") {
    auto manager = open_on(with_params("layout=curator-mutex"), prefix);
    REQUIRE(manager->try_acquire("mixed"));
    const std::string writer = foreign_node("mixed", "__WRIT__");
    try {
      manager->try_acquire("mixed");
      FAIL("acquired beside an InterProcessReadWriteLock node");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find("layout=rw") != std::string::npos);
    }
    std::optional<LeaseInfo> info = manager->inspect("mixed");
    REQUIRE(info);
    CHECK(info->holder == "foreign " + writer + " (10.1.2.3)");
  }
  SECTION("a lease held before the other recipe's node came: list shows both holders") {
    auto manager = open_on(context().url, prefix, "worker-1");
    auto lease = manager->try_acquire("mixed");
    REQUIRE(lease);
    const std::string mutex = foreign_node("mixed", "lock-");  // InterProcessMutex takes it beside us
    std::optional<LeaseInfo> info = manager->inspect("mixed");
    REQUIRE(info);
    CHECK(info->holders == 2);
    CHECK(info->holder == "foreign " + mutex + " (10.1.2.3),worker-1");
    auto other = open_on(context().url, prefix);
    CHECK_THROWS_AS(other->try_acquire("mixed"), UsageError);
  }
}

}  // namespace dblock::testing
