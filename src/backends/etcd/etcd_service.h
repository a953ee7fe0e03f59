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
#include "dblock/service/capabilities.h"
#include "dblock/service/lease_service.h"
#include "dblock/service/thread_annotations.h"
#include "error_map.h"

namespace dblock::etcd {

class EtcdService : public LeaseService, public AuditLog {
 public:
  // Revokes the leases of acquisitions still remembered (best effort, bounded by kBackgroundCall).
  ~EtcdService() override;

  std::string_view name() const override { return kServiceName; }
  ServiceTraits traits() const override;
  // A keep-alive of the acquisition's lease, then a check that its key is still the one made at
  // the fence (a force-release deletes the key and leaves the lease); where the layout's waiters
  // wake on deletions only, the check touches the key, whose version then counts the renewals.
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  // Deletes the own key if it is still the one this acquisition made, then revokes its lease.
  // Throws (ConnectionError) only when neither got an answer: the key may still be there.
  bool release(const LeaseKey& lease) override;
  void lease_lost(const LeaseKey& lease) noexcept override;
  // Deletes the key of whoever holds `name` (a dblock contender's or a foreign client's) and puts
  // the record of it (audit.h), in one transaction.
  bool force_release(std::string_view name, std::string_view by) override;

  AuditLog* audit_log() noexcept override { return this; }
  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

 protected:
  explicit EtcdService(const Options& options);

  // One acquisition's lease and key; `revision` is the key's create revision once known (0
  // before), the fence when it holds and the place in line while it waits.
  struct Contender {
    std::int64_t lease = 0;
    std::string key;
    std::int64_t revision = 0;
  };
  using Id = std::pair<std::string, OwnerSecret>;

  // The layout's key for an acquisition of `name` under `lease`.
  virtual std::string key_for(std::string_view name, std::int64_t lease) const = 0;
  // A read, by create revision, of the keys among which the first of `name` holds it.
  virtual etcdserverpb::RangeRequest holder_read(std::string_view name) const = 0;
  // Whether `key` is a contender's for `name` (and not for a longer name holder_read also reads).
  virtual bool is_key_of(std::string_view name, const std::string& key) const = 0;
  // Whether a renewal may write the key (no foreign waiter wakes on a put).
  virtual bool touch_on_renew() const = 0;

  // The contender of (name, secret) whose lease is still alive, or a new one (a new lease of
  // `ttl`); its key may not exist yet.
  Contender contender(const AcquireRequest& request, std::chrono::milliseconds ttl, SteadyClock::time_point until);
  // Deletes `c`'s key if it is still the one made at `c.revision` (0: not known to be there), then
  // revokes the lease (which deletes a key still bound to it); forgets `c` once either answered.
  // True when a key made at `c.revision` was deleted here (or, the delete unanswered, by the
  // revocation). Throws the delete's error when the revocation failed as well.
  bool withdraw(const Id& id, const Contender& c, SteadyClock::time_point until);
  std::optional<Contender> find(const Id& id);
  void remember(const Id& id, const Contender& c);
  void forget(const Id& id);
  // A call's deadline: the engine's, at most kLongestCall from now.
  static SteadyClock::time_point deadline();

  const Options options_;
  Client client_;

 private:
  struct IdLess {
    bool operator()(const Id& a, const Id& b) const {
      return a.first != b.first ? a.first < b.first : a.second.bytes < b.second.bytes;
    }
  };

  service::Mutex mutex_;  // never held across a call to etcd
  std::map<Id, Contender, IdLess> contenders_ DBLOCK_GUARDED_BY(mutex_);
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_ETCD_SERVICE_H_
