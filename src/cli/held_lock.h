// src/cli/held_lock.h — what `dblock run` holds while COMMAND runs: one lease, several leases
// (taken all or none), or a session lock; and taking it.
//
// Thread safety: lost() and safe_until() may be called while the manager's renewal thread runs;
// everything else from the thread that owns the object.
#ifndef DBLOCK_CLI_HELD_LOCK_H_
#define DBLOCK_CLI_HELD_LOCK_H_

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dblock/lock_manager.h"
#include "run_options.h"

namespace dblock::cli {

class HeldLock {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~HeldLock() = default;
  // The fencing token of a single lease; nullopt for session locks and several leases.
  virtual std::optional<std::int64_t> fence() const = 0;
  // What COMMAND's environment gets ("DBLOCK_KEY=…", "DBLOCK_FENCE=…", …).
  virtual std::vector<std::string> environment() const = 0;
  // True once the lock (any of the leases) is known lost. Never goes back to false.
  virtual bool lost() const = 0;
  // Local steady_clock deadline past which lost() turns true without further news, if any.
  virtual std::optional<Clock::time_point> safe_until() const = 0;
  // Releases everything held; the worst outcome (in doubt, then already lost). Never throws for
  // service failures.
  virtual ReleaseResult release() = 0;
};

// True for the environment entries run sets for COMMAND (an inherited one is dropped):
// DBLOCK_FENCE, DBLOCK_KEY, DBLOCK_SESSION_KEY, DBLOCK_KEY_COUNT, DBLOCK_KEY_<i>, DBLOCK_FENCE_<i>.
bool is_run_variable(std::string_view entry);

// One acquisition on `m` of `o.keys` in `o`'s mode, waiting up to `wait` in all: the lock, or null
// when not acquired. `on_lost` gets each lost lease.
std::unique_ptr<HeldLock> acquire_with(LockManager& m, const RunOptions& o, std::chrono::milliseconds wait,
                                       const std::function<void(const LostLease&)>& on_lost);

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_HELD_LOCK_H_
