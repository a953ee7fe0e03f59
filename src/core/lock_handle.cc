// LockHandle, for the two kinds of held lock.
#include "dblock/lock_handle.h"

#include "dblock/errors.h"
#include "manager_core.h"

namespace dblock::detail {

namespace {

ReleaseResult release_in(ManagerCore& core, const std::shared_ptr<LeaseState>& state) {
  return core.release_hold(state);
}
ReleaseResult release_in(ManagerCore& core, const std::shared_ptr<SessionState>& state) {
  return core.release_session(state);
}

const char* handle_name(const LeaseState*) { return "Lease"; }
const char* handle_name(const SessionState*) { return "SessionLock"; }

}  // namespace

template <class State>
LockHandle<State>::LockHandle(std::shared_ptr<ManagerCore> core, std::shared_ptr<State> state)
    : core_(std::move(core)), state_(std::move(state)) {}

template <class State>
LockHandle<State>::LockHandle(LockHandle&& other) noexcept
    : core_(std::move(other.core_)),
      state_(std::move(other.state_)),
      released_(other.released_),
      release_result_(other.release_result_) {
  other.released_ = false;
}

template <class State>
LockHandle<State>& LockHandle<State>::operator=(LockHandle&& other) noexcept {
  if (this != &other) {
    if (unreleased()) {
      try {
        release();
      } catch (...) {
      }
    }
    core_ = std::move(other.core_);
    state_ = std::move(other.state_);
    released_ = other.released_;
    release_result_ = other.release_result_;
    other.released_ = false;
  }
  return *this;
}

template <class State>
LockHandle<State>::~LockHandle() {
  if (!unreleased()) return;  // released, moved from, or released by the manager's shutdown
  try {
    release();
  } catch (...) {
    // release() reports backend failures itself; nothing may escape a destructor.
  }
}

template <class State>
bool LockHandle<State>::unreleased() const noexcept {
  return state_ != nullptr && !released_ && !state_->shut_down.load(std::memory_order_acquire);
}

template <class State>
bool LockHandle<State>::held() const noexcept {
  return unreleased() && !state_->is_lost();
}

template <class State>
bool LockHandle<State>::shut_down() const noexcept {
  return state_ != nullptr && state_->shut_down.load(std::memory_order_acquire);
}

template <class State>
const State& LockHandle<State>::state() const {
  if (!state_) throw UsageError(std::string("empty ") + handle_name(static_cast<const State*>(nullptr)) + " handle");
  return *state_;
}

template <class State>
ReleaseResult LockHandle<State>::release() {
  state();
  if (released_) return release_result_;
  release_result_ = release_in(*core_, state_);
  released_ = true;
  return release_result_;
}

template class LockHandle<LeaseState>;
template class LockHandle<SessionState>;

}  // namespace dblock::detail
