// dblock/service/capabilities.h — the optional capabilities a lock service may provide.
//
// A service that has one implements its interface and returns it from the matching
// LeaseService accessor (dblock/service/lease_service.h); the engine picks its waiting strategy, starts a
// reaper and offers session locks from what is there. Each interface is small and stands alone.
// Thread safety as for LeaseService: every method may be called from several threads at once.
//
//   capability    what the engine does with it                    SQLite  PostgreSQL  MariaDB
//   FairQueue     waiters queue; hand-offs go to the longest one   yes     yes         yes
//   WakeEvents    waiters sleep until the service pushes an event  -       yes         -
//   GrantEvents   a pushed grant is confirmed and taken as a lease  -       yes         -
//   NativeWait    waiters block inside the service                 yes     -           yes
//   HolderProbe   the first waiter polls a cheap read              yes     -           yes
//   Maintenance   migrations on open; a reaper thread              yes     yes         yes
//   SessionLocks  LockManager::session_lock                        -       yes         yes
//   MultiAcquire  acquire_all's names in one call, all or none     yes     yes         yes
//   SqlFeatures   guard, transaction/row locks, version CAS        yes     yes         yes
#ifndef DBLOCK_SERVICE_CAPABILITIES_H_
#define DBLOCK_SERVICE_CAPABILITIES_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "dblock/options.h"
#include "dblock/service/lease_service.h"

namespace dblock {

// A release handed the lease to the queued waiter with `ticket`: it holds it from the release on,
// with this fence, for `granted_for` (service clock; it may be shorter than the TTL asked for, and
// the holder renews it to that). The grantee needs no call of its own; a waiter that misses the
// grant (an event, or the end of a native wait) finds the lease its own on its next attempt.
struct LeaseGrant {
  std::int64_t ticket = 0;
  std::int64_t fence = 0;
  std::chrono::microseconds granted_for{0};
  std::int64_t expires_at_us = 0;
  std::uint32_t tag = 0;  // as AcquireResult::tag
};

// A line of waiters per name, kept by the service, so that a hand-off goes to the longest waiter
// rather than to whoever polls first (a releasing holder cannot take the name straight back).
// An entry lives for Place::hold_for unless the next attempt refreshes it: a dead waiter stops
// blocking the others on its own.
class FairQueue {
 public:
  struct Place {
    std::int64_t ticket = 0;  // from the previous Attempt, 0 before the first
    std::chrono::milliseconds hold_for{1'000};
  };
  struct Attempt {
    AcquireResult result;
    std::int64_t ticket = 0;  // this waiter's place in line (when not acquired)
    int position = -1;        // live waiters ahead of it (0: next in line), -1 unknown
  };
  struct Position {
    int waiters_ahead = 0;
    std::chrono::milliseconds holder_remaining{0};  // zero or negative: free
  };

  virtual ~FairQueue() = default;
  // One attempt by a waiter: acquires (as try_acquire) when no live waiter with an earlier ticket
  // is queued, otherwise joins the line (ticket 0) or refreshes its entry. A service may skip the
  // acquire half when it knows it would be refused; the engine attempts again as after any refusal.
  virtual Attempt attempt_in_line(const AcquireRequest& request, const Place& place) = 0;
  // The waiter gave up: leaves the line. A service that grants leases to waiters (LeaseGrant)
  // also releases a lease granted to this secret meanwhile.
  virtual void leave(std::string_view name, const OwnerSecret& secret) = 0;
  // Read-only: where a waiter stands. Lets a woken waiter that is not first go back to sleep
  // without writing.
  virtual Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) = 0;
};

// Events pushed by the service (LISTEN/NOTIFY, pub/sub, watches). An event is a hint to look
// again, never proof: anyone who can reach the channel can send one (any role can NOTIFY any
// channel, any client can PUBLISH). A kGranted event is acted on only by a service that has
// GrantEvents, and only once its confirm_grant() has found the lease held in the service's own
// state; elsewhere it is a hint like kReleased.
class WakeEvents {
 public:
  using Grant = LeaseGrant;
  enum class Kind {
    kReleased,  // the name may be free; `next_ticket` names whose turn it is (0: anyone's)
    kGranted,   // `grant` names the waiter that now holds the name
    kLost,      // the lease of `secret` on the name is gone (a session expired, say)
  };
  // Valid only during the listener call (views point into the service's buffers).
  struct Event {
    Kind kind = Kind::kReleased;
    std::string_view name;
    std::int64_t next_ticket = 0;
    std::optional<Grant> grant;             // kGranted
    const OwnerSecret* secret = nullptr;    // kLost
    std::string_view reason;                // kLost
  };
  using Listener = std::function<void(const Event& event)>;

  virtual ~WakeEvents() = default;
  // Starts delivering events to `listener`, from the service's own thread; nullptr stops. The
  // listener never blocks on the service.
  virtual void set_listener(Listener listener) = 0;
  // Brackets a waiter's interest in `name` (counted). A service that reconnects its event
  // channel sends a kReleased for every subscribed name, as events may have been missed.
  virtual void subscribe(std::string_view name) = 0;
  virtual void unsubscribe(std::string_view name) = 0;
};

// A service whose release hands the lease to the next waiter and says so on its event channel
// (WakeEvents' kGranted): the check that makes such a claim a lease.
class GrantEvents {
 public:
  virtual ~GrantEvents() = default;
  // Reads the service's state: does `secret` hold `name` exclusively and live? Returns the lease
  // as the service has it (fence, expiry, and as granted_for the time it has left, measured after
  // this call began), or nullopt. `claimed` is what the event said; only its ticket and tag are
  // kept. Called on the waiting thread.
  virtual std::optional<LeaseGrant> confirm_grant(std::string_view name, const OwnerSecret& secret,
                                                  const LeaseGrant& claimed) = 0;
};

// A blocking wait inside the service until it may be this waiter's turn (MariaDB: a server-side
// loop blocked in GET_LOCK on a beacon the holder's manager keeps while it holds the lease).
class NativeWait {
 public:
  enum class Outcome {
    kWoken,        // attempt now: the name is free and no earlier waiter is live, or max_wait passed
    kGranted,      // a release made this waiter the holder: `grant`
    kUnavailable,  // nothing to block on (no beacon held): the engine polls instead
  };
  struct Turn {
    Outcome outcome = Outcome::kUnavailable;
    std::optional<LeaseGrant> grant;  // with kGranted
  };
  virtual ~NativeWait() = default;
  // `ticket` is the waiter's FairQueue ticket (0: not queued). Blocks up to `max_wait`. Uses a
  // connection of its own for the duration. A grant reported here was made after the waiter's
  // last attempt began (that attempt would otherwise have found the lease its own).
  virtual Turn wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                             std::chrono::milliseconds max_wait) = 0;
};

// A cheap read-only probe the first waiter in line polls between attempts instead of writing.
class HolderProbe {
 public:
  virtual ~HolderProbe() = default;
  // The current holder's remaining time on the service's clock; zero or negative when free, or
  // when `waiter` holds it (a release granted it the lease: its next attempt finds it its own).
  virtual std::chrono::milliseconds holder_remaining(std::string_view name, const OwnerSecret& waiter) = 0;
};

// Schema and garbage of services that keep lock state in tables.
class Maintenance {
 public:
  virtual ~Maintenance() = default;
  // Applies pending migrations under the service's migration lock (create = true), or only
  // checks that the schema is present and not newer than this library. Throws SchemaError.
  virtual void migrate(bool create) = 0;
  // Highest applied migration number, 0 when none.
  virtual int schema_version() = 0;
  // Deletes at most `batch` expired entries; returns how many. Never touches a live lease. The
  // engine runs it from its reaper thread, in bounded, paced batches.
  virtual std::size_t reap(std::size_t batch) = 0;
  // Read-only: how long ago (service clock) the oldest expired entry that reap() would delete
  // expired; nullopt when there is none. A reaper that keeps up keeps it near reaper_interval.
  virtual std::optional<std::chrono::microseconds> oldest_unreaped() = 0;
};

// Several leases taken in one call, all or none (Redis: one script; the SQL services: one
// transaction). The engine makes acquire_all's first attempt with it; when it is refused, the
// engine takes the names one by one in sorted order (waiting as acquire does, in each name's
// line). Not used for names this thread already holds.
class MultiAcquire {
 public:
  virtual ~MultiAcquire() = default;
  // Every request at once: a result per request, in request order, each acquired; or an empty
  // vector when any name is held elsewhere or has live waiters in line (nothing is taken then).
  // Idempotent per secret, like LeaseService::try_acquire; the requests' names are distinct.
  virtual std::vector<AcquireResult> try_acquire_all(const std::vector<AcquireRequest>& requests) = 0;
};

// The record a service keeps of every force-release (written by force_release itself).
class AuditLog {
 public:
  virtual ~AuditLog() = default;
  // Newest first, at most `limit` (the engine passes at most 1 000 000); of every name, or of
  // `name` only.
  virtual std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) = 0;
};

// A lock held by one service session (connection): PostgreSQL pg_advisory_lock, MariaDB GET_LOCK.
// It lives exactly as long as that session. Owned by the engine's SessionLock; used by one thread
// at a time (the engine serialises calls).
class SessionLockHandle {
 public:
  virtual ~SessionLockHandle() = default;  // releases if still held, best effort; never throws
  // One round trip: does the session still hold the lock? False when the connection died or was
  // swapped (a pooler in transaction mode). Never throws.
  virtual bool verify() noexcept = 0;
  // True if the service confirmed the release, false if the session no longer held the lock.
  // Throws InDoubtError/ConnectionError when the outcome is unknown.
  virtual bool release() = 0;
  // The service's numeric key for the name, for code that takes the same lock directly
  // (PostgreSQL: the 64-bit advisory key); 0 when the service has none.
  virtual std::int64_t key() const = 0;
};

class SessionLocks {
 public:
  virtual ~SessionLocks() = default;
  // Returns nullptr when not acquired within `wait` (0: try once). Each held session lock has a
  // connection of its own, so two threads of one process contend like two processes. Throws
  // UnsupportedError for a mode the service lacks, UsageError behind a transaction pooler.
  virtual std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                                  std::chrono::milliseconds wait) = 0;
};

}  // namespace dblock

#endif  // DBLOCK_SERVICE_CAPABILITIES_H_
