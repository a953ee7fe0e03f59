// The floor a process carries for the fences of a SQL service (docs/failover.md).
//
// A standby or replica promoted after its primary died may lack the last fences the primary
// issued (asynchronous replication), and its sequence would issue them again. So each SQL service
// floors its fence sequence on every connection it opens to a writable server, before the
// connection's first statement: above the server's clock in microseconds, and above the highest
// fence this process has been issued, which is what this class keeps. The clock floor covers a
// new primary whose clock agrees with the old one's to within the failover's duration; the
// carried floor covers this process's own fences whatever the clocks say.
#ifndef DBLOCK_SERVICE_SQL_CARRIED_FENCE_H_
#define DBLOCK_SERVICE_SQL_CARRIED_FENCE_H_

#include <atomic>
#include <cstdint>

namespace dblock::sql {

// Thread-safe. Relaxed: a floor raised a moment late only covers fewer fences, never more.
class CarriedFence {
 public:
  // Records a fence the service returned to this process.
  void saw(std::int64_t fence) noexcept {
    std::int64_t seen = highest_.load(std::memory_order_relaxed);
    while (fence > seen && !highest_.compare_exchange_weak(seen, fence, std::memory_order_relaxed)) {
    }
  }
  std::int64_t highest() const noexcept { return highest_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> highest_{0};
};

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_CARRIED_FENCE_H_
