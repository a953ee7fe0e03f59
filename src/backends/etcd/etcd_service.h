// What both etcd layouts share (dblock/etcd/etcd.h): an acquisition's etcd lease and key, its
// renewal, release, loss and eviction. A layout (mutex_layout.h, single_key_layout.h) adds where
// the keys are, how an attempt decides, and how list() reads them. Internal.
//
// An acquisition has an etcd lease and a key of its own from its first attempt until it is
// released or gives up; the service remembers both by (name, owner secret). Every call is bounded
// by call_deadline() (at most kLongestCall ahead where the engine set none).
//
// Thread safety: called from many threads at once; the remembered contenders are guarded here,
// and no lock is held across a call to etcd.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_ETCD_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_ETCD_ETCD_SERVICE_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "client.h"
#include "dblock/etcd/guard.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/lease_service.h"
#include "dblock/service/thread_annotations.h"
#include "error_map.h"
#include "lease_table.h"

namespace dblock::etcd {

class EtcdService : public LeaseService, public AuditLog {
 public:
  // Revokes the service's leases (deleting every key still bound to them), bounded by
  // kBackgroundCall.
  ~EtcdService() override;

  std::string_view name() const override { return kServiceName; }
  ServiceTraits traits() const override;  // a layout adds shared leases where it has them
  // A keep-alive of the acquisition's lease, then a check that its key is still the one made at
  // the fence (a force-release deletes the key and leaves the lease); where the layout's waiters
  // wake on deletions only, the check touches the key, whose version then counts the renewals.
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  // Deletes the own key if it is still the one this acquisition made; inside a scheduled job's
  // window (LeaseKey::hold_at_least), binds it instead, disowned, to an etcd lease of the rest of
  // the window (keep_window()).
  bool release(const LeaseKey& lease) override;
  void lease_lost(const LeaseKey& lease) noexcept override;
  // Deletes the keys of whoever holds `name` (a dblock contender's or a foreign client's; every
  // shared holder's) and puts the record of it (audit.h), in one transaction.
  bool force_release(std::string_view name, std::string_view by) override;

  AuditLog* audit_log() noexcept override { return this; }
  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

  // The guard (dblock/etcd/guard.h, guard.cc): the key of `name`'s acquisition of `secret` that
  // holds at `fence` (LeaseLostError when this service has none), and `writes` committed in one
  // transaction only while that key is the one made at `fence`. Bounded by call_deadline().
  std::string held_key(std::string_view name, const OwnerSecret& secret, std::int64_t fence);
  std::int64_t commit_guarded(std::string_view name, const OwnerSecret& secret, std::int64_t fence,
                              const std::vector<Write>& writes);

 protected:
  explicit EtcdService(const Options& options);

  // One acquisition's key, bound to one of the service's shared leases (lease_table.h): `value`
  // (contender_value) tells it from every other acquisition's; `revision` is its create revision
  // once known (0 before), the fence when it holds and the place in line while it waits.
  struct Contender {
    std::int64_t lease = 0;
    std::string key;
    std::string value;
    std::int64_t revision = 0;
    // A waiter's: when its last attempt began, and how long its key is kept for the next one.
    SteadyClock::time_point attempted;
    std::chrono::milliseconds keep_for{0};
    // The TTL the acquisition asks for (a waiter's, for a grant at the end of its wait:
    // MutexLayout); a holder's, with when its acquisition or last successful renewal began. A
    // shared lease outlives any one holder's, so the holder's own expiry is kept here (sweep()
    // counts a contender as a holder by keep_for 0).
    std::chrono::milliseconds ttl{0};
    SteadyClock::time_point renewed;
    // When the answer that granted it came (after etcd granted it): a scheduled job's window,
    // counted from here, ends no sooner on etcd's side.
    SteadyClock::time_point granted;
    // An attempt of this acquisition is under way (sweep() leaves it alone); an earlier one's
    // put went unanswered (the key may appear yet).
    bool in_flight = false;
    bool in_doubt = false;
  };
  using Id = std::pair<std::string, OwnerSecret>;

  // The layout's key for the acquisition of `name` under `lease` that has slot `slot` (the
  // smallest that no other acquisition of this service on that name and lease has). Keys are
  // reused: etcd's index keeps every key a range passes over until it is compacted.
  virtual std::string key_for(std::string_view name, std::int64_t lease, int slot) const = 0;
  // A read, by create revision, of the keys among which the first of `name` holds it.
  virtual etcdserverpb::RangeRequest holder_read(std::string_view name) const = 0;
  // Whether `key` is a contender's for `name` (and not for a longer name holder_read also reads).
  virtual bool is_key_of(std::string_view name, const std::string& key) const = 0;
  // The keys of `read` (holder_read(name)'s answer) that hold `name`: by default the first of
  // `name`'s; a layout with shared holders returns all of them.
  virtual std::vector<const mvccpb::KeyValue*> holding(std::string_view name, const etcdserverpb::RangeResponse& read) const;
  // Whether a renewal may write the key (no foreign waiter wakes on a put).
  virtual bool touch_on_renew() const = 0;

  // Marks the attempt of `id` as ended when it goes out of scope, however it ends (made before
  // contender(), which marks it under way).
  class AttemptScope {
   public:
    AttemptScope(EtcdService& service, Id id) : service_(service), id_(std::move(id)) {}
    ~AttemptScope() { service_.end_attempt(id_); }
    AttemptScope(const AttemptScope&) = delete;
    AttemptScope& operator=(const AttemptScope&) = delete;

   private:
    EtcdService& service_;
    Id id_;
  };

  // The contender of (name, secret), marked under way, on a lease with at least 3/4 of `ttl`
  // left, or a new one; its key may not exist yet. `*expires`: when its lease ends at the soonest.
  Contender contender(const AcquireRequest& request, std::chrono::milliseconds ttl, SteadyClock::time_point until,
                      SteadyClock::time_point* expires);
  // AcquireResult::granted_for of an attempt that began at `began` on a lease ending at `expires`
  // (the engine sent its request before `began`: counted from `began`, it is never too long).
  static std::chrono::microseconds granted_for(SteadyClock::time_point began, SteadyClock::time_point expires);
  // `c`, whose key was made at `revision`, holds: remembers it as held (the engine's renewals keep
  // it from here; a scheduled job's window counts from now) and returns the AcquireResult of an
  // attempt that began at `began` on a lease ending at `expires`.
  // As hold(), for a waiter found first in line outside an attempt: only if `id` is still
  // remembered with its key made at `revision` (a sweep may have taken an abandoned waiter's key
  // meanwhile), checked and marked held at once. nullopt when it is not.
  std::optional<AcquireResult> hold_if_remembered(const Id& id, std::int64_t revision, std::chrono::milliseconds ttl,
                                                  SteadyClock::time_point began, SteadyClock::time_point expires);
  AcquireResult hold(const Id& id, Contender c, std::int64_t revision, std::chrono::milliseconds ttl,
                     SteadyClock::time_point began, SteadyClock::time_point expires);
  // What hold() and hold_if_remembered() do to `c` (made at c.revision), and its AcquireResult.
  static AcquireResult mark_held(Contender& c, std::chrono::milliseconds ttl, SteadyClock::time_point began,
                                 SteadyClock::time_point expires);
  // Deletes `c`'s key if it is still `c`'s (made at `c.revision`, or holding `c.value` when that is
  // 0) and forgets `c`. True when it was deleted here. When etcd did not answer, `c` is kept for
  // sweep() to delete later, and the call's error is thrown.
  bool withdraw(const Id& id, const Contender& c, SteadyClock::time_point until);
  std::optional<Contender> find(const Id& id);
  void remember(const Id& id, const Contender& c);
  void forget(const Id& id);
  // Remembers `c` under `id` with the first key_for() slot that no remembered contender or orphan
  // has (the same key for every slot: the layout's one key per name).
  void remember_new(const Id& id, Contender& c, std::string_view name);
  // Forgets `id` and keeps `key` (a scheduled job's window, on a lease of its own) out of
  // remember_new()'s choice until `until`, at once: a key of this service's lease name that is
  // not this service's to reuse.
  void retire(const Id& id, const std::string& key, SteadyClock::time_point until);
  // etcd said the lease of `id`'s contender is gone: forgets both.
  void lease_gone(const Id& id, std::int64_t lease);
  // `id`'s attempt found its key holding `stale` (an earlier acquisition's, or its own put that
  // may still land): `stale` is kept for sweep() to delete, and `id` forgotten.
  void leave_to_sweep(const Id& id, const Contender& stale);
  // `id`'s attempt met a fault after it may have put its key.
  void mark_in_doubt(const Id& id);
  // Deletes what nobody will: keys whose delete went unanswered, waiters' keys whose engine
  // stopped attempting (their keep_for passed twice), and holders' keys not renewed within their
  // TTL (the engine has told their holder of the loss by then); never a contender whose attempt is
  // under way. A key stays among the orphans (no new acquisition gets it) until its delete is
  // answered. At most every kSweepEvery, kSweepBatch keys, best effort, bounded by `until`.
  void sweep(SteadyClock::time_point until);
  // Rebinds `c`'s key, if it is still `c`'s, to a new etcd lease of `left` (at least: etcd counts
  // whole seconds on the leader) with a value that no owner's digest matches (window_value), and
  // forgets `c`: nobody holds the name until that lease ends, and its fence stays. True when it
  // was `c`'s key. Throws what the calls throw, and then keeps `c`.
  bool keep_window(const Id& id, const Contender& c, std::chrono::milliseconds left, SteadyClock::time_point until);
  // The compare-and-delete of `c`'s key (made at `c.revision`, or holding `c.value` when that is
  // 0). True when it was deleted. Throws what the call throws.
  bool delete_key(const Contender& c, SteadyClock::time_point until);
  // A call's deadline: the engine's, at most kLongestCall from now.
  static SteadyClock::time_point deadline();

  const Options options_;
  Client client_;
  LeaseTable leases_{client_};

 private:
  struct IdLess {
    bool operator()(const Id& a, const Id& b) const {
      return a.first != b.first ? a.first < b.first : a.second.bytes < b.second.bytes;
    }
  };

  service::Mutex mutex_;  // never held across a call to etcd
  std::map<Id, Contender, IdLess> contenders_ DBLOCK_GUARDED_BY(mutex_);
  std::vector<Contender> orphans_ DBLOCK_GUARDED_BY(mutex_);
  std::vector<std::pair<std::string, SteadyClock::time_point>> kept_out_ DBLOCK_GUARDED_BY(mutex_);
  SteadyClock::time_point next_sweep_ DBLOCK_GUARDED_BY(mutex_);

  void end_attempt(const Id& id);
  // UsageError for a guarded write to no key or to one of the lock's own keys (its line, its key,
  // the audit records).
  void check_guarded_write(std::string_view name, const Write& write) const;
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_ETCD_SERVICE_H_
