// The locks `dblock run` holds: one lease, several leases, or a session lock.
#include "held_lock.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "dblock/session_lock.h"

namespace dblock::cli {
namespace {

class HeldLease final : public HeldLock {
 public:
  explicit HeldLease(Lease lease) : lease_(std::move(lease)) {}
  std::optional<std::int64_t> fence() const override { return lease_.fence(); }
  std::vector<std::string> environment() const override {
    return {"DBLOCK_KEY=" + lease_.name(), "DBLOCK_FENCE=" + std::to_string(lease_.fence())};
  }
  bool lost() const override { return lease_.lost(); }
  std::optional<Clock::time_point> safe_until() const override { return lease_.safe_until(); }
  ReleaseResult release() override { return lease_.release(); }

 private:
  Lease lease_;
};

// The worse of two release outcomes: in doubt, then already lost, then shut down, then released.
ReleaseResult worse(ReleaseResult a, ReleaseResult b) {
  auto rank = [](ReleaseResult r) {
    switch (r) {
      case ReleaseResult::kInDoubt: return 3;
      case ReleaseResult::kAlreadyLost: return 2;
      case ReleaseResult::kShutDown: return 1;
      case ReleaseResult::kReleased: return 0;
    }
    return 3;
  };
  return rank(a) >= rank(b) ? a : b;
}

// Several names, held together (acquire_all: sorted by name).
class HeldLeases final : public HeldLock {
 public:
  explicit HeldLeases(std::vector<Lease> leases) : leases_(std::move(leases)) {}
  std::optional<std::int64_t> fence() const override { return std::nullopt; }
  std::vector<std::string> environment() const override {
    std::vector<std::string> env{"DBLOCK_KEY_COUNT=" + std::to_string(leases_.size())};
    for (std::size_t i = 0; i < leases_.size(); ++i) {
      const std::string n = std::to_string(i + 1);
      env.push_back("DBLOCK_KEY_" + n + "=" + leases_[i].name());
      env.push_back("DBLOCK_FENCE_" + n + "=" + std::to_string(leases_[i].fence()));
    }
    return env;
  }
  bool lost() const override {
    return std::any_of(leases_.begin(), leases_.end(), [](const Lease& l) { return l.lost(); });
  }
  std::optional<Clock::time_point> safe_until() const override {
    Clock::time_point earliest = Clock::time_point::max();
    for (const Lease& l : leases_) earliest = std::min(earliest, l.safe_until());
    return earliest;
  }
  ReleaseResult release() override {
    ReleaseResult result = ReleaseResult::kReleased;
    for (auto it = leases_.rbegin(); it != leases_.rend(); ++it) result = worse(result, it->release());
    return result;
  }

 private:
  std::vector<Lease> leases_;
};

class HeldSession final : public HeldLock {
 public:
  explicit HeldSession(SessionLock lock, std::string key) : lock_(std::move(lock)), key_(std::move(key)) {}
  std::optional<std::int64_t> fence() const override { return std::nullopt; }
  std::vector<std::string> environment() const override {
    // No fence. A service without a numeric key (MariaDB's GET_LOCK takes the name) sets none.
    if (lock_.key() == 0) return {"DBLOCK_KEY=" + key_};
    return {"DBLOCK_KEY=" + key_, "DBLOCK_SESSION_KEY=" + std::to_string(lock_.key())};
  }
  bool lost() const override { return lock_.lost(); }
  std::optional<Clock::time_point> safe_until() const override { return std::nullopt; }
  ReleaseResult release() override { return lock_.release(); }

 private:
  SessionLock lock_;
  std::string key_;
};

}  // namespace

bool is_run_variable(std::string_view entry) {
  const std::string_view name = entry.substr(0, entry.find('='));
  if (name == "DBLOCK_FENCE" || name == "DBLOCK_KEY" || name == "DBLOCK_SESSION_KEY" || name == "DBLOCK_KEY_COUNT") {
    return true;
  }
  for (std::string_view stem : {"DBLOCK_KEY_", "DBLOCK_FENCE_"}) {  // DBLOCK_KEY_<i>, DBLOCK_FENCE_<i>
    if (name.size() > stem.size() && name.substr(0, stem.size()) == stem &&
        name.find_first_not_of("0123456789", stem.size()) == std::string_view::npos) {
      return true;
    }
  }
  return false;
}

std::unique_ptr<HeldLock> acquire_with(LockManager& m, const RunOptions& o, std::chrono::milliseconds wait,
                                       const std::function<void(const LostLease&)>& on_lost) {
  if (o.mode == RunMode::kSession) {
    // Fails early with UnsupportedError (exit 64) where the backend has no session locks (SQLite).
    m.require_session_locks();
    SessionLockOptions so;
    so.mode = LockMode::kExclusive;
    so.on_lost = on_lost;
    std::optional<SessionLock> lock = m.session_lock(o.keys.front(), wait, so);
    if (!lock) return nullptr;
    return std::make_unique<HeldSession>(std::move(*lock), o.keys.front());
  }
  AcquireOptions ao;
  ao.ttl = o.ttl;
  ao.mode = o.mode == RunMode::kShared ? LockMode::kShared : LockMode::kExclusive;
  ao.permits = o.permits;
  ao.hold_at_least = o.hold_at_least;
  ao.on_lost = on_lost;
  if (o.keys.size() > 1) {
    std::optional<std::vector<Lease>> leases = m.acquire_all(o.keys, wait, ao);
    if (!leases) return nullptr;
    return std::make_unique<HeldLeases>(std::move(*leases));
  }
  std::optional<Lease> lease = m.acquire(o.keys.front(), wait, ao);
  if (!lease) return nullptr;
  return std::make_unique<HeldLease>(std::move(*lease));
}

}  // namespace dblock::cli
