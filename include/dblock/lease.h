// dblock/lease.h — a held lock: RAII handle with fence, expiry, safe-until and a lost flag.
//
// A Lease is move-only. Destroying a held Lease releases it (errors go to
// ManagerOptions::on_background_error). One Lease object must not be used from two threads at
// once without external synchronisation; lost(), fence() and the accessors are safe to call
// concurrently with the renewal thread.
#ifndef DBLOCK_LEASE_H_
#define DBLOCK_LEASE_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "dblock/options.h"

namespace dblock {

struct OwnerSecret;
class LockManager;

namespace detail {
struct LeaseState;
class ManagerCore;
struct LeaseAccess;
}  // namespace detail

enum class ReleaseResult {
  kReleased,     // the backend confirmed the release
  kAlreadyLost,  // the lease was no longer ours (expired, taken over, force-released): nothing changed
  kInDoubt,      // the connection broke: the release may or may not have happened. The lease will
                 // expire on its own at the latest at its backend expiry.
};

const char* to_string(ReleaseResult result) noexcept;

class Lease {
 public:
  Lease() = default;  // an empty handle: held() is false
  Lease(Lease&&) noexcept;
  Lease& operator=(Lease&&) noexcept;  // releases the lease held before, if any
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease();  // noexcept: releases if still held

  // True until release() or a move-from. A held lease may still be lost(): check that too.
  bool held() const noexcept;
  explicit operator bool() const noexcept { return held(); }

  // REQUIRES: held() or released by release() (values stay readable after release).
  const std::string& name() const;
  LockMode mode() const;
  // Fencing token: strictly greater than every token issued before for this name; stable across
  // renewals (and shared by reentrant holds). Pass it to the resource you write to.
  std::int64_t fence() const;
  std::chrono::milliseconds ttl() const;

  // Backend-clock expiry of the last successful acquire/renewal, as the backend reported it
  // (microseconds since the Unix epoch on the *backend's* clock; informational only).
  std::int64_t expires_at_us() const;
  // Local, conservative deadline on steady_clock: the lease counts as lost after it whatever the
  // renewal thread believes. Moves forward with each successful renewal.
  std::chrono::steady_clock::time_point safe_until() const;
  // True once the lease is known lost or safe_until() has passed. Never goes back to false.
  bool lost() const;
  // Number of reentrant holds sharing this lease (1 without reentrancy).
  int hold_count() const;

  // Releases this hold. With reentrancy, only the last hold releases in the backend (earlier ones
  // return kReleased). Idempotent: a second call returns the first call's result again. Blocks for
  // one backend round trip. Does not throw for backend failures (they become kInDoubt and are also
  // reported to on_background_error); throws UsageError on an empty handle.
  ReleaseResult release();

 private:
  friend class detail::ManagerCore;
  friend class LockManager;
  friend struct detail::LeaseAccess;  // a service's interop code (src/core/lease_access.h)
  const OwnerSecret& state_secret() const;
  Lease(std::shared_ptr<detail::ManagerCore> core, std::shared_ptr<detail::LeaseState> state);

  std::shared_ptr<detail::ManagerCore> core_;
  std::shared_ptr<detail::LeaseState> state_;
  bool released_ = false;
  ReleaseResult release_result_ = ReleaseResult::kReleased;
};

}  // namespace dblock

#endif  // DBLOCK_LEASE_H_
