// dblock/lease.h — a held lock: RAII handle with fence, expiry, safe-until and a lost flag.
//
// held() is "I may act as the holder now": false once the lease is lost (lost() says so too) or
// released. Check it, or lost(), before each write the lease protects, and pass fence() along.
//
// A Lease is move-only (dblock/lock_handle.h). Destroying a held Lease releases it (errors go to
// ManagerOptions::on_background_error). Lifetime: a Lease may outlive its LockManager (it keeps the
// engine alive); ~LockManager releases it first, and the handle then says shut_down() and lost(),
// held() is false, release() returns kShutDown, and name(), fence() and the other values stay
// readable. One Lease object must not be used from two threads at
// once without external synchronisation; lost(), fence() and the accessors are safe to call
// concurrently with the renewal thread.
#ifndef DBLOCK_LEASE_H_
#define DBLOCK_LEASE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "dblock/lock_handle.h"
#include "dblock/options.h"

namespace dblock {

struct OwnerSecret;
class LockManager;

namespace detail {
struct LeaseState;
class ManagerCore;
}  // namespace detail

class Lease : public detail::LockHandle<detail::LeaseState> {
 public:
  Lease() = default;  // an empty handle: held() is false
  // Moves, held(), release(): see LockHandle. release() of a reentrant lease releases this hold;
  // only the last hold releases in the backend (earlier ones return kReleased).

  // REQUIRES: a handle that was acquired (values stay readable after a loss or a release).
  const std::string& name() const;
  LockMode mode() const;
  // Fencing token: strictly greater than every token issued before for this name; stable across
  // renewals (and shared by reentrant holds). Pass it to the resource you write to.
  std::int64_t fence() const;
  std::chrono::milliseconds ttl() const;

  // Backend-clock expiry of the last successful acquire/renewal, as the backend reported it
  // (microseconds since the Unix epoch on the *backend's* clock; informational only).
  std::int64_t expires_at_us() const;
  // Local, conservative deadline: the lease counts as lost after it whatever the renewal thread
  // believes. Moves forward with each successful renewal. Kept on CLOCK_BOOTTIME, which counts
  // time the machine spent suspended (steady_clock does not: a client resumed after a suspend
  // longer than its TTL would otherwise believe a lease safe that the service expired), and
  // returned as a steady_clock point: now plus what is left, in the past once it has passed.
  std::chrono::steady_clock::time_point safe_until() const;
  // True once the lease is known lost or safe_until() has passed. Never goes back to false.
  bool lost() const;
  // Number of reentrant holds sharing this lease (1 without reentrancy).
  int hold_count() const;
  // The 128-bit secret this lease proves its ownership with (dblock/lease_info.h), for code that
  // checks the lease inside its own transaction (dblock/postgresql/interop.h does). The service
  // stores only its digest; never log it or pass it to anyone who is not the holder.
  const OwnerSecret& owner_secret() const;

 private:
  friend class detail::ManagerCore;
  friend class LockManager;
  using LockHandle::LockHandle;
};

}  // namespace dblock

#endif  // DBLOCK_LEASE_H_
