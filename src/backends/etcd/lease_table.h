// The etcd leases of one service, shared: one per TTL in whole seconds, every acquisition asking
// for that TTL binding its key to it. An acquisition then costs one transaction, not a grant, a
// transaction and a revocation. Internal.
//
// Each lease is kept alive by the engine's renewals of the acquisitions on it (a keep-alive each);
// one that nobody renews ends by its TTL, with every key still bound to it. Time left is counted
// on the steady clock from when the last grant or keep-alive answered by etcd was *sent*: etcd
// starts counting when it handles it, later, so what is counted here is never more than etcd's.
//
// Thread safety: every method may be called from many threads; no lock is held across a call.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_LEASE_TABLE_H_
#define DBLOCK_SRC_BACKENDS_ETCD_LEASE_TABLE_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "client.h"
#include "dblock/service/thread_annotations.h"

namespace dblock::etcd {

class LeaseTable {
 public:
  explicit LeaseTable(Client& client) : client_(client) {}

  struct Bound {
    std::int64_t lease = 0;
    SteadyClock::time_point expires;  // etcd ends it no sooner (the steady clock)
  };
  // A lease of at least `ttl` (whole seconds) with at least 3/4 of `ttl` left: the table's, kept
  // alive first when less is left, or a new one. Throws what the calls throw.
  Bound lease_for(std::chrono::milliseconds ttl, SteadyClock::time_point until);
  // `lease` (any of the table's, or one it replaced) with at least 3/4 of `ttl` left: kept alive
  // first when less is left. nullopt when etcd no longer has it.
  std::optional<Bound> keep(std::int64_t lease, std::chrono::milliseconds ttl, SteadyClock::time_point until);
  // `lease` with at least 3/4 of `ttl` left by the table's last answer, without a call; nullopt
  // when less is left, or the table does not have it.
  std::optional<Bound> known(std::int64_t lease, std::chrono::milliseconds ttl);
  // One keep-alive of `lease`, sent now: when it ends at the soonest, or nullopt when etcd no
  // longer has it.
  std::optional<SteadyClock::time_point> keep_alive(std::int64_t lease, SteadyClock::time_point until);
  // etcd said `lease` is gone: the next acquisition asking for its TTL gets a new one.
  void gone(std::int64_t lease);
  // Takes every lease out of the table (to revoke them).
  std::vector<std::int64_t> take_all();

 private:
  struct Entry {
    std::int64_t lease = 0;
    std::chrono::seconds ttl{0};
    SteadyClock::time_point refreshed;  // sent time of the last answered grant or keep-alive
  };
  std::optional<Bound> left_of(std::int64_t lease);
  // A keep-alive of `lease` sent at `sent` answered `ttl`: its entry, if it has one, counts from it.
  void refreshed(std::int64_t lease, std::chrono::seconds ttl, SteadyClock::time_point sent);

  Client& client_;
  service::Mutex mutex_;
  // By the TTL asked for, in whole seconds (etcd may grant more).
  std::map<std::int64_t, Entry> by_seconds_ DBLOCK_GUARDED_BY(mutex_);
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_LEASE_TABLE_H_
