// dblock/lock_handle.h — what Lease and SessionLock share: a move-only handle to one held lock
// that releases it when destroyed. Use those two; this base is not meant to be named.
//
// One handle must not be used from two threads at once without external synchronisation.
#ifndef DBLOCK_LOCK_HANDLE_H_
#define DBLOCK_LOCK_HANDLE_H_

#include <memory>

namespace dblock {

enum class ReleaseResult {
  kReleased,     // the backend confirmed the release
  kAlreadyLost,  // the lock was no longer ours (expired, taken over, force-released): nothing changed
  kInDoubt,      // the connection broke: the release may or may not have happened. A lease expires on
                 // its own at the latest at its backend expiry; a session lock when the server notices.
  kShutDown,     // the LockManager's shutdown (~LockManager) had released it already: no other holder
                 // was involved; the shutdown's own release reported any failure to on_background_error
};

const char* to_string(ReleaseResult result) noexcept;

namespace detail {

class ManagerCore;

// State: LeaseState or SessionState (defined in src/core, instantiated there for both).
template <class State>
class LockHandle {
 public:
  LockHandle() = default;  // an empty handle: held() is false
  LockHandle(LockHandle&& other) noexcept;
  LockHandle& operator=(LockHandle&& other) noexcept;  // releases the lock held before, if any
  LockHandle(const LockHandle&) = delete;
  LockHandle& operator=(const LockHandle&) = delete;
  ~LockHandle();  // noexcept: releases if still held

  // True while the lock is this handle's to act under: not released, moved from or released by
  // the LockManager's shutdown, and not lost (a lease past its safe-until, renewed in vain or
  // evicted; a session lock whose session ended). False from the moment it is lost, although the
  // handle still owes its release() (the destructor makes it), which then says kAlreadyLost.
  bool held() const noexcept;
  // True once the LockManager's shutdown released this lock (held() is false from then on;
  // release() returns kShutDown).
  bool shut_down() const noexcept;
  explicit operator bool() const noexcept { return held(); }

  // Releases the lock (for a reentrant lease: this hold). Idempotent: a second call returns the
  // first call's result again. Blocks for one backend round trip. Does not throw for backend
  // failures (they become kInDoubt and are also reported to on_background_error); throws
  // UsageError on an empty handle.
  ReleaseResult release();

 protected:
  friend class ManagerCore;
  LockHandle(std::shared_ptr<ManagerCore> core, std::shared_ptr<State> state);
  // True until release(), a move-from or the LockManager's shutdown: the release is still owed,
  // lost or not.
  bool unreleased() const noexcept;
  // Throws UsageError on an empty handle.
  const State& state() const;
  bool released() const noexcept { return released_; }
  const std::shared_ptr<State>& shared_state() const noexcept { return state_; }

 private:
  std::shared_ptr<ManagerCore> core_;
  std::shared_ptr<State> state_;
  bool released_ = false;
  ReleaseResult release_result_ = ReleaseResult::kReleased;
};

}  // namespace detail
}  // namespace dblock

#endif  // DBLOCK_LOCK_HANDLE_H_
