// Redlock: the Redis service's scripts over 3 or 5 independent masters. Internal; the public face
// is dblock/redis/redis.h (make_redlock_service, redlock:// URLs).
//
// Every call is sent to all nodes at once (each node's request written before any reply is read)
// and decided by a majority:
//  * acquire: held on a majority, within the validity window (TTL minus the time the round took
//    minus the drift allowance), else given back on every node. The engine's safe-until is that
//    window already (the send time plus the TTL minus its drift margin, the same ttl/100 + 2 ms),
//    so granted_for stays as asked.
//  * fences: each node draws its own (INCR floored at its clock); the lease's fence is the largest
//    drawn, and a second round raises the counter of every node the lease holds to it before the
//    lease is returned. Taking the largest alone is not safe: a later majority that misses the node
//    which drew it can draw a smaller one; with the second round every later majority shares a
//    node whose counter is already at least the fence.
//  * renew: extends on every node; a node that lost the key (a restart) is taken again and its
//    counter raised to the lease's fence; renewed while a majority holds it in time; refused
//    (lost) when a majority answered that it no longer holds it; otherwise a ConnectionError,
//    tried again until the lease's safe-until (a minority "not held" proves nothing: a node the
//    lease never took answers so while the others restart with their keys).
//  * release: a majority released: released; a majority answered "not held": already lost (the
//    lease was gone, whatever a minority still held); anything else: InDoubtError.
//  * every round asks all nodes at once (Node::Exchange) and ends as soon as the replies decide
//    it: a stopped or partitioned node holds up no other, and the validity window counts the
//    time the deciding majority took.
// No FairQueue (waiters are not in line on several nodes at once); every release announces the
// name on each node's channel and waiters sleep until then (EventWait), polling meanwhile. No
// shared leases. No single server clock: expires_at_us is 0, so the engine's clock-step check does
// not apply (Redlock assumes clocks that move at the same rate: README, "Redlock").
#ifndef DBLOCK_SRC_BACKENDS_REDIS_REDLOCK_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_REDIS_REDLOCK_SERVICE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dblock/redis/redis.h"
#include "dblock/service/capabilities.h"
#include "keys.h"
#include "node.h"
#include "subscriber.h"

namespace dblock::redis {

class RedlockService final : public LeaseService, public AuditLog {
 public:
  // `raise_fences` false leaves out the fence's second round: only for the test that shows why it
  // is needed.
  RedlockService(const std::vector<Options>& nodes, bool raise_fences = true);

  std::string_view name() const override { return "redlock"; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  void lease_lost(const LeaseKey& lease) noexcept override;
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  WakeEvents* wake_events() noexcept override { return events_ ? &*events_ : nullptr; }
  AuditLog* audit_log() noexcept override { return this; }

  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

 private:
  using Replies = std::vector<std::optional<Reply>>;  // per node; nullopt: no answer
  using Which = Script ScriptSet::*;
  // Whether the replies so far decide a round (the rest need not be awaited).
  using Decided = std::function<bool(const Replies&)>;

  LockKeys keys(std::string_view name) const { return LockKeys(prefix_, name); }
  std::size_t quorum() const { return nodes_.size() / 2 + 1; }
  // A round: sends `which` to the nodes marked in `to` (all when empty) at once, each on its own
  // connection (Node::Exchange), and reads the replies as they come, until every node answered,
  // `decided` says the replies so far decide, or `deadline` passes. A node that is slow to connect
  // or answer (stopped, partitioned) holds up no other: the round takes the time the nodes that
  // decide it take. Unanswered nodes are nullopt; `failures`, if given, gets why each failed.
  Replies on_nodes(Which which, const std::vector<std::string>& keys, const std::vector<std::string>& args,
                   SteadyClock::time_point deadline, const std::vector<bool>& to = {}, const Decided& decided = {},
                   std::vector<std::string>* failures = nullptr);
  // How many nodes answered (error replies included); how many said `value` (said()).
  static std::size_t answers(const Replies& replies);
  static std::size_t count_said(const Replies& replies, std::int64_t value);
  // Decides a round of `asked` nodes once a majority said `value`, or can no longer; a round of
  // fewer nodes than a majority once all of them answered.
  Decided reaching(std::size_t asked, std::int64_t value) const;
  // The least a round that only gives back is allowed (the caller's deadline may have passed).
  static constexpr std::chrono::milliseconds kLeastRoundTime{500};
  // Throws the error of an error reply a majority gave (a permission, a key that is no lock).
  void check_errors(const Replies& replies) const;
  // Raises the counters of the nodes marked in `held` to `fence`; how many did.
  std::size_t raise(const LockKeys& k, const OwnerSecret& secret, std::int64_t fence, const std::vector<bool>& held,
                    SteadyClock::time_point deadline);
  // Releases on every node; how many released, and how many answered "not held".
  std::pair<std::size_t, std::size_t> release_all(const LeaseKey& lease, bool latch, SteadyClock::time_point deadline);
  // Redlock's clock-drift allowance, ManagerOptions::drift_margin's default.
  std::chrono::milliseconds drift(std::chrono::milliseconds ttl) const { return ttl / 100 + std::chrono::milliseconds(2); }

  const std::string prefix_;
  const bool raise_fences_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::optional<Events> events_;
};

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_REDLOCK_SERVICE_H_
