// Redis: the conformance suite's context, and the cases only Redis has (URLs, server settings
// that would break locks, ACLs, the key layout, forged grants, restarts without persistence).
// ctest starts the servers (scripts/servers/redis.sh) and passes their URL.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "context.h"
#include "environment.h"
#include "raw_redis.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

namespace {

// What the service keeps for `name` in "leases" (the hash's owner), "readers" (a reader's field)
// or "waiters" (the line's first member).
std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name) {
  Raw raw(context().url);
  const std::string key = prefix + name;
  if (table == "leases") return raw.text({"HGET", key, "owner"});
  if (table == "readers") {
    for (const std::string& field : raw.list({"HKEYS", key})) {
      if (field.rfind("r:", 0) == 0) return field.substr(2);
    }
    return "";
  }
  const auto first = raw.list({"ZRANGE", "{" + key + "}:q", "0", "0"});
  return first.empty() ? "" : first[0];
}

std::string spare_url() { return "redis://127.0.0.1:" + env("DBLOCK_TEST_REDIS_SPARE_PORT"); }

}  // namespace

const Context& context() {
  static Context ctx = [] {
    // Restarts touch the main server only (the spare is the cases' own).
    const std::string port =
        std::to_string(parse_url(required_server_url("DBLOCK_TEST_REDIS_URL", "DBLOCK_TEST_SKIP_REDIS")).hosts.at(0).port);
    Context c = server_context("redis", "DBLOCK_TEST_REDIS_URL", "DBLOCK_TEST_SKIP_REDIS", "DBLOCK_TEST_REDIS_SCRIPT",
                               "DBLOCK_TEST_REDIS_STATE", port);
    c.accounts = false;
    c.stored_owner = stored_owner;
    c.digest = sha1_hex;
    return c;
  }();
  return ctx;
}

namespace {

std::unique_ptr<LockManager> open_on(const std::string& url, const std::string& prefix) {
  ManagerOptions options;
  options.table_prefix = prefix;
  return dblock::open(url, options);
}

}  // namespace

TEST_CASE("redis: bad URLs are usage errors naming the part, never the password", "[redis][input]") {
  const std::string url = context().url;
  for (const std::string bad : {"redis://127.0.0.1:1,127.0.0.2:2", "redis://h:6379/zero", "redis://h:6379/70000",
                                "redis://h/0?prefix=a{b", "redis://h/0?prefix=x&prefix=y", "redis://h/0?nope=1",
                                "redis://h/0?connect_timeout=soon", "redis://h/0?listen=maybe"}) {
    INFO(bad);
    CHECK_THROWS_AS(dblock::open(bad), UsageError);
  }
  try {
    dblock::open("redis://user:hunter2@127.0.0.1:1/0?bogus=1");
    FAIL("opened");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("'bogus'") != std::string::npos);
    CHECK(std::string(e.what()).find("hunter2") == std::string::npos);
  }
  CHECK_THROWS_AS(dblock::open("redis://127.0.0.1:1/0"), ConnectionError);  // nothing listens there
  try {
    dblock::open(url + "?prefix=" + unique_prefix() + "&connect_timeout=1", {});
  } catch (const Error& e) {
    FAIL(e.what());
  }
}

TEST_CASE("redis: a wrong password is a connection error; an ACL that forbids scripts a permission error",
          "[redis][input]") {
  Raw raw(context().url);
  const std::string user = "dblock_acl_" + std::to_string(::getpid());
  REQUIRE(raw.text({"ACL", "SETUSER", user, "on", ">pw-ok", "~*", "&*", "+@all", "-evalsha", "-eval"}) == "OK");
  const std::string at = context().url.substr(std::string("redis://").size());
  CHECK_THROWS_AS(dblock::open("redis://" + user + ":wrong@" + at), ConnectionError);
  // The scripts are loaded at open (SCRIPT LOAD); running one is what the ACL forbids.
  auto forbidden = open_on("redis://" + user + ":pw-ok@" + at, unique_prefix());
  CHECK_THROWS_AS(forbidden->try_acquire("acl"), PermissionError);
  REQUIRE(raw.text({"ACL", "SETUSER", user, "+evalsha", "+eval"}) == "OK");
  auto manager = open_on("redis://" + user + ":pw-ok@" + at, unique_prefix());
  CHECK(manager->try_acquire("acl"));
  raw.text({"ACL", "DELUSER", user});
}

TEST_CASE("redis: an evicting maxmemory-policy or a replica is refused at open", "[redis][input]") {
  Raw spare(spare_url());
  REQUIRE(spare.text({"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}) == "OK");
  try {
    dblock::open(spare_url());
    FAIL("opened");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("allkeys-lru") != std::string::npos);
  }
  REQUIRE(spare.text({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == "OK");
  const Url main = parse_url(context().url);
  REQUIRE(spare.text({"REPLICAOF", main.hosts[0].host, std::to_string(main.hosts[0].port)}) == "OK");
  try {
    dblock::open(spare_url());
    FAIL("opened");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("replica") != std::string::npos);
  }
  REQUIRE(spare.text({"REPLICAOF", "NO", "ONE"}) == "OK");
  CHECK(dblock::open(spare_url()));
}

TEST_CASE("redis: the lease is the key <prefix>NAME; its companions share its slot", "[redis][keys]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lease = manager->try_acquire("layout");
  REQUIRE(lease);
  Raw raw(context().url);
  CHECK(raw.text({"TYPE", prefix + "layout"}) == "hash");
  CHECK(raw.text({"HGET", prefix + "layout", "fence"}) == std::to_string(lease->fence()));
  CHECK(raw.text({"GET", "{" + prefix + "layout}:fence"}) == std::to_string(lease->fence()));
  CHECK(std::stoll(raw.text({"PTTL", prefix + "layout"})) > 0);  // expires on the server by itself
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  CHECK(raw.text({"EXISTS", prefix + "layout"}) == "0");
  CHECK(raw.text({"EXISTS", "{" + prefix + "layout}:fence"}) == "1");  // never deleted
  // With no prefix a name beginning with '{' could be another name's companion key.
  auto bare = dblock::open(context().url + "?prefix=");
  CHECK_THROWS_AS(bare->try_acquire("{" + prefix + "layout}:fence"), UsageError);
}

TEST_CASE("redis: acquire_all is one script: a name held elsewhere leaves the others untouched", "[redis][multi]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  Raw raw(context().url);
  // Another client's single-key lock on one of the names (redis-py's SET NX PX).
  REQUIRE(raw.text({"SET", prefix + "multi-b", "token", "NX", "PX", "30000"}) == "OK");
  CHECK_FALSE(manager->acquire_all({"multi-c", "multi-b", "multi-a"}, 0ms));
  // Taken one by one, multi-a would have had a fence drawn; in one script nothing was touched.
  CHECK(raw.text({"EXISTS", "{" + prefix + "multi-a}:fence"}) == "0");
  CHECK(raw.text({"EXISTS", prefix + "multi-a"}) == "0");
  CHECK(raw.text({"GET", prefix + "multi-b"}) == "token");
  REQUIRE(raw.text({"DEL", prefix + "multi-b"}) == "1");
  auto all = manager->acquire_all({"multi-c", "multi-b", "multi-a"}, 0ms);
  REQUIRE(all);
  REQUIRE(all->size() == 3);
  for (const Lease& lease : *all) {
    INFO(lease.name());
    CHECK(raw.text({"HGET", prefix + lease.name(), "fence"}) == std::to_string(lease.fence()));
    CHECK(std::stoll(raw.text({"PTTL", prefix + lease.name()})) > 0);
  }
  CHECK((*all)[0].name() == "multi-a");
  // Shared leases at once, beside each other.
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  auto r1 = manager->acquire_all({"multi-s1", "multi-s2"}, 0ms, shared);
  auto r2 = manager->acquire_all({"multi-s1", "multi-s2"}, 0ms, shared);
  CHECK(r1);
  CHECK(r2);
  CHECK_FALSE(manager->acquire_all({"multi-s2", "multi-x"}, 0ms));
  CHECK(raw.text({"EXISTS", "{" + prefix + "multi-x}:fence"}) == "0");
}

TEST_CASE("redis: a release repeated after a lost reply reports what the first one did", "[redis][keys]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  ServiceDriver service(*manager);
  const OwnerSecret owner = OwnerSecret::generate();
  REQUIRE(service.attempt("latched", LockMode::kExclusive, owner, 30s).acquired);
  CHECK(service.release("latched", LockMode::kExclusive, owner));
  // The retry of a release whose reply was lost: the lease is gone, the latch says it was ours.
  CHECK(service.release("latched", LockMode::kExclusive, owner));
  Raw raw(context().url);
  CHECK(std::stoll(raw.text({"PTTL", "{" + prefix + "latched}:latch:" + sha1_hex(owner)})) > 0);
  const OwnerSecret stranger = OwnerSecret::generate();
  CHECK_FALSE(service.release("latched", LockMode::kExclusive, stranger));
}

TEST_CASE("redis: a key that is no lock is reported, never overwritten", "[redis][keys]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  Raw raw(context().url);
  REQUIRE(raw.text({"RPUSH", prefix + "queue", "job"}) == "1");
  CHECK_THROWS_AS(manager->try_acquire("queue"), UsageError);
  CHECK_THROWS_AS(manager->force_release("queue"), UsageError);
  CHECK(raw.text({"LLEN", prefix + "queue"}) == "1");
}

TEST_CASE("redis: a forged PUBLISH of a grant never makes a waiter the holder", "[redis][notify]") {
  const std::string prefix = unique_prefix();
  auto holder_side = open_manager({}, prefix);
  auto waiter_side = open_manager({}, prefix);
  auto held = holder_side->try_acquire("forged");
  REQUIRE(held);
  std::atomic<bool> done{false};
  std::optional<Lease> got;
  std::thread waiter([&] {
    got = waiter_side->acquire("forged", 2s);
    done = true;
  });
  Raw raw(context().url);
  const std::string queue = "{" + prefix + "forged}:q";
  std::vector<std::string> line;
  const auto until = SteadyClock::now() + 5s;
  while (line.empty() && SteadyClock::now() < until) {
    line = raw.list({"ZRANGE", queue, "0", "0", "WITHSCORES"});
    if (line.empty()) std::this_thread::sleep_for(5ms);
  }
  REQUIRE(line.size() == 2);
  // What a real grant to that waiter would say (scripts.h, hand_on), sent by a bystander.
  const std::string payload = std::string("forged") + '\x1f' + line[1] + '\x1f' + "999" + '\x1f' + "30000000" +
                              '\x1f' + "99999999999999999";
  for (int i = 0; i < 20 && !done; ++i) {
    raw.text({"PUBLISH", "{" + prefix + "}:release", payload});
    std::this_thread::sleep_for(50ms);
  }
  waiter.join();
  CHECK_FALSE(got);  // the forged grant was confirmed against the hash and found false
  CHECK_FALSE(held->lost());
  CHECK(raw.text({"HGET", prefix + "forged", "fence"}) == std::to_string(held->fence()));
}

TEST_CASE("redis: a restart without persistence loses every lease; holders learn it, fences still grow",
          "[redis][faults]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  options.default_ttl = 2s;
  auto manager = open_manager(options, prefix);
  std::atomic<bool> lost{false};
  AcquireOptions o;
  o.on_lost = [&](const LostLease&) { lost = true; };
  auto lease = manager->try_acquire("volatile", o);
  REQUIRE(lease);
  const std::int64_t fence = lease->fence();
  context().restart();  // the test servers keep no AOF and no snapshot
  const auto until = SteadyClock::now() + 10s;
  while (!lost && SteadyClock::now() < until) std::this_thread::sleep_for(10ms);
  CHECK(lost);
  CHECK(lease->lost());
  auto other = open_manager({}, prefix);
  auto next = other->try_acquire("volatile");
  REQUIRE(next);
  CHECK(next->fence() > fence);  // the counter was lost too: floored at the server's microseconds
}

}  // namespace dblock::testing
