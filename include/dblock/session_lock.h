// dblock/session_lock.h — a lock that lives exactly as long as a database session.
//
// PostgreSQL advisory locks (pg_advisory_lock family) and MySQL GET_LOCK. No TTL, no renewal, no
// fence: the lock dies with its connection, which is both its strength (a crashed process frees it
// at once) and its weakness (a dropped connection or a transaction-mode pooler frees it silently —
// dblock refuses poolers and checks the session periodically, see LockManager::session_lock).
//
// A SessionLock is move-only; destroying a held one releases it. Lifetime: it may outlive its
// LockManager; ~LockManager releases it first (shut_down() and lost() say so, held() is false,
// release() returns kShutDown). lost() may be called from any
// thread; release() from one thread at a time.
#ifndef DBLOCK_SESSION_LOCK_H_
#define DBLOCK_SESSION_LOCK_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dblock/lease.h"
#include "dblock/options.h"

namespace dblock {

namespace detail {
struct SessionState;
class ManagerCore;
}  // namespace detail

struct SessionLockOptions {
  LockMode mode = LockMode::kExclusive;
  // Called once, on the manager's renewal thread, when a periodic check finds the session gone.
  std::function<void(const LostLease&)> on_lost;
};

class SessionLock : public detail::LockHandle<detail::SessionState> {
 public:
  SessionLock() = default;  // an empty handle: held() is false
  // Moves, held(), release(): see LockHandle. release() returns kInDoubt when the connection
  // broke during the call (the server frees the lock when it notices the session is gone).

  const std::string& name() const;
  LockMode mode() const;
  // The backend's key for the name (PostgreSQL: the 64-bit advisory key, see README).
  std::int64_t key() const;
  // True once a check found the session gone (connection lost or swapped). Never goes back.
  bool lost() const;

 private:
  friend class detail::ManagerCore;
  using LockHandle::LockHandle;
};

}  // namespace dblock

#endif  // DBLOCK_SESSION_LOCK_H_
