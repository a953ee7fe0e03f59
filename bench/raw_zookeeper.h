// bench/raw_zookeeper.h — the ZooKeeper floor of zookeeper_bench: the C client (libzookeeper_mt,
// THREADED) used directly with its synchronous calls, as hand-written application code does, and
// the lock recipe of ZooKeeper's documentation ("Recipes and Solutions", Locks): an
// EPHEMERAL_SEQUENTIAL child "lock-<seq>" of the lock's node; the lowest sequence holds; a waiter
// watches the child just ahead of its own (getData with a watch, as Curator's InterProcessMutex
// does, so a node already gone leaves no watch behind) and reads the children again when it goes;
// release deletes the own child. Nothing here uses dblock beyond its URL parser.
//
// Header-only, one translation unit. A RawZk is used by one thread at a time (the client's own
// threads deliver replies and watch events).
#ifndef DBLOCK_BENCH_RAW_ZOOKEEPER_H_
#define DBLOCK_BENCH_RAW_ZOOKEEPER_H_

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "dblock/url.h"

namespace dblock_bench {

// The session timeout both sides ask for (dblock's default).
inline constexpr int kRawSessionTimeoutMs = 10'000;

// "h1:p1,h2:p2" of a zookeeper:// URL, read by dblock's own URL parser (port 2181 when absent).
inline std::string connect_string(const std::string& url) {
  const dblock::Url u = dblock::parse_url(url);
  if (u.scheme != "zookeeper") throw std::runtime_error("not a zookeeper:// URL: " + u.redacted());
  std::string out;
  for (const auto& h : u.hosts) {
    out += (out.empty() ? "" : ",") + h.host + ":" + std::to_string(h.port != 0 ? h.port : 2181);
  }
  return out;
}

[[noreturn]] inline void zk_fail(const std::string& what, int rc) {
  throw std::runtime_error(format("zookeeper %s: %s", what.c_str(), zerror(rc)));
}

// One ZooKeeper session of the C client (libzookeeper_mt). Connecting waits (at most 10 s) for the
// session. `async` (a diagnostic) sends create, get children and delete with the asynchronous calls
// and waits on a condition variable, as dblock's session does (for its per-call deadlines), instead
// of the synchronous calls: the client's I/O thread completes a synchronous call itself, while an
// asynchronous one's completion runs on the client's completion thread, one more thread hop.
class RawZk {
 public:
  explicit RawZk(const std::string& url, bool async = false) : async_(async) {
    zoo_set_debug_level(static_cast<ZooLogLevel>(0));
    zh_ = zookeeper_init(connect_string(url).c_str(), nullptr, kRawSessionTimeoutMs, nullptr, nullptr, 0);
    if (zh_ == nullptr) throw std::runtime_error("zookeeper_init failed: " + url);
    // As dblock's session: resolve the host list when connecting, not at every I/O wake-up.
    zoo_set_servers_resolution_delay(zh_, -1);
    for (int i = 0; i < 1000 && zoo_state(zh_) != ZOO_CONNECTED_STATE; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // no session watcher: poll, bounded
    }
    if (zoo_state(zh_) != ZOO_CONNECTED_STATE) {
      zookeeper_close(zh_);
      throw std::runtime_error("zookeeper: no session within 10 s: " + url);
    }
  }
  ~RawZk() { zookeeper_close(zh_); }
  RawZk(const RawZk&) = delete;
  RawZk& operator=(const RawZk&) = delete;

  zhandle_t* handle() { return zh_; }

  // Creates `path` with `flags`; the created path (with its sequence), or "" when it existed.
  std::string create(const std::string& path, int flags) {
    char created[1024] = "";
    int rc = ZOK;
    if (async_) {
      Pending p;
      rc = p.await(zoo_acreate(zh_, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, flags, &Pending::on_string, &p));
      if (rc == ZOK) std::snprintf(created, sizeof created, "%s", p.path.c_str());
    } else {
      rc = zoo_create(zh_, path.c_str(), nullptr, -1, &ZOO_OPEN_ACL_UNSAFE, flags, created, sizeof created);
    }
    if (rc == ZNODEEXISTS) return "";
    if (rc != ZOK) zk_fail("create " + path, rc);
    return created;
  }
  // The children's names; empty when `path` does not exist.
  std::vector<std::string> children(const std::string& path) {
    if (async_) {
      Pending p;
      const int rc = p.await(zoo_aget_children(zh_, path.c_str(), 0, &Pending::on_strings, &p));
      if (rc == ZNONODE) return {};
      if (rc != ZOK) zk_fail("get children of " + path, rc);
      return std::move(p.children);
    }
    String_vector strings{};
    const int rc = zoo_get_children(zh_, path.c_str(), 0, &strings);
    if (rc == ZNONODE) return {};
    if (rc != ZOK) zk_fail("get children of " + path, rc);
    std::vector<std::string> out(strings.data, strings.data + strings.count);
    deallocate_String_vector(&strings);
    return out;
  }
  // Deletes `path` (any version); false when it did not exist.
  bool remove(const std::string& path) {
    Pending p;
    const int rc = async_ ? p.await(zoo_adelete(zh_, path.c_str(), -1, &Pending::on_void, &p))
                          : zoo_delete(zh_, path.c_str(), -1);
    if (rc == ZNONODE) return false;
    if (rc != ZOK) zk_fail("delete " + path, rc);
    return true;
  }
  // Deletes `path` and everything below it (setup and cleanup only).
  void remove_tree(const std::string& path) {
    for (const std::string& child : children(path)) remove_tree(path + "/" + child);
    remove(path);
  }

 private:
  // One asynchronous call awaited on a condition variable. No deadline of its own (a benchmark's
  // server answers; the client's own timeout fails a lost connection), so it lives on the stack.
  struct Pending {
    std::mutex m;
    std::condition_variable cv;
    bool done = false;
    int rc = ZOK;
    std::string path;
    std::vector<std::string> children;

    int await(int sent) {
      if (sent != ZOK) return sent;
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return done; });
      return rc;
    }
    static Pending& of(const void* data) { return *static_cast<Pending*>(const_cast<void*>(data)); }
    void finish(int code) {
      {
        std::lock_guard<std::mutex> lock(m);
        rc = code;
        done = true;
      }
      cv.notify_all();
    }
    static void on_string(int rc, const char* value, const void* data) {
      if (rc == ZOK && value != nullptr) of(data).path = value;
      of(data).finish(rc);
    }
    static void on_strings(int rc, const String_vector* strings, const void* data) {
      if (rc == ZOK && strings != nullptr) of(data).children.assign(strings->data, strings->data + strings->count);
      of(data).finish(rc);
    }
    static void on_void(int rc, const void* data) { of(data).finish(rc); }
  };

  zhandle_t* zh_ = nullptr;
  const bool async_;
};

// The lock recipe on one lock node (persistent, made by the constructor).
class RawZkLock {
 public:
  RawZkLock(RawZk& zk, std::string dir) : zk_(zk), dir_(std::move(dir)) { make_parents(dir_); }

  // Takes the lock, waiting up to `wait` (0: try once); the own child's path, or "" when not held
  // by then (the child is deleted again).
  std::string acquire(std::chrono::milliseconds wait) {
    const auto deadline = Clock::now() + wait;
    const std::string own = zk_.create(dir_ + "/lock-", ZOO_EPHEMERAL_SEQUENTIAL);
    const std::string own_name = own.substr(own.rfind('/') + 1);
    for (;;) {
      std::vector<std::string> names = zk_.children(dir_);
      std::sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
        return sequence(a) < sequence(b);
      });
      const auto at = std::find(names.begin(), names.end(), own_name);
      if (at == names.end()) throw std::runtime_error("zookeeper: own lock node vanished: " + own);
      if (at == names.begin()) return own;
      if (wait.count() <= 0 || !await_gone(dir_ + "/" + *(at - 1), deadline)) {
        zk_.remove(own);
        return "";
      }
    }
  }
  // Deletes the own child; false when it was gone.
  bool release(const std::string& own) { return zk_.remove(own); }

 private:
  // Waits until `path` is deleted (its watch fires) or the deadline passes; true when it is gone.
  bool await_gone(const std::string& path, Clock::time_point deadline) {
    auto wake = std::make_shared<Wake>();
    auto* context = new std::shared_ptr<Wake>(wake);  // the watcher owns it once registered
    char buffer[64];
    int length = sizeof buffer;
    Stat stat{};
    const int rc = zoo_wget(zk_.handle(), path.c_str(), &RawZkLock::on_event, context, buffer, &length, &stat);
    if (rc == ZNONODE) {  // no watch was set
      delete context;
      return true;
    }
    if (rc != ZOK) {
      delete context;
      zk_fail("get " + path, rc);
    }
    std::unique_lock<std::mutex> lock(wake->m);
    return wake->cv.wait_until(lock, deadline, [&] { return wake->fired; });
  }

  struct Wake {
    std::mutex m;
    std::condition_variable cv;
    bool fired = false;
  };

  // A watch fires once (data change, deletion, or the session's end): any of them means "look again".
  static void on_event(zhandle_t*, int, int, const char*, void* context) {
    std::unique_ptr<std::shared_ptr<Wake>> wake(static_cast<std::shared_ptr<Wake>*>(context));
    std::lock_guard<std::mutex> lock((*wake)->m);
    (*wake)->fired = true;
    (*wake)->cv.notify_all();
  }

  // The 10-digit sequence suffix of "lock-0000000042".
  static long long sequence(const std::string& name) {
    return name.size() >= 10 ? std::atoll(name.c_str() + name.size() - 10) : -1;
  }

  void make_parents(const std::string& path) {
    for (std::size_t at = path.find('/', 1);; at = path.find('/', at + 1)) {
      zk_.create(path.substr(0, at), 0);  // persistent; "" when it existed
      if (at == std::string::npos) break;
    }
  }

  RawZk& zk_;
  const std::string dir_;
};

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_RAW_ZOOKEEPER_H_
