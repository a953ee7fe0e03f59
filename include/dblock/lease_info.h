// dblock/lease_info.h — the values the API hands out about leases: what list()/inspect() report,
// the force-release record, and the owner secret a lease is held by.
//
// Plain values: copyable, no hidden state, safe to share between threads once made.
#ifndef DBLOCK_LEASE_INFO_H_
#define DBLOCK_LEASE_INFO_H_

#include <array>
#include <cstdint>
#include <string>

#include "dblock/options.h"

namespace dblock {

// 128 bits from the operating system's CSPRNG, one per acquisition. Proves ownership to the
// service; never logged or shown by list/inspect.
struct OwnerSecret {
  std::array<std::uint8_t, 16> bytes{};

  // Reads getrandom(2). Throws Error if the OS generator fails.
  static OwnerSecret generate();
  std::string hex() const;  // 32 lowercase hex digits
  friend bool operator==(const OwnerSecret&, const OwnerSecret&) = default;
};

// What keeps a lease alive on the service.
enum class LeaseBound {
  kTtl,      // a TTL on the service's clock, extended by renew()
  kSession,  // the client's session with the service: renew() confirms the session is alive
};

// What list()/inspect() report about one lock name. Times are on the service's clock.
struct LeaseInfo {
  std::string name;
  LockMode mode = LockMode::kExclusive;
  std::string holder;                 // exclusive holder, or readers' holders joined by ','
  std::int64_t fence = 0;             // exclusive: the holder's fence; shared: the newest reader's
  std::int64_t acquired_at_us = 0;    // service clock, microseconds since the Unix epoch
  std::int64_t expires_at_us = 0;     // service clock, microseconds since the Unix epoch
  std::int64_t expires_in_us = 0;     // expires_at_us minus the service's "now" when listed
  std::int64_t renewals = 0;
  int holders = 1;                    // number of readers for shared leases (permits held)
  int permits = 0;                    // a semaphore's N (AcquireRequest::permits), else 0
  int waiters = -1;                   // live waiters in the service's line (FairQueue); -1 unknown
  // What ends the holders' hold: kTtl, the time expires_at_us says; kSession, the holders'
  // sessions with the service (ZooKeeper's nodes), whose end the service cannot tell in advance:
  // expires_at_us and expires_in_us are 0.
  LeaseBound bound = LeaseBound::kTtl;
};

// One force-release as the service recorded it (LockManager::force_release_history). Times are on
// the service's clock.
struct ForceReleaseRecord {
  std::string name;
  std::int64_t at_us = 0;       // service clock, microseconds since the Unix epoch
  std::string by;               // the holder string of the manager that forced it (its own claim)
  std::string by_account;       // the database account it was connected as ("" where none)
  std::string evicted;          // the evicted holder; shared: the readers' holders joined by ','
  LockMode mode = LockMode::kExclusive;
  std::int64_t old_fence = 0;   // the evicted lease's fence (shared: the newest reader's)
  std::int64_t new_fence = 0;   // the name's fence after the eviction
};

}  // namespace dblock

#endif  // DBLOCK_LEASE_INFO_H_
