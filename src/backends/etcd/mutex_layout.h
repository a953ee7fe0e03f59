// The etcd-mutex layout (dblock/etcd/etcd.h), the one `etcdctl lock` and concurrency.Mutex use:
// a key "<prefix><name>/<lease id in hex>" per contender; the oldest by create revision holds.
// Internal.
//
// The range "<prefix>a/" holds the keys of lock "a/b" too: as with concurrency.Mutex, a contender
// for "a/b" that came first stands in line before "a"'s (never beside one: no two hold "a").
//
// Capabilities: FairQueue (a waiter keeps its key: its place is its create revision, FIFO),
// NativeWait (a watch on the key just ahead: no herd) and SessionLocks (session_locks.h: a lease
// per lock, in the same line).
#ifndef DBLOCK_SRC_BACKENDS_ETCD_MUTEX_LAYOUT_H_
#define DBLOCK_SRC_BACKENDS_ETCD_MUTEX_LAYOUT_H_

#include <string>
#include <vector>

#include "dblock/service/capabilities.h"
#include "etcd_service.h"
#include "session_locks.h"

namespace dblock::etcd {

class MutexLayout final : public EtcdService, public FairQueue, public NativeWait {
 public:
  explicit MutexLayout(const Options& options) : EtcdService(options) {}

  AcquireResult try_acquire(const AcquireRequest& request) override;
  // Every lock under the prefix with a contender, foreign holders included.
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  FairQueue* fair_queue() noexcept override { return this; }
  NativeWait* native_wait() noexcept override { return this; }
  SessionLocks* session_locks() noexcept override { return &session_locks_; }
  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;
  Turn wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                     std::chrono::milliseconds max_wait) override;

 private:
  std::string key_for(std::string_view name, std::int64_t lease, int slot) const override;
  etcdserverpb::RangeRequest holder_read(std::string_view name) const override;
  bool is_key_of(std::string_view name, const std::string& key) const override;
  bool touch_on_renew() const override { return true; }  // concurrency.Mutex waits on deletions
  Attempt attempt(const AcquireRequest& request, bool queue, std::chrono::milliseconds hold_for);
  static etcdserverpb::TxnRequest attempt_request(const Contender& c, const std::string& prefix);
  std::string prefix_of(std::string_view name) const;

  EtcdSessionLocks session_locks_{client_, options_.prefix, options_.session_ttl};
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_MUTEX_LAYOUT_H_
