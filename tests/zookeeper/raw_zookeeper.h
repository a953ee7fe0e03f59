// Checks made directly on a test server, beside dblock: a plain ZooKeeper client session (the C
// client's synchronous calls). Test-only.
#ifndef DBLOCK_TESTS_ZOOKEEPER_RAW_ZOOKEEPER_H_
#define DBLOCK_TESTS_ZOOKEEPER_RAW_ZOOKEEPER_H_

#include <catch2/catch.hpp>
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dblock/dblock.h"

namespace dblock::testing {

// Where the suite's managers (table_prefix `prefix`, no base=) keep their lock containers.
inline std::string root_for(const std::string& prefix) { return "/dblock/" + prefix + "locks"; }

class RawZk {
 public:
  // Connects to the hosts of `url` and waits (at most 10 s) for the session; with `digest`
  // ("user:password") authenticates with ZooKeeper's digest scheme too.
  explicit RawZk(const std::string& url, const std::string& digest = "") {
    zoo_set_debug_level(static_cast<ZooLogLevel>(0));
    std::string at;
    for (const Url::Host& host : parse_url(url).hosts) {
      at += (at.empty() ? "" : ",") + host.host + ":" + std::to_string(host.port);
    }
    zh_ = zookeeper_init(at.c_str(), nullptr, 10'000, nullptr, nullptr, 0);
    REQUIRE(zh_ != nullptr);
    for (int i = 0; i < 1000 && zoo_state(zh_) != ZOO_CONNECTED_STATE; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // no watcher: poll the state, bounded
    }
    REQUIRE(zoo_state(zh_) == ZOO_CONNECTED_STATE);
    if (!digest.empty()) {
      auto done = std::make_shared<Done>();
      auto* held = new std::shared_ptr<Done>(done);
      REQUIRE(zoo_add_auth(zh_, "digest", digest.data(), static_cast<int>(digest.size()), on_done, held) == ZOK);
      done->await();
      REQUIRE(done->rc == ZOK);
    }
  }
  ~RawZk() { zookeeper_close(zh_); }
  RawZk(const RawZk&) = delete;
  RawZk& operator=(const RawZk&) = delete;

  // The children of `path` (empty when it does not exist), after a sync: a follower has then applied
  // every write committed before (another client's, through another server).
  std::vector<std::string> children(const std::string& path) {
    sync("/");
    String_vector strings{};
    const int rc = zoo_get_children(zh_, path.c_str(), 0, &strings);
    std::vector<std::string> out;
    if (rc == ZOK) {
      for (int i = 0; i < strings.count; ++i) out.emplace_back(strings.data[i]);
      deallocate_String_vector(&strings);
    } else {
      REQUIRE(rc == ZNONODE);
    }
    return out;
  }
  // The node's Stat, or nullopt when it does not exist, after a sync (as children()).
  std::optional<Stat> stat(const std::string& path) {
    sync("/");
    Stat stat{};
    const int rc = zoo_exists(zh_, path.c_str(), 0, &stat);
    if (rc == ZNONODE) return std::nullopt;
    REQUIRE(rc == ZOK);
    return stat;
  }
  // The node's data ("" when it has none).
  std::string data(const std::string& path) {
    char buffer[1024];
    int length = sizeof buffer;
    Stat stat{};
    REQUIRE(zoo_get(zh_, path.c_str(), 0, buffer, &length, &stat) == ZOK);
    return std::string(buffer, length > 0 ? static_cast<std::size_t>(length) : 0);
  }
  int remove(const std::string& path) { return zoo_delete(zh_, path.c_str(), -1); }
  // ZooKeeper's code for reading the children of `path` (ZNOAUTH: its ACL lets this client not),
  // after a sync (as children()).
  int children_rc(const std::string& path) {
    sync("/");
    String_vector strings{};
    const int rc = zoo_get_children(zh_, path.c_str(), 0, &strings);
    if (rc == ZOK) deallocate_String_vector(&strings);
    return rc;
  }
  // The node's ACL, each entry as "scheme:id:perms" (perms as ZooKeeper's bit mask, decimal), after
  // a sync.
  std::vector<std::string> acl(const std::string& path) {
    sync("/");
    ACL_vector acl{};
    Stat stat{};
    REQUIRE(zoo_get_acl(zh_, path.c_str(), &acl, &stat) == ZOK);
    std::vector<std::string> out;
    for (int i = 0; i < acl.count; ++i) {
      out.push_back(std::string(acl.data[i].id.scheme) + ":" + acl.data[i].id.id + ":" +
                    std::to_string(acl.data[i].perms));
    }
    deallocate_ACL_vector(&acl);
    return out;
  }
  // Sets the ACL of `path` to world:anyone READ only (what a hostile co-tenant would do to lock
  // every other client out); returns ZooKeeper's code.
  int make_read_only(const std::string& path) {
    sync("/");
    return zoo_set_acl(zh_, path.c_str(), -1, &ZOO_READ_ACL_UNSAFE);
  }
  // Creates `path` (flags: ZOO_EPHEMERAL_SEQUENTIAL, ...) holding `data`, after a sync (its parent
  // may have been made through another server); returns the path made, or "" when the server
  // refused.
  std::string create(const std::string& path, const std::string& data, int flags) {
    sync("/");
    char made[1024] = {};
    const int rc = zoo_create(zh_, path.c_str(), data.data(), static_cast<int>(data.size()), &ZOO_OPEN_ACL_UNSAFE,
                              flags, made, sizeof made);
    return rc == ZOK ? std::string(made) : std::string();
  }

  // Waits (at most 10 s) for a zoo_async sync of `path`.
  void sync(const std::string& path) {
    auto done = std::make_shared<Done>();
    auto* held = new std::shared_ptr<Done>(done);
    const auto on_synced = [](int rc, const char*, const void* data) { on_done(rc, data); };
    REQUIRE(zoo_async(zh_, path.c_str(), on_synced, held) == ZOK);
    done->await();
  }

 private:
  // An asynchronous call's answer, shared with its completion.
  struct Done {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    int rc = 0;
    // Waits (at most 10 s) for the answer.
    void await() {
      std::unique_lock<std::mutex> lock(m);
      REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; }));
    }
  };
  static void on_done(int rc, const void* data) {
    std::unique_ptr<std::shared_ptr<Done>> d(static_cast<std::shared_ptr<Done>*>(const_cast<void*>(data)));
    std::lock_guard<std::mutex> lock((*d)->m);
    (*d)->rc = rc;
    (*d)->done = true;
    (*d)->cv.notify_all();
  }

  zhandle_t* zh_ = nullptr;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_ZOOKEEPER_RAW_ZOOKEEPER_H_
