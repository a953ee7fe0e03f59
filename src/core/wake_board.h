// In-process wake-ups for the waiters of one manager, per lock name: a release in this process
// or a service event bumps the name's generation and wakes its sleeping waiters. Internal.
//
// Thread-safe. Lock order: ManagerCore::mutex_ may be held when calling in, never the reverse.
#ifndef DBLOCK_SRC_CORE_WAKE_BOARD_H_
#define DBLOCK_SRC_CORE_WAKE_BOARD_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "dblock/service/capabilities.h"
#include "dblock/service/thread_annotations.h"
#include "lease_state.h"

namespace dblock::detail {

class WakeBoard {
 public:
  // A waiter's interest in `name`, counted; the name's entry lives while anyone waits.
  void enter(const std::string& name);
  void leave(const std::string& name);

  // Wakes every waiter of `name`. `next_ticket` names whose turn it is (0: anyone's).
  void bump(const std::string& name, std::int64_t next_ticket = 0);
  // Keeps `grant` for its waiter (one slot per name: until the grantee takes it no other grant
  // of the name can follow) and wakes the name's waiters. Ignored when nobody here waits.
  void post_grant(const std::string& name, const LeaseGrant& grant);

  // The name's generation now: pass it to wait().
  std::uint64_t generation(const std::string& name);
  // Sleeps until the name's generation differs from `seen` (then updates `seen` and returns
  // true) or `until` passes (false). Throws UsageError once stop() was called.
  bool wait(const std::string& name, std::uint64_t& seen, SteadyClock::time_point until);
  // The grant posted for `ticket`, taken (nullopt when none).
  std::optional<LeaseGrant> take_grant(const std::string& name, std::int64_t ticket);
  // Whose turn the last bump of `name` named (0: anyone's).
  std::int64_t next_ticket(const std::string& name);

  // Wakes every waiter for good: their wait() throws. Idempotent.
  void stop();
  // Throws UsageError once stop() was called.
  void check_running();

 private:
  struct Entry {
    std::uint64_t generation = 0;  // bumped whenever the name may have become free
    std::int64_t next_ticket = 0;  // from the last bump
    std::optional<LeaseGrant> grant;
    int waiters = 0;
  };

  service::Mutex mutex_;
  std::condition_variable cv_;
  std::unordered_map<std::string, Entry> entries_ DBLOCK_GUARDED_BY(mutex_);
  bool stopped_ DBLOCK_GUARDED_BY(mutex_) = false;
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_WAKE_BOARD_H_
