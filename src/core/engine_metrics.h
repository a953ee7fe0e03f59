// The counters behind LockManager::metrics(). Internal.
//
// Thread-safety: every method may be called from any thread; updates are relaxed atomic
// increments (no lock, no allocation), so a snapshot taken while calls run may show one counter
// of a call moved and another not yet.
#ifndef DBLOCK_SRC_CORE_ENGINE_METRICS_H_
#define DBLOCK_SRC_CORE_ENGINE_METRICS_H_

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

#include "dblock/lock_handle.h"
#include "dblock/metrics.h"
#include "dblock/options.h"

namespace dblock::detail {

class EngineMetrics {
 public:
  enum class Kind { kExclusive, kShared, kPermit };
  enum class Outcome { kAcquired, kRefused, kTimedOut, kError };
  enum class Renewal { kOk, kFailed, kRefused };
  enum class Loss { kSafeUntilPassed, kRenewalRefused, kServiceEvent, kGuard, kShutdown };

  static Kind kind_of(LockMode mode, int permits) {
    return permits != 0 ? Kind::kPermit : mode == LockMode::kShared ? Kind::kShared : Kind::kExclusive;
  }

  void attempt(Kind kind) { add(acquires_[index(kind)].attempts); }
  void acquire_ended(Kind kind, Outcome outcome);
  void waited(std::chrono::steady_clock::duration d) { wait_.observe(d); }
  // The last hold of a lease was released (`held`: since the grant), with this result.
  void released(ReleaseResult result, std::chrono::steady_clock::duration held);
  void renewed(Renewal result);
  void lost(Loss cause);
  void session_lost() { add(session_locks_lost_); }
  void reaped(std::size_t rows) { add(reaped_, rows); }

  // REQUIRES: the gauges are filled in by the caller.
  MetricsSnapshot snapshot(std::string service) const;

 private:
  using Counter = std::atomic<std::uint64_t>;
  static void add(Counter& c, std::uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }
  static std::uint64_t read(const Counter& c) { return c.load(std::memory_order_relaxed); }
  static std::size_t index(Kind kind) { return static_cast<std::size_t>(kind); }

  class Histogram {
   public:
    void observe(std::chrono::steady_clock::duration d);
    HistogramSnapshot snapshot() const;

   private:
    std::array<Counter, kMetricsBucketBounds.size() + 1> counts_{};
    Counter sum_ns_{0};
  };

  struct Acquires {
    Counter attempts{0}, acquired{0}, refused{0}, timed_out{0}, errors{0};
    AcquireCounts snapshot() const;
  };

  std::array<Acquires, 3> acquires_;
  Histogram wait_;
  Histogram hold_;
  std::array<Counter, 3> releases_{};  // released, already lost, in doubt
  std::array<Counter, 3> renewals_{};  // by Renewal
  std::array<Counter, 5> lost_{};      // by Loss
  Counter session_locks_lost_{0};
  Counter reaped_{0};
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_ENGINE_METRICS_H_
