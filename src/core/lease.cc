#include "dblock/lease.h"

#include "dblock/errors.h"
#include "manager_core.h"

namespace dblock {

Lease::Lease(std::shared_ptr<detail::ManagerCore> core, std::shared_ptr<detail::LeaseState> state)
    : core_(std::move(core)), state_(std::move(state)) {}

Lease::Lease(Lease&& other) noexcept
    : core_(std::move(other.core_)),
      state_(std::move(other.state_)),
      released_(other.released_),
      release_result_(other.release_result_) {
  other.released_ = false;
}

Lease& Lease::operator=(Lease&& other) noexcept {
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

Lease::~Lease() {
  if (!held()) return;
  try {
    release();
  } catch (...) {
    // release() reports backend failures itself; nothing may escape a destructor.
  }
}

bool Lease::held() const noexcept { return state_ != nullptr && !released_; }

namespace {
const detail::LeaseState& require(const std::shared_ptr<detail::LeaseState>& state) {
  if (!state) throw UsageError("empty Lease handle");
  return *state;
}
}  // namespace

const std::string& Lease::name() const { return require(state_).name; }
LockMode Lease::mode() const { return require(state_).mode; }
std::int64_t Lease::fence() const { return require(state_).fence; }
std::chrono::milliseconds Lease::ttl() const { return require(state_).ttl; }
std::int64_t Lease::expires_at_us() const { return require(state_).expires_at_us.load(); }
std::chrono::steady_clock::time_point Lease::safe_until() const { return require(state_).safe_until(); }
bool Lease::lost() const { return released_ || require(state_).is_lost(); }
const OwnerSecret& Lease::state_secret() const { return require(state_).secret; }
int Lease::hold_count() const { return released_ ? 0 : require(state_).holds.load(); }

ReleaseResult Lease::release() {
  require(state_);
  if (released_) return release_result_;
  release_result_ = core_->release_hold(state_);
  released_ = true;
  return release_result_;
}

}  // namespace dblock
