// The etcd-mutex layout (dblock/etcd/etcd.h), the one `etcdctl lock` and concurrency.Mutex use:
// a key "<prefix><name>/<lease id in hex>" per contender; the oldest by create revision holds.
// Internal.
//
// The range "<prefix>a/" holds the keys of lock "a/b" too: as with concurrency.Mutex, a contender
// for "a/b" that came first stands in line before "a"'s (never beside one: no two hold "a").
//
// Shared leases, dblock's own, in the same line (etcd's recipes/RWMutex decides alike): a shared
// contender's value says so ("<digest>/<permits> <holder>", requests.h); it holds when every key
// ahead of it is a shared dblock contender's of the name, fewer than its permits when it has a
// limit (a semaphore). Any other key ahead (an exclusive contender, another client's, a longer
// name's) makes it wait, and a shared key is a key like any other to an exclusive contender and to
// `etcdctl lock`: readers and writers of dblock and concurrency.Mutex clients exclude each other.
//
// MultiAcquire (multi_acquire.cc): every name's key put in one transaction, on condition that no
// key came into any of the names' ranges (exclusive: none is there; shared: none since a read that
// found only readers), so all the names get the transaction's revision as their fence, or none.
//
// Capabilities: FairQueue (a waiter keeps its key: its place is its create revision, FIFO),
// NativeWait (a watch on the key just ahead, for a reader the newest non-reader ahead: no herd;
// an exclusive waiter whose read finds nobody ahead holds from that read, as concurrency.Mutex's;
// a semaphore's waiter held back by the permits alone watches every deletion under the name) and
// SessionLocks (session_locks.h: a lease per lock, in the same line).
#ifndef DBLOCK_SRC_BACKENDS_ETCD_MUTEX_LAYOUT_H_
#define DBLOCK_SRC_BACKENDS_ETCD_MUTEX_LAYOUT_H_

#include <string>
#include <vector>

#include "dblock/service/capabilities.h"
#include "etcd_service.h"
#include "session_locks.h"

namespace dblock::etcd {

class MutexLayout final : public EtcdService, public FairQueue, public NativeWait, public MultiAcquire {
 public:
  explicit MutexLayout(const Options& options) : EtcdService(options) {}

  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  // Every lock under the prefix with a contender, foreign holders included.
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  FairQueue* fair_queue() noexcept override { return this; }
  NativeWait* native_wait() noexcept override { return this; }
  MultiAcquire* multi_acquire() noexcept override { return this; }
  std::vector<AcquireResult> try_acquire_all(const std::vector<AcquireRequest>& requests) override;
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
  std::vector<const mvccpb::KeyValue*> holding(std::string_view name, const etcdserverpb::RangeResponse& read) const override;
  bool touch_on_renew() const override { return true; }  // concurrency.Mutex waits on deletions
  Attempt attempt(const AcquireRequest& request, bool queue, std::chrono::milliseconds hold_for);
  // The create revision of `c`'s key after its attempt's transaction `r`. Throws a retryable
  // ConnectionError when the key went since the last attempt, or holds an earlier acquisition's.
  std::int64_t made_at(const Id& id, const Contender& c, const etcdserverpb::TxnResponse& r, std::string_view name);
  // `line`: the attempt's read of the line (attempt_request). Whether the contender made at
  // `revision` holds; throws the permits' UsageError when shared holders ahead have another limit.
  bool holds(const AcquireRequest& request, std::int64_t revision, const etcdserverpb::RangeResponse& line) const;
  static etcdserverpb::TxnRequest attempt_request(const Contender& c, const std::string& prefix, bool shared);
  // An exclusive waiter `c` whose key (made at `ticket`) a read found first in line: held from
  // here, as an attempt would have found (hold()), if its lease has what an attempt would give
  // it; else nullopt (the engine's next attempt keeps the lease alive first).
  std::optional<LeaseGrant> grant_at_front(const Id& id, const Contender& c, std::int64_t ticket);
  // A shared waiter's wait (a semaphore's of `permits`, 0: a reader's): for the newest key ahead
  // that is not a reader's, or any deletion under the name when only the permits hold it back;
  // none when nothing does any more.
  void wait_shared(std::string_view name, std::int64_t ticket, int permits, SteadyClock::time_point until);
  std::string prefix_of(std::string_view name) const;
  // try_acquire_all's parts (multi_acquire.cc). Whether `line` (a read of `name`'s range) holds
  // only readers of the read-write lock (and `own`'s key, an earlier call's).
  bool only_readers(std::string_view name, const etcdserverpb::RangeResponse& line, const Contender& own) const;
  // The revision at which every name's range held only readers, or 0 when one did not.
  std::int64_t readers_only_at(const std::vector<AcquireRequest>& requests, const std::vector<Contender>& cs,
                               SteadyClock::time_point until);
  // The transaction that puts every contender's key if no key came into the ranges after `seen`.
  etcdserverpb::TxnRequest put_all_request(const std::vector<AcquireRequest>& requests, const std::vector<Contender>& cs,
                                           std::int64_t seen) const;

  EtcdSessionLocks session_locks_{client_, options_.prefix, options_.session_ttl};
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_MUTEX_LAYOUT_H_
