// How a blocked acquire waits between two attempts: one strategy per capability of the service.
// Internal.
//
//   service has        strategies, tried in order until one says "attempt"
//   WakeEvents         EventWait: sleep until an event (a grant ends the wait with the lease)
//   otherwise          NativeTurnWait (NativeWait; a grant ends the wait with the lease),
//                      ProbeWait (HolderProbe; first in line, or not queued),
//                      BackoffWait (always last)
//
// Every strategy sleeps on the manager's WakeBoard (so releases in this process wake it at once),
// never past the caller's deadline nor the time the waiter's queue entry must be refreshed, and
// throws UsageError when the manager shuts down. Thread-safe: a strategy keeps no state of its
// own; the waiter's state is the WaitContext it is handed.
#ifndef DBLOCK_SRC_CORE_WAIT_STRATEGY_H_
#define DBLOCK_SRC_CORE_WAIT_STRATEGY_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dblock/options.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/lease_service.h"
#include "lease_state.h"
#include "wake_board.h"

namespace dblock::detail {

// One waiter between two attempts, as the last attempt left it.
struct WaitContext {
  WaitContext(const std::string& name_in, const OwnerSecret& secret_in) : name(name_in), secret(secret_in) {}

  const std::string& name;
  const OwnerSecret& secret;
  std::int64_t ticket = 0;                          // FairQueue ticket; 0: not queued
  int position = -1;                                // live waiters ahead; -1: unknown
  std::chrono::milliseconds holder_remaining{-1};   // -1: unknown
  SteadyClock::time_point deadline;                 // the caller's
  SteadyClock::time_point refresh_at;               // attempt again by then (queue entry); max(): no queue
  std::uint64_t generation = 0;                     // the board's, taken before the last attempt
  std::chrono::microseconds backoff{0};             // the plain pause; doubles while nothing happens
  std::optional<LeaseGrant> grant;                  // set when a release granted this waiter the lease
  bool grant_confirmed = false;                     // the grant came from the service's own reply, not an event
  std::stop_token stop;                             // the caller's (AcquireOptions::stop): a request ends the wait
};

enum class WaitResult {
  kAttempt,  // attempt now (with context.grant, if set, instead of asking the service)
  kPass,     // this strategy does not apply now: try the next one
};

class WaitStrategy {
 public:
  virtual ~WaitStrategy() = default;
  virtual WaitResult wait(WaitContext& context) = 0;
};

// The strategies for `service`, in order. The last one always returns kAttempt.
std::vector<std::unique_ptr<WaitStrategy>> make_wait_strategies(LeaseService& service, WakeBoard& board,
                                                                const ManagerOptions& options);

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_WAIT_STRATEGY_H_
