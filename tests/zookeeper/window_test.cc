// ZooKeeper's scheduled-job windows (src/backends/zookeeper/window.h): the persistent child of the
// lock's container, as a raw client sees it: written at the grant, kept by a release inside it and
// by a holder's death, judged on the ensemble's clock by the next holder, deleted once passed.
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "context.h"
#include "paths.h"
#include "raw_zookeeper.h"
#include "window.h"

namespace dblock::testing {

using namespace std::chrono_literals;
namespace zk = dblock::zookeeper;

namespace {

AcquireOptions job(std::chrono::milliseconds hold, std::chrono::milliseconds ttl = 0ms) {
  AcquireOptions options;
  options.hold_at_least = hold;
  options.ttl = ttl;
  return options;
}

std::string window_of(const std::string& prefix, const std::string& name) {
  return root_for(prefix) + "/" + zk::escape_name(name) + "/" + std::string(zk::kWindowNode);
}

}  // namespace

TEST_CASE("zookeeper: windows round-trip; other data is no window, a later format a window never passed",
          "[zookeeper][window-format]") {
  const zk::Window w{1'700'000'060'000, 1'700'000'000'000, 0x100000007, "0f1e2d3c-0000-4000-8000-000000000001",
                     "host-1 pid 7\nsecond line"};
  const auto back = zk::decode_window(zk::encode_window(w));
  REQUIRE(back);
  CHECK(back->until_ms == w.until_ms);
  CHECK(back->acquired_ms == w.acquired_ms);
  CHECK(back->fence == w.fence);
  CHECK(back->owner == w.owner);
  CHECK(back->holder == w.holder);
  CHECK_FALSE(zk::decode_window("dblock:worker-1"));  // a lock node's data
  CHECK_FALSE(zk::decode_window("not a window"));
  for (const std::string& later : {zk::encode_window(w).substr(0, 20), std::string("dblock-window-1\n12 x 3 g\nh"),
                                  std::string("dblock-window-2\nwhatever")}) {
    const auto unreadable = zk::decode_window(later);
    REQUIRE(unreadable);
    CHECK(unreadable->until_ms == zk::kUnreadableUntilMs);
  }
}

TEST_CASE("zookeeper: the window node is no lock node, to dblock or to Curator's recipes", "[zookeeper][paths]") {
  const std::string name(zk::kWindowNode);
  const std::string g = "_c_00000000-0000-0000-0000-000000000001-";
  for (zk::Layout layout : {zk::Layout::kReadWrite, zk::Layout::kCuratorMutex}) {
    const auto sorted = zk::sorted_children(layout, {name, g + "lock-0000000001", g + "__WRIT__0000000002"});
    CHECK(sorted.size() == 2);
    CHECK_FALSE(zk::index_of(sorted, name));
  }
  // Curator sorts a child by the text after its lock name, or by the whole name without one: this
  // name has none of them, and sorts after any sequence number (digits, or '-' when wrapped).
  for (const char* lock_name : {"lock-", "__READ__", "__WRIT__"}) CHECK(name.find(lock_name) == std::string::npos);
  CHECK(name > "9999999999");
  CHECK(name > "-2147483648");
}

TEST_CASE("zookeeper: a scheduled job's window is a persistent child written at the grant, on the ensemble's clock",
          "[zookeeper][scheduled]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  std::optional<Lease> run = manager->try_acquire("nightly", job(60s));
  REQUIRE(run);
  RawZk raw(context().url);
  const std::string path = window_of(prefix, "nightly");
  const std::optional<Stat> stat = raw.stat(path);
  REQUIRE(stat);
  CHECK(stat->ephemeralOwner == 0);  // outlives the session
  const std::optional<zk::Window> w = zk::decode_window(raw.data(path));
  REQUIRE(w);
  CHECK(w->until_ms - w->acquired_ms == 60'000);
  CHECK(w->fence == run->fence());
  const std::string dir = root_for(prefix) + "/nightly";
  std::optional<Stat> lock_node;
  for (const std::string& child : raw.children(dir)) {
    if (child != zk::kWindowNode) lock_node = raw.stat(dir + "/" + child);
  }
  REQUIRE(lock_node);
  CHECK(w->acquired_ms == lock_node->ctime);  // the run's node's ctime: the ensemble's clock
  REQUIRE(run->release() == ReleaseResult::kReleased);
  CHECK(raw.stat(path));  // kept: the window is live
  CHECK(raw.children(root_for(prefix) + "/nightly") == std::vector<std::string>{std::string(zk::kWindowNode)});
}

TEST_CASE("zookeeper: the next holder deletes a passed or unreadable window; a live one refuses it until forced",
          "[zookeeper][scheduled]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  RawZk raw(context().url);
  // The container, as a lock made it (containers go when emptied: hold a node meanwhile).
  std::optional<Lease> keep = manager->try_acquire("w");
  REQUIRE(keep);
  const std::string path = window_of(prefix, "w");
  REQUIRE(!raw.create(path, "not a window", 0).empty());
  REQUIRE(keep->release() == ReleaseResult::kReleased);
  std::optional<Lease> next = manager->try_acquire("w");
  REQUIRE(next);
  CHECK_FALSE(raw.stat(path));

  REQUIRE(!raw.create(path, zk::encode_window({1000, 0, 1, "", "long ago"}), 0).empty());
  REQUIRE(next->release() == ReleaseResult::kReleased);
  next = manager->try_acquire("w");
  REQUIRE(next);
  CHECK_FALSE(raw.stat(path));

  const std::int64_t year_3000 = 32'503'680'000'000;
  REQUIRE(!raw.create(path, zk::encode_window({year_3000, 0, 1, "", "far ahead"}), 0).empty());
  REQUIRE(next->release() == ReleaseResult::kReleased);
  CHECK_FALSE(manager->try_acquire("w"));
  const std::optional<LeaseInfo> shown = manager->inspect("w");
  REQUIRE(shown);
  CHECK(shown->holder == "far ahead");
  CHECK(shown->expires_at_us == year_3000 * 1000);
  CHECK(manager->force_release("w"));
  CHECK_FALSE(raw.stat(path));
  CHECK(manager->try_acquire("w"));
}

TEST_CASE("zookeeper: a job that outlived its window deletes it with its node", "[zookeeper][scheduled]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  std::optional<Lease> run = manager->try_acquire("long-job", job(600ms, 1500ms));
  REQUIRE(run);
  RawZk raw(context().url);
  const std::string path = window_of(prefix, "long-job");
  REQUIRE(raw.stat(path));
  // Renewals (every 500 ms) write the node: the service sees the ensemble's clock pass the window.
  const std::int64_t renewals = [&] {
    for (int i = 0; i < 100; ++i) {
      std::this_thread::sleep_for(50ms);
      const std::optional<LeaseInfo> info = manager->inspect("long-job");
      if (info && info->renewals >= 2) return info->renewals;
    }
    return std::int64_t{0};
  }();
  REQUIRE(renewals >= 2);
  REQUIRE(run->release() == ReleaseResult::kReleased);
  CHECK_FALSE(raw.stat(path));
}

}  // namespace dblock::testing
