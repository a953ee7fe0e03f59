// dblock/service/lease_service.h — the seam between dblock's lease engine and a lock service.
//
// Application code rarely needs this header. The engine (LockManager's core) owns everything that
// is the same for every service: validation, reentrancy, safe-until, the renewal thread, lost-lease
// signalling, waiting and the reaper's pacing. A lock service (SQLite, PostgreSQL, MariaDB, ...)
// contributes only what differs: the small required interface below, plus whichever optional
// capabilities it has (dblock/service/capabilities.h, dblock/sql/features.h). docs/architecture.md draws the
// layers and says where a new service goes.
//
// Contract for implementers:
//  * Every method may be called concurrently from several threads (user threads, the renewal
//    thread, the reaper thread). A service synchronises its own connections.
//  * Times that decide ownership (expiry) are computed on the *service's* clock, inside the call
//    that changes the lease. The engine never sends its own wall-clock time.
//  * Driver exceptions never escape: they are translated to the dblock::Error tree (errors.h).
//    A state-changing call whose outcome is unknown throws InDoubtError or ConnectionError.
//  * A service either provides a capability or does not: nothing is implemented only to throw.
#ifndef DBLOCK_SERVICE_LEASE_SERVICE_H_
#define DBLOCK_SERVICE_LEASE_SERVICE_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/lease_info.h"
#include "dblock/options.h"
#include "dblock/service/call_deadline.h"

namespace dblock {

class FairQueue;
class WakeEvents;
class GrantEvents;
class NativeWait;
class HolderProbe;
class Maintenance;
class AuditLog;
class MultiAcquire;
class SessionLocks;
class SqlFeatures;

// What a service is, beyond the calls it answers. Every service's fencing tokens only grow: each
// acquisition of a name gets a token greater than every earlier one (the conformance suite checks
// it); a service that cannot promise that is not a dblock service.
struct ServiceTraits {
  // kSession: a lease lives as long as its holder's session with the service (ZooKeeper's ephemeral
  // nodes); the expiry times it reports are 0, and the engine compares no clocks for it.
  LeaseBound bound = LeaseBound::kTtl;
  bool shared_leases = false;  // LockMode::kShared is accepted
  bool permits = false;        // AcquireRequest::permits is enforced (semaphores)
  bool hold_at_least = false;  // release() honours LeaseKey::hold_at_least (scheduled jobs)
};

// "As long as was asked": the default of AcquireResult/RenewResult::granted_for.
inline constexpr std::chrono::microseconds kGrantedAsAsked = std::chrono::microseconds::max();

struct AcquireRequest {
  std::string_view name;
  LockMode mode = LockMode::kExclusive;
  std::chrono::milliseconds ttl{0};
  const OwnerSecret* secret = nullptr;
  std::string_view holder;
  // 0: no limit. N > 0 (mode is then kShared): a permit of a semaphore of N. The service grants it
  // only while fewer than N shared holders of the name are live, deciding that atomically with
  // the grant, and stores N with the name (LeaseInfo::permits). A shared acquire that finds live
  // shared holders granted under another limit (0 included) throws UsageError naming both: while
  // held, a name is a semaphore or a read-write lock, not both. Exclusive holders are waited for.
  int permits = 0;
  // 0, or a scheduled job's window (AcquireOptions::hold_at_least), as LeaseKey::hold_at_least
  // will say at release. For a service that must note the acquisition's time on its own clock
  // then (ZooKeeper stamps a waiter's node when it is granted); the others ignore it.
  std::chrono::milliseconds hold_at_least{0};
};

struct AcquireResult {
  bool acquired = false;
  std::int64_t fence = 0;          // valid when acquired
  std::int64_t expires_at_us = 0;  // service clock; valid when acquired
  // How long the service holds the lease, counted from when the request was sent. The engine
  // uses the smaller of this and the TTL asked for (a ZooKeeper session can be shorter).
  std::chrono::microseconds granted_for = kGrantedAsAsked;
  // Opaque to the engine: passed back unchanged in every LeaseKey of this acquisition.
  std::uint32_t tag = 0;
  // When not acquired: how long until the current hold expires on the service's clock, or -1
  // when unknown. A waiter never sleeps past it, so an abandoned lease is taken over promptly.
  std::chrono::milliseconds holder_remaining{-1};
};

struct RenewResult {
  bool renewed = false;            // false: the service no longer has this owner's lease
  std::int64_t expires_at_us = 0;  // service clock
  std::chrono::microseconds granted_for = kGrantedAsAsked;  // as in AcquireResult
};

// One acquisition, as the engine names it in every later call about it.
struct LeaseKey {
  std::string_view name;
  LockMode mode = LockMode::kExclusive;
  const OwnerSecret* secret = nullptr;
  std::uint32_t tag = 0;  // AcquireResult::tag (or WakeEvents::Grant::tag) of this acquisition
  int permits = 0;        // AcquireRequest::permits of this acquisition
  // release() only (exclusive leases): 0, or keep the name held by nobody until the lease's
  // acquired_at + this on the service's clock when that is still ahead (see ServiceTraits).
  std::chrono::milliseconds hold_at_least{0};
};

class LeaseService {
 public:
  virtual ~LeaseService() = default;

  // Short lower-case name ("sqlite", "postgresql", ...), used in messages and Error::backend().
  virtual std::string_view name() const = 0;
  virtual ServiceTraits traits() const = 0;

  // One attempt; never blocks on the lock itself (it may block briefly on the service). Takes a
  // free or expired lease, or one this secret already holds live (so that a retried attempt whose
  // reply was lost is harmless).
  virtual AcquireResult try_acquire(const AcquireRequest& request) = 0;
  // Extends the lease to now + ttl (service clock) if this owner still holds it unexpired.
  virtual RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) = 0;
  // Compare-and-delete: true if this owner's lease was released, false if it was not held by
  // this owner any more (expired, taken over, force-released). Throws InDoubtError when the
  // outcome is unknown. With `lease.hold_at_least` and acquired_at + hold_at_least still ahead on
  // the service's clock, the lease is not deleted but disowned (no owner can renew it or write
  // under it) and left to expire then; nobody is handed it before.
  virtual bool release(const LeaseKey& lease) = 0;
  // The engine gave the lease up without releasing it (safe-until passed, a renewal was refused,
  // a lost event) and its holder has since let go of it (released its last hold or dropped the
  // handle): drop whatever the service keeps for it, so that it does not block the name for
  // longer than the service's own expiry would. Never called while the holder may still act on
  // the lease: until then a lost lease stays where it is on the service and ends by the service's
  // own expiry. Called at most once per lease, never after release(), on the thread that let go,
  // under the least call deadline (call_deadline()). Must not block for long.
  virtual void lease_lost(const LeaseKey& lease) noexcept = 0;
  // Admin eviction: frees the name whoever holds it and bumps its fence, so the evicted holder's
  // renewals and guarded writes fail. `by` is the forcing manager's holder string; a service with
  // an AuditLog records the eviction with it, atomically with the eviction. Returns false if
  // nothing was held (and records nothing).
  virtual bool force_release(std::string_view name, std::string_view by) = 0;
  // Live leases (all, or the one name). Expired ones not yet reaped are not shown.
  virtual std::vector<LeaseInfo> list(std::optional<std::string_view> name) = 0;

  // What this service runs without that it normally uses, one sentence each (its wake-up file
  // could not be made, say): slower, never less safe. The manager reports each once, when it is
  // built, as a DegradedError through on_background_error. Called once, from the manager's
  // constructor.
  virtual std::vector<std::string> degraded() const { return {}; }

  // Optional capabilities (dblock/service/capabilities.h, dblock/sql/features.h). Each returns this
  // service's implementation, valid for the service's lifetime, or nullptr when it has none.
  virtual FairQueue* fair_queue() noexcept { return nullptr; }
  virtual WakeEvents* wake_events() noexcept { return nullptr; }
  virtual GrantEvents* grant_events() noexcept { return nullptr; }
  virtual NativeWait* native_wait() noexcept { return nullptr; }
  virtual HolderProbe* holder_probe() noexcept { return nullptr; }
  virtual Maintenance* maintenance() noexcept { return nullptr; }
  virtual AuditLog* audit_log() noexcept { return nullptr; }
  virtual MultiAcquire* multi_acquire() noexcept { return nullptr; }
  virtual SessionLocks* session_locks() noexcept { return nullptr; }
  virtual SqlFeatures* sql_features() noexcept { return nullptr; }
};

}  // namespace dblock

#endif  // DBLOCK_SERVICE_LEASE_SERVICE_H_
