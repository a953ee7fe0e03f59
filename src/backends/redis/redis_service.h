// The Redis lock service. Internal; the public face is dblock/redis/redis.h.
//
// Connections: the node's pool for the scripts (each used by one thread at a time) and one
// subscriber connection owned by the subscriber's thread. Every call is bounded by call_deadline()
// (at most kLongestCall ahead when the engine set none).
//
// The server's maxmemory-policy is checked at open and read again at most once a second by
// attempts and renewals: an evicting policy set later refuses attempts and loses held leases.
//
// Capabilities: FairQueue (the waiters' zset), WakeEvents (subscriber.h), MultiAcquire (one
// script), AuditLog (a stream the force-release script appends to). No Maintenance (keys expire on the server: nothing to reap,
// no schema), no HolderProbe (a release grants or names the next waiter), no SessionLocks, no
// SqlFeatures.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_REDIS_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_REDIS_REDIS_SERVICE_H_

#include <algorithm>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dblock/errors.h"
#include "dblock/redis/redis.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/thread_annotations.h"
#include "error_map.h"
#include "keys.h"
#include "node.h"
#include "subscriber.h"

namespace dblock::redis {

class RedisService final : public LeaseService,
                           public FairQueue,
                           public GrantEvents,
                           public MultiAcquire,
                           public AuditLog {
 public:
  // Connects, checks the server and loads the scripts. Throws as make_service() documents.
  explicit RedisService(const Options& options);

  std::string_view name() const override { return kServiceName; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  // Compare-and-delete, so that the name is free at once rather than when its PX ends.
  void lease_lost(const LeaseKey& lease) noexcept override;
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  FairQueue* fair_queue() noexcept override { return this; }
  WakeEvents* wake_events() noexcept override { return events_ ? &*events_ : nullptr; }
  GrantEvents* grant_events() noexcept override { return events_ ? this : nullptr; }
  AuditLog* audit_log() noexcept override { return this; }
  MultiAcquire* multi_acquire() noexcept override { return this; }

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;

  // One script over every name's keys (all in this one server; not for a Redis Cluster).
  std::vector<AcquireResult> try_acquire_all(const std::vector<AcquireRequest>& requests) override;

  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

  // Read by the subscriber: does `secret` hold `name` exclusively and live?
  std::optional<LeaseGrant> confirm_grant(std::string_view name, const OwnerSecret& secret,
                                          const LeaseGrant& claimed) override;

 private:
  const std::string& prefix() const { return node_.options().prefix; }
  LockKeys keys(std::string_view name) const { return LockKeys(prefix(), name); }
  Attempt attempt(const AcquireRequest& request, bool queue, const Place& place);
  bool release_script(const LeaseKey& lease, bool latch, std::optional<SteadyClock::time_point> deadline);

  // The server's maxmemory-policy when it is not noeviction, else "": read again (INFO memory, by
  // the call's deadline; no lock held meanwhile) when kPolicyCheckEvery passed since the last
  // read began, else as last read. Throws as Node calls.
  std::string evicting_policy();
  [[noreturn]] void refuse_evicting_policy(std::string_view policy) const;

  Node node_;
  std::optional<Events> events_;
  service::Mutex policy_mutex_;
  SteadyClock::time_point policy_checked_at_ DBLOCK_GUARDED_BY(policy_mutex_);
  std::string policy_ DBLOCK_GUARDED_BY(policy_mutex_);
  bool policy_reported_ DBLOCK_GUARDED_BY(policy_mutex_) = false;  // a renewal said so since the read
};

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_REDIS_SERVICE_H_
