// dblock/metrics.h — what a LockManager counted, and the Prometheus text it renders as.
//
// Every LockManager counts its acquires, waits, holds, releases, renewals, losses and reaped
// entries (LockManager::metrics()), the same for every lock service. Counting costs a few relaxed
// atomic increments per call: no lock and no allocation. Times are measured on
// std::chrono::steady_clock.
#ifndef DBLOCK_METRICS_H_
#define DBLOCK_METRICS_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace dblock {

// Upper bounds (seconds) of the wait and hold histograms' buckets; a last bucket (+Inf) takes the
// rest. From a hand-off on loopback (under a millisecond) to a nightly job (an hour).
inline constexpr std::array<double, 16> kMetricsBucketBounds = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30, 120, 600, 3600};

struct HistogramSnapshot {
  // counts[i]: observations <= kMetricsBucketBounds[i] and above the bound before it; the last
  // entry: above every bound. Not cumulative.
  std::array<std::uint64_t, kMetricsBucketBounds.size() + 1> counts{};
  std::uint64_t count = 0;
  double sum_seconds = 0;
};

// Acquire calls of one kind of lease (exclusive, shared, a semaphore's permit), each counted once
// by its outcome. A reentrant hold counts as acquired; so does each name of acquire_all.
struct AcquireCounts {
  std::uint64_t attempts = 0;   // attempts at the service: a waiting call makes several
  std::uint64_t acquired = 0;
  std::uint64_t refused = 0;    // a single try (try_acquire, a zero wait) found the name held
  std::uint64_t timed_out = 0;  // the wait ended (or was stopped) without the lease
  std::uint64_t errors = 0;     // the call threw
};

// Why leases stopped being held before their release (LostLease, on_lost).
struct LostCounts {
  std::uint64_t safe_until_passed = 0;  // no renewal succeeded in time (service unreachable, slow)
  std::uint64_t renewal_refused = 0;    // the service said the lease is no longer ours
  std::uint64_t service_event = 0;      // the service reported it lost (a ZooKeeper session expired)
  std::uint64_t guard = 0;              // a guarded write found it gone (run_guarded)
  std::uint64_t shutdown = 0;           // still held when the LockManager was destroyed
};

// One LockManager's figures since it was created. Counters only grow; the gauges are read when
// the snapshot is taken.
struct MetricsSnapshot {
  std::string service;  // LeaseService::name()
  AcquireCounts exclusive;
  AcquireCounts shared;
  AcquireCounts permits;
  HistogramSnapshot wait;  // from the call to the grant, acquired calls only (reentrant: 0)
  HistogramSnapshot hold;  // from the grant to the release, leases released (not lost) only
  std::uint64_t released = 0;             // the service confirmed a release
  std::uint64_t released_already_lost = 0;
  std::uint64_t releases_in_doubt = 0;    // the release call failed: the lease expires by itself
  std::uint64_t renewals_ok = 0;
  std::uint64_t renewals_failed = 0;      // the call failed; retried until safe-until
  std::uint64_t renewals_refused = 0;     // counted again in lost.renewal_refused
  LostCounts lost;
  std::uint64_t session_locks_lost = 0;   // a held session lock's connection was gone
  std::uint64_t reaped = 0;               // expired entries deleted by the reaper and reap()
  std::int64_t leases_held = 0;           // gauge
  std::int64_t session_locks_held = 0;    // gauge
};

// Builds Prometheus text exposition format 0.0.4: a family's HELP and TYPE once, then its
// samples. Names must be valid metric and label names (the caller's constants); label values
// and help text are escaped here. Not thread-safe.
class PrometheusText {
 public:
  using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

  // `type`: "counter", "gauge", "histogram" or "untyped".
  void family(std::string_view name, std::string_view type, std::string_view help);
  void sample(std::string_view name, const Labels& labels, double value);
  // name_bucket (cumulative, with le), name_sum and name_count.
  void histogram(std::string_view name, const Labels& labels, const HistogramSnapshot& histogram);
  // A comment line (ignored by scrapers): for what a reader should know, e.g. a failed read.
  void comment(std::string_view text);

  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

// The snapshot as Prometheus families named dblock_* with a service label.
void append_prometheus(const MetricsSnapshot& metrics, PrometheusText& out);
std::string to_prometheus(const MetricsSnapshot& metrics);

}  // namespace dblock

#endif  // DBLOCK_METRICS_H_
