#include "session_locks.h"

#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"
#include "error_map.h"
#include "keys.h"
#include "requests.h"

namespace dblock::etcd {

namespace {

using std::chrono::milliseconds;

std::string holder_text() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return std::string(host) + ":" + std::to_string(getpid()) + " (session lock)";
}

// Keeps one lease alive every TTL/3 on a thread of its own until stopped, or until etcd says the
// lease is gone. A keep-alive is bounded by TTL/6 and at most kBeatBound (so that stop() waits no
// longer); one that fails is tried again after kRetry, not a whole beat later.
class KeepAlive {
 public:
  static constexpr milliseconds kBeatBound{1'000};
  static constexpr milliseconds kRetry{200};

  KeepAlive(Client& client, std::int64_t lease, std::chrono::seconds ttl)
      : client_(client), lease_(lease), every_(std::chrono::duration_cast<milliseconds>(ttl) / 3),
        bound_(std::min(every_ / 2, kBeatBound)), thread_([this] { run(); }) {}
  ~KeepAlive() { stop(); }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

 private:
  void run() {
    std::unique_lock<std::mutex> lock(mutex_);
    milliseconds next = every_;
    for (;;) {
      if (cv_.wait_for(lock, next, [&] { return stopped_; })) return;
      lock.unlock();
      bool gone = false;
      next = every_;
      try {
        gone = client_.keep_alive(lease_, SteadyClock::now() + bound_).count() == 0;
      } catch (...) {
        next = std::min(every_, kRetry);  // the lease ends by its TTL if none gets through
      }
      lock.lock();
      if (gone) return;
    }
  }

  Client& client_;
  const std::int64_t lease_;
  const milliseconds every_;
  const milliseconds bound_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread thread_;  // last: started once the rest is built
};

class Handle final : public SessionLockHandle {
 public:
  Handle(Client& client, std::int64_t lease, std::unique_ptr<KeepAlive> keep_alive, std::string key,
         std::int64_t revision)
      : client_(client), lease_(lease), key_(std::move(key)), revision_(revision), keep_alive_(std::move(keep_alive)) {}
  ~Handle() override {
    if (keep_alive_ == nullptr) return;
    keep_alive_.reset();
    revoke_best_effort();
  }

  // The key is there, made at the revision this lock made it, on its lease (one round trip).
  bool verify() noexcept override {
    try {
      etcdserverpb::RangeRequest read;
      read.set_key(key_);
      const etcdserverpb::RangeResponse r = client_.range(read, bounded_deadline(), "session lock verify");
      return r.kvs_size() == 1 && r.kvs(0).create_revision() == revision_ && r.kvs(0).lease() == lease_;
    } catch (...) {
      return false;
    }
  }

  // The delete first, while the keep-alive still runs; the lease is revoked however it ends.
  bool release() override {
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = created_at(key_, revision_);
    txn.add_success()->mutable_request_delete_range()->set_key(key_);
    struct Revoke {
      Handle& h;
      ~Revoke() {
        h.keep_alive_.reset();
        h.revoke_best_effort();
      }
    } revoke{*this};
    try {
      return client_.txn(txn, bounded_deadline(), "session lock release").succeeded();
    } catch (const ConnectionError& e) {
      throw InDoubtError(std::string(e.what()) + " (the session lock's key goes with its lease, by its TTL)",
                         kServiceName, e.sqlstate());
    }
  }

  std::int64_t key() const override { return 0; }

 private:
  void revoke_best_effort() noexcept {
    try {
      client_.revoke(lease_, SteadyClock::now() + kBackgroundCall);
    } catch (...) {
      // The lease ends by its TTL.
    }
  }

  Client& client_;
  const std::int64_t lease_;
  const std::string key_;
  const std::int64_t revision_;
  std::unique_ptr<KeepAlive> keep_alive_;  // null once released
};

// Revokes a lease unless dismissed: an acquisition that did not get its lock, however it ended.
struct RevokeUnlessKept {
  Client& client;
  std::int64_t lease;
  bool kept = false;
  ~RevokeUnlessKept() {
    if (kept) return;
    try {
      client.revoke(lease, SteadyClock::now() + kBackgroundCall);
    } catch (...) {
      // The lease ends by its TTL, with the key.
    }
  }
};

}  // namespace

std::unique_ptr<SessionLockHandle> EtcdSessionLocks::acquire_session_lock(std::string_view name, LockMode mode,
                                                                          milliseconds wait) {
  if (name.empty()) throw UsageError("etcd: empty lock name", kServiceName);
  if (mode == LockMode::kShared) {
    throw UnsupportedError("etcd: no shared session locks (the etcd-mutex layout is concurrency.Mutex's)", kServiceName);
  }
  // The wait ends by `ends` (the caller's wait, or the engine's deadline where that is sooner);
  // each call by bounded_deadline(), at most kLongestCall ahead.
  const SteadyClock::time_point now = SteadyClock::now();
  const SteadyClock::time_point limit = call_deadline();
  const SteadyClock::time_point ends = wait <= milliseconds::zero()                                   ? now
                                       : std::chrono::duration_cast<milliseconds>(limit - now) <= wait ? limit
                                                                                                       : now + wait;
  const Client::Granted granted = client_.grant(ttl_, bounded_deadline());
  RevokeUnlessKept revoke{client_, granted.id};
  auto keep_alive = std::make_unique<KeepAlive>(client_, granted.id, granted.ttl);  // through the wait too
  const std::string prefix = lock_prefix(prefix_, name);
  const std::string key = contender_key(prefix, granted.id);
  // As concurrency.Mutex: the key is put if absent (its lease is new: it is), then the line read.
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(key, 0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(key);
  put->set_value(contender_value(OwnerSecret::generate(), holder_text()));
  put->set_lease(granted.id);
  const std::int64_t revision = client_.txn(txn, bounded_deadline(), "session lock").header().revision();
  for (;;) {
    // The own key (still there, from this put) and the key just ahead of it, at one revision.
    etcdserverpb::TxnRequest read;
    read.add_success()->mutable_request_range()->set_key(key);
    etcdserverpb::RangeRequest* ahead = read.add_success()->mutable_request_range();
    *ahead = first_by_creation(prefix, etcdserverpb::RangeRequest::DESCEND);
    ahead->set_max_create_revision(revision - 1);
    const etcdserverpb::TxnResponse r = client_.txn(read, bounded_deadline(), "session lock");
    const auto& own = r.responses(0).response_range();
    if (own.kvs_size() != 1 || own.kvs(0).create_revision() != revision) {
      throw ConnectionError("etcd: the session lock's key for '" + std::string(name) +
                                "' went while it waited (its lease ended, or an admin released it)",
                            kServiceName, "", true);
    }
    const auto& before = r.responses(1).response_range();
    if (before.kvs_size() == 0) {
      revoke.kept = true;
      return std::make_unique<Handle>(client_, granted.id, std::move(keep_alive), key, revision);
    }
    if (SteadyClock::now() >= ends) return nullptr;
    // A hint: the next read decides. Bounded by the wait, and a call's longest time.
    client_.wait_deleted(before.kvs(0).key(), r.header().revision(), std::min(ends, bounded_deadline()));
  }
}

}  // namespace dblock::etcd
