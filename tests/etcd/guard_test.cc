// etcd's guard (dblock/etcd/guard.h): the application's writes in the same etcd, committed only
// while the lease's key is the one made at its fence; checked with etcdctl.
#include <catch2/catch.hpp>

#include <stdlib.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "context.h"
#include "dblock/etcd/guard.h"
#include "etcd_support.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

// The value of `key` ("" when it does not exist).
std::string value_of(const std::string& key) {
  const std::vector<std::string> lines = etcdctl("get '" + key + "' --print-value-only");
  return lines.empty() ? "" : lines.front();
}

}  // namespace

TEST_CASE("etcd guard: writes commit while the lease is held, and none once it was evicted or taken over",
          "[etcd][guard]") {
  const std::string prefix = unique_prefix();
  const std::string app = "app/" + prefix;  // the application's keys, outside the locks' prefix
  auto holder = open_on(context().url, prefix);
  auto other = open_on(context().url, prefix);
  std::optional<Lease> lease = holder->try_acquire("orders", ttl(10s));
  REQUIRE(lease);

  const std::int64_t revision =
      etcd::commit_guarded(*holder, *lease, {etcd::put(app + "next", "42"), etcd::put(app + "gone", "x")});
  CHECK(revision > lease->fence());
  CHECK(value_of(app + "next") == "42");
  etcd::commit_guarded(*holder, *lease, {etcd::erase(app + "gone"), etcd::put(app + "next", "43")});
  CHECK(value_of(app + "gone").empty());
  CHECK(value_of(app + "next") == "43");

  // Evicted, then taken over: the old holder's writes land nowhere, whatever its local flag says.
  REQUIRE(other->force_release("orders"));
  std::optional<Lease> taken = other->try_acquire("orders", ttl(10s));
  REQUIRE(taken);
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::put(app + "next", "stale")}), LeaseLostError);
  CHECK(value_of(app + "next") == "43");
  etcd::commit_guarded(*other, *taken, {etcd::put(app + "next", "44")});
  CHECK(value_of(app + "next") == "44");
  // A released lease holds no key any more.
  REQUIRE(taken->release() == ReleaseResult::kReleased);
  CHECK_THROWS_AS(etcd::commit_guarded(*other, *taken, {etcd::put(app + "next", "late")}), LeaseLostError);
  CHECK(value_of(app + "next") == "44");
}

TEST_CASE("etcd guard: a client of the application's own writes the same compare with held_key()",
          "[etcd][guard][interop]") {
  const std::string prefix = unique_prefix();
  auto holder = open_on(context().url, prefix);
  std::optional<Lease> lease = holder->try_acquire("report", ttl(10s));
  REQUIRE(lease);
  const std::string key = etcd::held_key(*holder, *lease);
  CHECK(key.rfind(prefix + "report/", 0) == 0);  // the etcd-mutex layout's "<prefix>NAME/<lease>"
  // etcdctl txn reads compares, a blank line, the writes on success, a blank line, those on
  // failure (none here), a blank line.
  const std::string script = "/tmp/dblock-etcd-guard-" + prefix + "txn";
  const auto txn = [&](std::int64_t fence, const std::string& value) {
    std::ofstream(script) << "create(\"" << key << "\") = \"" << fence << "\"\n\nput app/" << prefix << "out " << value
                          << "\n\n\n";
    return etcdctl("txn < " + script);
  };
  std::vector<std::string> out = txn(lease->fence(), "held");
  REQUIRE_FALSE(out.empty());
  CHECK(out.front() == "SUCCESS");
  CHECK(value_of("app/" + prefix + "out") == "held");
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  out = txn(lease->fence(), "late");
  REQUIRE_FALSE(out.empty());
  CHECK(out.front() == "FAILURE");
  CHECK(value_of("app/" + prefix + "out") == "held");
  CHECK_THROWS_AS(etcd::held_key(*holder, *lease), LeaseLostError);
  std::filesystem::remove(script);
}

TEST_CASE("etcd guard: the lock's own keys, no writes and a manager not on etcd are refused, nothing written",
          "[etcd][guard][input]") {
  const std::string prefix = unique_prefix();
  auto holder = open_on(context().url, prefix);
  std::optional<Lease> lease = holder->try_acquire("own", ttl(10s));
  REQUIRE(lease);
  const std::string mine = etcd::held_key(*holder, *lease);
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::put(prefix + "own/extra", "x")}), UsageError);
  // Any key under the locks' prefix: another lock's line, a record, anything.
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::put(prefix + "other/x", "x")}), UsageError);
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::put(prefix + "plain", "x")}), UsageError);
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::erase(mine)}), UsageError);
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::put("", "x")}), UsageError);
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {}), UsageError);
  // A refused batch writes none of it, the good write before the bad one included.
  CHECK_THROWS_AS(
      etcd::commit_guarded(*holder, *lease, {etcd::put("app/" + prefix + "fine", "x"), etcd::put(prefix + "own/", "x")}),
      UsageError);
  CHECK(value_of("app/" + prefix + "fine").empty());
  CHECK(etcd::held_key(*holder, *lease) == mine);  // the lock is untouched
  // More writes than the member takes in one transaction (--max-txn-ops, 128): etcd refuses it.
  std::vector<etcd::Write> many;
  for (int i = 0; i < 129; ++i) many.push_back(etcd::put("app/" + prefix + "many/" + std::to_string(i), "x"));
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, many), UsageError);
  CHECK(etcdctl("get --prefix 'app/" + prefix + "many/' --keys-only").empty());
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, Lease(), {etcd::put(prefix + "x", "x")}), UsageError);

  char dir[] = "/tmp/dblock-etcd-guard-XXXXXX";
  REQUIRE(::mkdtemp(dir) != nullptr);
  {
    auto sqlite = dblock::open("sqlite://" + std::string(dir) + "/locks.db");
    std::optional<Lease> elsewhere = sqlite->try_acquire("own", ttl(10s));
    REQUIRE(elsewhere);
    CHECK_THROWS_AS(etcd::commit_guarded(*sqlite, *elsewhere, {etcd::put(prefix + "x", "x")}), UnsupportedError);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("etcd guard: layout=python-etcd3 compares the one key of the lock", "[etcd][guard]") {
  const std::string prefix = "/" + unique_prefix();
  auto holder = open_on(context().url + "?layout=python-etcd3&prefix=" + prefix);
  auto other = open_on(context().url + "?layout=python-etcd3&prefix=" + prefix);
  std::optional<Lease> lease = holder->try_acquire("nightly", ttl(10s));
  REQUIRE(lease);
  CHECK(etcd::held_key(*holder, *lease) == prefix + "nightly");
  const std::string state = "app" + prefix + "state";
  etcd::commit_guarded(*holder, *lease, {etcd::put(state, "ran")});
  CHECK(value_of(state) == "ran");
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::put(prefix + "nightly", "x")}), UsageError);
  REQUIRE(other->force_release("nightly"));
  CHECK_THROWS_AS(etcd::commit_guarded(*holder, *lease, {etcd::put(state, "stale")}), LeaseLostError);
  CHECK(value_of(state) == "ran");
}

}  // namespace dblock::testing
