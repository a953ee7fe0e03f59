// Redis: the cases only Redis has (the suite's context: redis_context.cc) (URLs, server settings
// that would break locks, ACLs, the key layout, forged grants, restarts without persistence).
// ctest starts the servers (scripts/servers/redis.sh) and passes their URL.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
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

std::string spare_url() { return "redis://127.0.0.1:" + env("DBLOCK_TEST_REDIS_SPARE_PORT"); }

// Redis Cluster's slot of `key` (CRC16/XMODEM of its hash tag, or of the whole key, mod 16384),
// computed here: a server without cluster mode answers CLUSTER KEYSLOT with an error.
int key_slot(const std::string& key) {
  std::string_view hashed = key;
  const std::size_t open = key.find('{');
  if (open != std::string::npos) {
    const std::size_t close = key.find('}', open + 1);
    if (close != std::string::npos && close > open + 1) hashed = std::string_view(key).substr(open + 1, close - open - 1);
  }
  std::uint16_t crc = 0;
  for (char c : hashed) {
    crc ^= static_cast<std::uint16_t>(static_cast<unsigned char>(c) << 8);
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 0x8000) ? static_cast<std::uint16_t>((crc << 1) ^ 0x1021) : static_cast<std::uint16_t>(crc << 1);
  }
  return crc & 16383;
}

// Every key on the main server whose name contains `part` (KEYS: a private test server).
std::vector<std::string> keys_containing(Raw& raw, const std::string& part) {
  std::vector<std::string> out;
  for (const std::string& key : raw.list({"KEYS", "*"})) {
    if (key.find(part) != std::string::npos) out.push_back(key);
  }
  return out;
}

// The Redis page's ACL line for dblock's Redis user (docs/backends/redis.md), split into words.
std::vector<std::string> readme_acl_line() {
  std::ifstream readme(DBLOCK_REDIS_DOC_PATH);
  REQUIRE(readme.good());
  for (std::string line; std::getline(readme, line);) {
    const std::size_t at = line.find("ACL SETUSER dblock ");
    if (at == std::string::npos) continue;
    std::istringstream words(line.substr(at));
    std::vector<std::string> out;
    for (std::string w; words >> w;) out.push_back(w);
    return out;
  }
  FAIL("docs/backends/redis.md has no line with 'ACL SETUSER dblock '");
  return {};
}

// Creates the ACL user `user` with the documented rules but those in `without`; returns its URL on the
// main server (password from the rule ">...").
std::string acl_user(Raw& raw, const std::string& user, const std::vector<std::string>& without = {},
                     const std::string& path = "") {
  const std::vector<std::string> line = readme_acl_line();
  std::vector<std::string> args = {"ACL", "SETUSER", user};
  std::string password;
  for (std::size_t i = 3; i < line.size(); ++i) {
    if (std::find(without.begin(), without.end(), line[i]) != without.end()) continue;
    if (line[i].front() == '>') password = line[i].substr(1);
    args.push_back(line[i]);
  }
  raw.text({"ACL", "DELUSER", user});
  REQUIRE(raw.text(args) == "OK");
  const std::string at = context().url.substr(std::string("redis://").size());
  return "redis://" + user + ":" + password + "@" + at + path;
}

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
  // Opening checks the ACL with a script: one that may not run scripts is refused there, by name.
  try {
    open_on("redis://" + user + ":pw-ok@" + at, unique_prefix());
    FAIL("opened");
  } catch (const PermissionError& e) {
    CHECK(std::string(e.what()).find("'evalsha'") != std::string::npos);
  }
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
  auto other = open_manager({}, prefix);  // a second reader: a thread holds a name once
  auto r1 = manager->acquire_all({"multi-s1", "multi-s2"}, 0ms, shared);
  auto r2 = other->acquire_all({"multi-s1", "multi-s2"}, 0ms, shared);
  CHECK(r1);
  CHECK(r2);
  CHECK_FALSE(open_manager({}, prefix)->acquire_all({"multi-s2", "multi-x"}, 0ms));
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

TEST_CASE("redis: a release hands the lease to the waiter through its grant event, not its next poll",
          "[redis][notify]") {
  const std::string prefix = unique_prefix();
  auto holder_side = open_manager({}, prefix);
  ManagerOptions slow;
  slow.min_poll = 10s;  // a waiter that polls would take 10 s
  slow.max_poll = 10s;
  auto waiter_side = open_manager(slow, prefix);
  auto held = holder_side->try_acquire("handed");
  REQUIRE(held);
  std::optional<Lease> got;
  SteadyClock::time_point got_at;
  std::thread waiter([&] {
    got = waiter_side->acquire("handed", 30s);
    got_at = SteadyClock::now();
  });
  Raw raw(context().url);
  const auto until = SteadyClock::now() + 10s;
  while (raw.list({"ZRANGE", "{" + prefix + "handed}:q", "0", "-1"}).empty() && SteadyClock::now() < until) {
    std::this_thread::sleep_for(5ms);
  }
  const auto released_at = SteadyClock::now();
  REQUIRE(held->release() == ReleaseResult::kReleased);
  waiter.join();
  REQUIRE(got);
  CHECK(got_at - released_at < 2s);  // the grant event and its confirmation, far below the poll
  CHECK(got->fence() > held->fence());
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
  std::int64_t received = 0;  // PUBLISH answers how many subscribers got it: the waiter's did
  for (int i = 0; i < 20 && !done; ++i) {
    received += std::stoll(raw.text({"PUBLISH", "{" + prefix + "}:release", payload}));
    std::this_thread::sleep_for(50ms);
  }
  waiter.join();
  CHECK(received > 0);
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
  LostWatch watch;
  AcquireOptions o;
  o.on_lost = watch.callback();
  auto lease = manager->try_acquire("volatile", o);
  REQUIRE(lease);
  const std::int64_t fence = lease->fence();
  context().restart();  // the test servers keep no AOF and no snapshot
  // Learned from the next renewal the restarted server refuses, not from safe-until running out.
  const auto safe_until = lease->safe_until();
  const auto lost = watch.wait(std::chrono::duration_cast<std::chrono::milliseconds>(safe_until - SteadyClock::now()) + 1s);
  REQUIRE(lost);
  INFO(lost->reason);
  CHECK(lost->reason.find("refused") != std::string::npos);
  CHECK(SteadyClock::now() < safe_until + 1s);
  CHECK(lease->lost());
  auto other = open_manager({}, prefix);
  auto next = other->try_acquire("volatile");
  REQUIRE(next);
  CHECK(next->fence() > fence);  // the counter was lost too: floored at the server's microseconds
}

namespace {

// `text` contains `part`, ignoring case.
bool contains_nocase(std::string text, std::string part) {
  auto lower = [](std::string t) {
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return t;
  };
  return lower(std::move(text)).find(lower(std::move(part))) != std::string::npos;
}

// Waits up to `bound` for `ready()`, polling every 5 ms; returns its last answer.
template <typename Ready>
bool await(Ready ready, std::chrono::milliseconds bound = 5s) {
  const auto until = SteadyClock::now() + bound;
  while (!ready()) {
    if (SteadyClock::now() >= until) return false;
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Sets a server option for a scope and puts it back.
struct ConfigFor {
  ConfigFor(Raw& raw, std::string name, const std::string& value, std::string back)
      : raw_(raw), name_(std::move(name)), back_(std::move(back)) {
    REQUIRE(raw_.text({"CONFIG", "SET", name_, value}) == "OK");
  }
  ~ConfigFor() { raw_.text({"CONFIG", "SET", name_, back_}); }
  Raw& raw_;
  std::string name_, back_;
};

// Microseconds on the main server's clock.
std::int64_t server_now_us(Raw& raw) {
  const std::vector<std::string> t = raw.list({"TIME"});
  REQUIRE(t.size() == 2);
  return std::stoll(t[0]) * 1'000'000 + std::stoll(t[1]);
}

}  // namespace

TEST_CASE("redis: a name with a hash tag keeps its companions in its slot; a '}' outside a tag is refused",
          "[redis][keys]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  Raw raw(context().url);
  const std::string tag = prefix + "eu";  // also the lease key of the plain name "eu"
  const std::string tagged = "orders{" + tag + "}/7";
  const std::string sibling = "invoices{" + tag + "}/7";
  auto held = a->try_acquire(tagged);
  REQUIRE(held);
  std::optional<Lease> next;
  std::thread waiter([&] { next = b->acquire(tagged, 5s); });
  // The waiter in line: lease, fence, line and its details exist now, all in the lease's slot.
  CHECK(await([&] { return keys_containing(raw, tagged).size() >= 4; }));
  const int slot = key_slot(prefix + tagged);
  CHECK(slot == key_slot(tag));
  for (const std::string& key : keys_containing(raw, tagged)) {
    INFO(key);
    CHECK(key_slot(key) == slot);
  }
  REQUIRE(held->release() == ReleaseResult::kReleased);
  waiter.join();
  REQUIRE(next);
  CHECK(next->fence() > held->fence());
  const std::vector<std::string> after = keys_containing(raw, tagged);
  CHECK(std::any_of(after.begin(), after.end(), [](const std::string& k) { return k.find(":latch:") != std::string::npos; }));
  for (const std::string& key : after) CHECK(key_slot(key) == slot);
  // Names sharing the tag, and the name whose key is the tag, keep counters of their own.
  auto plain = a->try_acquire("eu");
  auto other = a->try_acquire(sibling);
  REQUIRE((plain && other));
  CHECK(raw.text({"GET", "{" + tag + "}:fence"}) == std::to_string(plain->fence()));
  CHECK(plain->fence() != next->fence());
  CHECK(other->fence() != next->fence());
  CHECK(raw.text({"HGET", prefix + tagged, "fence"}) == std::to_string(next->fence()));
  // '{' alone changes nothing: the key has no tag, and its companions are dblock's usual ones.
  auto open_only = a->try_acquire("half{open");
  REQUIRE(open_only);
  CHECK(key_slot("{" + prefix + "half{open}:fence") == key_slot(prefix + "half{open"));
  CHECK(raw.text({"GET", "{" + prefix + "half{open}:fence"}) == std::to_string(open_only->fence()));
  for (const std::string refused : {"a}b", "x{}y", "a}b{"}) {
    INFO(refused);
    CHECK_THROWS_AS(a->try_acquire(refused), UsageError);
  }
}

TEST_CASE("redis: a prefix must end in a separator; the empty prefix is allowed", "[redis][input]") {
  const std::string url = context().url;
  for (const std::string bad : {"?prefix=app_a", "?prefix=app", "?prefix=a:b"}) {
    INFO(bad);
    try {
      dblock::open(url + bad);
      FAIL("opened");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find("separator") != std::string::npos);
    }
  }
  ManagerOptions bare_table;
  bare_table.table_prefix = "myapp";  // the prefix defaults to it
  CHECK_THROWS_AS(dblock::open(url, bare_table), UsageError);
  for (const std::string good : {"?prefix=", "?prefix=app_a:", "?prefix=app-", "?prefix=a.b.", "?prefix=x/"}) {
    INFO(good);
    CHECK(dblock::open(url + good));
  }
}

TEST_CASE("redis: a hand-off grants the waiter its whole TTL on the server's clock", "[redis][notify]") {
  const std::string prefix = unique_prefix();
  auto holder_side = open_manager({}, prefix);
  auto waiter_side = open_manager({}, prefix);
  auto held = holder_side->try_acquire("handoff");
  REQUIRE(held);
  AcquireOptions o;
  o.ttl = 20s;  // its line entry lives about a second (the engine's queue hold): far less
  std::optional<Lease> got;
  std::thread waiter([&] { got = waiter_side->acquire("handoff", 10s, o); });
  Raw raw(context().url);
  CHECK(await([&] { return !raw.list({"ZRANGE", "{" + prefix + "handoff}:q", "0", "-1"}).empty(); }));
  REQUIRE(held->release() == ReleaseResult::kReleased);  // grants it to the waiter in line
  waiter.join();
  REQUIRE(got);
  const std::int64_t acq = std::stoll(raw.text({"HGET", prefix + "handoff", "acq"}));
  const std::int64_t exp = std::stoll(raw.text({"HGET", prefix + "handoff", "exp"}));
  CHECK(exp - acq >= 20'000'000);
  CHECK(got->safe_until() - SteadyClock::now() > 15s);  // the confirmation read its time left
  CHECK_FALSE(got->lost());
}

TEST_CASE("redis: a malformed lease or audit record is listed as unreadable, refused by the scripts, removed by "
          "force_release",
          "[redis][keys]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  Raw raw(context().url);
  auto good = manager->try_acquire("good");
  REQUIRE(good);
  const std::string future = std::to_string(server_now_us(raw) + 600'000'000);
  // An application's hash that happens to have mode=x; a lease without its expiry; a fence past
  // 2^53 - 1; a reader's field that is no reader.
  REQUIRE(raw.text({"HSET", prefix + "app", "mode", "x", "colour", "blue"}) == "2");
  REQUIRE(raw.text({"HSET", prefix + "noexp", "mode", "x", "owner", "o", "holder", "h", "fence", "3", "acq", "1",
                    "ren", "0"}) == "6");
  REQUIRE(raw.text({"HSET", prefix + "bignum", "mode", "x", "owner", "o", "holder", "h", "fence",
                    "99999999999999999999", "acq", "1", "exp", future, "ren", "0"}) == "7");
  REQUIRE(raw.text({"HSET", prefix + "readers", "mode", "s", "fence", "4", "r:abc", "garbage"}) == "3");
  const std::string audit = "{" + prefix + "}:audit";
  REQUIRE_FALSE(raw.text({"XADD", audit, "*", "name", "good", "at", "99999999999999999999999", "by", "x", "evicted", "y",
                          "mode", "x", "old", "1", "new", "2"}).empty());
  REQUIRE_FALSE(raw.text({"XADD", audit, "*", "name", "other", "at", "1", "by", "x", "evicted", "y", "mode", "x", "old",
                          "abc", "new", "2"}).empty());
  const std::vector<std::string> bad = {"app", "noexp", "bignum", "readers"};

  const std::vector<LeaseInfo> all = manager->list();
  REQUIRE(all.size() == 5);
  for (const LeaseInfo& info : all) {
    INFO(info.name << ": " << info.holder);
    if (info.name == "good") {
      CHECK(info.fence == good->fence());
    } else {
      CHECK(std::find(bad.begin(), bad.end(), info.name) != bad.end());
      CHECK(info.holder.rfind("(unreadable lease: ", 0) == 0);
    }
  }
  const auto noexp = manager->inspect("noexp");
  REQUIRE(noexp);
  CHECK(noexp->holder.find("'exp'") != std::string::npos);
  const std::vector<ForceReleaseRecord> records = manager->force_release_history();
  REQUIRE(records.size() == 2);
  CHECK(records[0].name == "other");
  CHECK(records[0].evicted.find("'old'") != std::string::npos);
  CHECK(records[1].name == "good");
  CHECK(records[1].evicted.find("'at'") != std::string::npos);

  for (const std::string& name : bad) {
    INFO(name);
    try {
      manager->try_acquire(name);
      FAIL("acquired");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find("cannot be read") != std::string::npos);
      CHECK(std::string(e.what()).find("user_script") == std::string::npos);
    }
  }
  // A lease of ours whose hash was spoiled: renew and release refuse it too.
  ServiceDriver service(*manager);
  const OwnerSecret owner = OwnerSecret::generate();
  REQUIRE(service.attempt("spoiled", LockMode::kExclusive, owner, 30s).acquired);
  REQUIRE(raw.text({"HDEL", prefix + "spoiled", "fence"}) == "1");
  CHECK_THROWS_AS(service.renew("spoiled", LockMode::kExclusive, owner, 30s), UsageError);
  CHECK_THROWS_AS(service.release("spoiled", LockMode::kExclusive, owner), UsageError);
  CHECK(raw.text({"HGET", prefix + "spoiled", "owner"}) == sha1_hex(owner));  // nothing changed

  for (const std::string name : {"app", "noexp", "bignum", "readers", "spoiled"}) {
    INFO(name);
    CHECK(manager->force_release(name));
    CHECK(raw.text({"EXISTS", prefix + name}) == "0");
    const auto history = manager->force_release_history(std::string(name));
    REQUIRE_FALSE(history.empty());
    CHECK(history[0].evicted.rfind("(an unreadable lease: ", 0) == 0);
  }
  auto again = manager->try_acquire("noexp");
  CHECK(again);
  CHECK(manager->list().size() == 2);
}

TEST_CASE("redis: fences are exact up to 2^53 - 1, and a counter at or past it is refused, never repeated",
          "[redis][keys]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  Raw raw(context().url);
  const std::string counter = "{" + prefix + "edge}:fence";
  REQUIRE(raw.text({"SET", counter, "9007199254740989"}) == "OK");
  for (const std::int64_t expected : {std::int64_t{9007199254740990}, std::int64_t{9007199254740991}}) {
    auto lease = manager->try_acquire("edge");
    REQUIRE(lease);
    CHECK(lease->fence() == expected);
    CHECK(raw.text({"HGET", prefix + "edge", "fence"}) == std::to_string(expected));
    CHECK(lease->release() == ReleaseResult::kReleased);
  }
  for (const std::string value : {"9007199254740991", "4611686018427387000", "9223372036854775807",
                                  "18446744073709551616", "-5", "soon"}) {
    INFO(value);
    REQUIRE(raw.text({"SET", counter, value}) == "OK");
    for (int i = 0; i < 3; ++i) {
      try {
        manager->try_acquire("edge");
        FAIL("acquired");
      } catch (const UsageError& e) {
        CHECK(std::string(e.what()).find(counter) != std::string::npos);
        CHECK(std::string(e.what()).find("9007199254740991") != std::string::npos);
      }
    }
    CHECK(raw.text({"GET", counter}) == value);
    CHECK(raw.text({"EXISTS", prefix + "edge"}) == "0");
  }
  // A waiter draws its ticket from the same counter: joining the line is refused the same way.
  REQUIRE(raw.text({"SET", counter, "9007199254740000"}) == "OK");
  auto other = open_manager({}, prefix);
  auto held = other->try_acquire("edge");
  REQUIRE(held);
  REQUIRE(raw.text({"SET", counter, "9007199254740991"}) == "OK");
  try {
    manager->acquire("edge", 200ms);
    FAIL("acquired");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find(counter) != std::string::npos);
  }
  CHECK(raw.text({"EXISTS", "{" + prefix + "edge}:q"}) == "0");
}

TEST_CASE("redis: force-releasing another client's string records its length, never its value", "[redis][keys]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  Raw raw(context().url);
  REQUIRE(raw.text({"SET", prefix + "foreign", "redis-py-token-0123456789", "PX", "30000"}) == "OK");
  REQUIRE(manager->force_release("foreign"));
  const auto history = manager->force_release_history("foreign");
  REQUIRE(history.size() == 1);
  CHECK(history[0].evicted.find("redis-py-token") == std::string::npos);
  CHECK(history[0].evicted.find("25 bytes") != std::string::npos);
  const std::vector<std::string> entries = raw.list({"XREVRANGE", "{" + prefix + "}:audit", "+", "-"});
  CHECK(entries.size() == 1);
}

TEST_CASE("redis: the documented ACL user runs every call; without one of its rules opening names what is missing",
          "[redis][acl]") {
  Raw raw(context().url);
  const std::string user = "dblock_readme_" + std::to_string(::getpid());
  const std::string url = acl_user(raw, user);
  std::mutex mutex;
  std::vector<std::string> background;
  ManagerOptions options;  // the documented line is for the default prefix, dblock_
  options.default_ttl = 600ms;
  options.on_background_error = [&](const Error& e) {
    std::lock_guard<std::mutex> lock(mutex);
    background.push_back(e.what());
  };
  const std::string n = "readme-acl-" + std::to_string(::getpid()) + "-";
  {
    auto a = dblock::open(url, options);
    auto b = dblock::open(url, options);
    auto lease = a->try_acquire(n + "x");
    REQUIRE(lease);
    // Renewed through the ACL (a 600 ms TTL renews every 200 ms).
    CHECK(await([&] {
      const auto info = a->inspect(n + "x");
      return info && info->renewals >= 2;
    }));
    // Handed to a waiter in line by the release's grant, which it confirms.
    std::optional<Lease> next;
    std::thread waiter([&] { next = b->acquire(n + "x", 5s); });
    CHECK(await([&] { return !raw.list({"ZRANGE", "{dblock_" + n + "x}:q", "0", "-1"}).empty(); }));
    CHECK(lease->release() == ReleaseResult::kReleased);
    waiter.join();
    REQUIRE(next);
    CHECK(next->fence() > lease->fence());
    AcquireOptions shared;
    shared.mode = LockMode::kShared;
    auto r1 = a->try_acquire(n + "s", shared);
    auto r2 = b->try_acquire(n + "s", shared);
    CHECK((r1 && r2));
    AcquireOptions permit;
    permit.permits = 1;
    auto p1 = a->try_acquire(n + "p", permit);
    CHECK(p1);
    CHECK_FALSE(b->try_acquire(n + "p", permit));
    auto both = a->acquire_all({n + "m1", n + "m2"}, 1s);
    CHECK((both && both->size() == 2));
    AcquireOptions job;
    job.hold_at_least = 700ms;
    auto windowed = a->try_acquire(n + "job", job);
    REQUIRE(windowed);
    CHECK(windowed->release() == ReleaseResult::kReleased);
    auto tagged = a->try_acquire(n + "{tag}/1");  // companions {tag}:...:dblock_... (the third key pattern)
    CHECK(tagged);
    const std::vector<LeaseInfo> listed = a->list();
    CHECK(std::count_if(listed.begin(), listed.end(), [&](const LeaseInfo& i) { return i.name.rfind(n, 0) == 0; }) >= 5);
    CHECK(a->force_release(n + "x"));
    const auto history = a->force_release_history(n + "x");
    REQUIRE_FALSE(history.empty());
    CHECK(history[0].old_fence == next->fence());
    CHECK(a->try_acquire(n + "x"));  // the name is free again
  }
  {
    std::lock_guard<std::mutex> lock(mutex);
    CHECK(background == std::vector<std::string>{});
  }

  // Each rule taken away: opening names the command, the key or the channel it lacks.
  for (const std::string& rule : readme_acl_line()) {
    if (rule.front() != '+' && rule.front() != '~' && rule.front() != '&') continue;
    const std::string missing = rule == "~{*}:*:dblock_*" ? "" : rule.front() == '+' ? rule.substr(1)
                                : rule.front() == '&'                                  ? "{dblock_}:release"
                                : rule == "~dblock_*"                                  ? "dblock_x"
                                                                                       : "{dblock_x}";
    INFO(rule);
    const std::string without = acl_user(raw, user, {rule}, rule == "+select" ? "/1" : "");
    if (missing.empty()) {
      // Checked where it is used: only names with a hash tag have such keys.
      auto manager = dblock::open(without);
      CHECK(manager->try_acquire(n + "plain"));
      CHECK_THROWS_AS(manager->try_acquire(n + "{tag}/2"), PermissionError);
      continue;
    }
    try {
      dblock::open(without);
      FAIL("opened without " << rule);
    } catch (const PermissionError& e) {
      CHECK(contains_nocase(e.what(), missing));
    }
  }
  raw.text({"ACL", "DELUSER", user});
  Raw cleanup(context().url);
  for (const std::string& key : keys_containing(cleanup, n)) cleanup.text({"DEL", key});
}

TEST_CASE("redis: an evicting maxmemory-policy set after open loses held leases and refuses attempts",
          "[redis][input]") {
  Raw spare(spare_url());
  REQUIRE(spare.text({"CONFIG", "SET", "maxmemory-policy", "noeviction"}) == "OK");
  std::mutex mutex;
  std::vector<std::string> background;
  ManagerOptions options;
  options.table_prefix = unique_prefix();
  options.default_ttl = 900ms;
  options.on_background_error = [&](const Error& e) {
    std::lock_guard<std::mutex> lock(mutex);
    background.push_back(e.what());
  };
  auto manager = dblock::open(spare_url(), options);
  std::atomic<bool> lost{false};
  AcquireOptions o;
  o.on_lost = [&](const LostLease&) { lost = true; };
  auto lease = manager->try_acquire("evictable", o);
  REQUIRE(lease);
  std::optional<ConfigFor> policy;
  policy.emplace(spare, "maxmemory-policy", "allkeys-lru", "noeviction");
  const auto switched = SteadyClock::now();
  CHECK(await([&] { return lost.load(); }, 5s));
  CHECK(SteadyClock::now() - switched < 3s);  // a second's check, then the next renewal (every 300 ms)
  CHECK(lease->lost());
  {
    std::lock_guard<std::mutex> lock(mutex);
    CHECK(std::any_of(background.begin(), background.end(),
                      [](const std::string& e) { return e.find("allkeys-lru") != std::string::npos; }));
  }
  try {
    manager->try_acquire("other");
    FAIL("acquired");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("allkeys-lru") != std::string::npos);
  }
  policy.reset();  // noeviction again: attempts work again after the next check
  CHECK(await([&] {
    try {
      return manager->try_acquire("other").has_value();
    } catch (const UsageError&) {
      return false;
    }
  }));
}

TEST_CASE("redis: out of memory under noeviction is ridden by a waiting acquire", "[redis][faults]") {
  Raw spare(spare_url());
  ManagerOptions options;
  options.table_prefix = unique_prefix();
  auto manager = dblock::open(spare_url(), options);
  auto oom_count = [&] {
    for (std::istringstream lines(spare.text({"INFO", "errorstats"})); lines;) {
      std::string line;
      std::getline(lines, line);
      if (line.rfind("errorstat_OOM:count=", 0) == 0) return std::stoll(line.substr(20));
    }
    return 0LL;
  };
  {
    ConfigFor full(spare, "maxmemory", "1", "0");
    const auto start = SteadyClock::now();
    try {
      manager->acquire("oom", 1500ms);
      FAIL("acquired");
    } catch (const ConnectionError& e) {
      CHECK(e.retryable());
      CHECK(std::string(e.what()).find("OOM") != std::string::npos);
    }
    CHECK(SteadyClock::now() - start >= 1400ms);  // rode the wait, not thrown at once
    CHECK_THROWS_AS(manager->try_acquire("oom"), ConnectionError);  // a single try reports it
    // A wait that began out of memory acquires once memory is back.
    const long long before = oom_count();
    std::optional<Lease> got;
    std::thread waiter([&] { got = manager->acquire("oom", 10s); });
    CHECK(await([&] { return oom_count() > before; }));
    spare.text({"CONFIG", "SET", "maxmemory", "0"});
    waiter.join();
    CHECK(got);
  }
}

}  // namespace dblock::testing
