#include "dblock/session_lock.h"

#include "dblock/errors.h"
#include "manager_core.h"

namespace dblock {

SessionLock::SessionLock(std::shared_ptr<detail::ManagerCore> core, std::shared_ptr<detail::SessionState> state)
    : core_(std::move(core)), state_(std::move(state)) {}

SessionLock::SessionLock(SessionLock&& other) noexcept
    : core_(std::move(other.core_)),
      state_(std::move(other.state_)),
      released_(other.released_),
      release_result_(other.release_result_) {
  other.released_ = false;
}

SessionLock& SessionLock::operator=(SessionLock&& other) noexcept {
  if (this != &other) {
    if (held()) {
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

SessionLock::~SessionLock() {
  if (!held()) return;
  try {
    release();
  } catch (...) {
  }
}

namespace {
const detail::SessionState& require(const std::shared_ptr<detail::SessionState>& state) {
  if (!state) throw UsageError("empty SessionLock handle");
  return *state;
}
}  // namespace

bool SessionLock::held() const noexcept { return state_ != nullptr && !released_; }
const std::string& SessionLock::name() const { return require(state_).name; }
LockMode SessionLock::mode() const { return require(state_).mode; }
std::int64_t SessionLock::key() const { return require(state_).key; }
bool SessionLock::lost() const { return released_ || require(state_).lost.load(); }

ReleaseResult SessionLock::release() {
  require(state_);
  if (released_) return release_result_;
  release_result_ = core_->release_session(state_);
  released_ = true;
  return release_result_;
}

}  // namespace dblock
