#include "engine_metrics.h"

#include <algorithm>

namespace dblock::detail {

void EngineMetrics::acquire_ended(Kind kind, Outcome outcome) {
  Acquires& a = acquires_[index(kind)];
  switch (outcome) {
    case Outcome::kAcquired: add(a.acquired); return;
    case Outcome::kRefused: add(a.refused); return;
    case Outcome::kTimedOut: add(a.timed_out); return;
    case Outcome::kError: add(a.errors); return;
  }
}

void EngineMetrics::released(ReleaseResult result, std::chrono::steady_clock::duration held) {
  switch (result) {
    case ReleaseResult::kReleased:
      add(releases_[0]);
      hold_.observe(held);
      return;
    case ReleaseResult::kAlreadyLost: add(releases_[1]); return;
    case ReleaseResult::kInDoubt: add(releases_[2]); return;
    case ReleaseResult::kShutDown: return;  // counted as lost by shutdown
  }
}

void EngineMetrics::renewed(Renewal result) { add(renewals_[static_cast<std::size_t>(result)]); }

void EngineMetrics::lost(Loss cause) { add(lost_[static_cast<std::size_t>(cause)]); }

void EngineMetrics::Histogram::observe(std::chrono::steady_clock::duration d) {
  const double seconds = std::chrono::duration<double>(d).count();
  const auto bucket = std::lower_bound(kMetricsBucketBounds.begin(), kMetricsBucketBounds.end(), seconds);
  add(counts_[static_cast<std::size_t>(bucket - kMetricsBucketBounds.begin())]);
  const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(d).count();
  add(sum_ns_, static_cast<std::uint64_t>(std::max<std::int64_t>(ns, 0)));
}

HistogramSnapshot EngineMetrics::Histogram::snapshot() const {
  HistogramSnapshot s;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    s.counts[i] = read(counts_[i]);
    s.count += s.counts[i];
  }
  s.sum_seconds = static_cast<double>(read(sum_ns_)) / 1e9;
  return s;
}

AcquireCounts EngineMetrics::Acquires::snapshot() const {
  return AcquireCounts{read(attempts), read(acquired), read(refused), read(timed_out), read(errors)};
}

MetricsSnapshot EngineMetrics::snapshot(std::string service) const {
  MetricsSnapshot s;
  s.service = std::move(service);
  s.exclusive = acquires_[index(Kind::kExclusive)].snapshot();
  s.shared = acquires_[index(Kind::kShared)].snapshot();
  s.permits = acquires_[index(Kind::kPermit)].snapshot();
  s.wait = wait_.snapshot();
  s.hold = hold_.snapshot();
  s.released = read(releases_[0]);
  s.released_already_lost = read(releases_[1]);
  s.releases_in_doubt = read(releases_[2]);
  s.renewals_ok = read(renewals_[0]);
  s.renewals_failed = read(renewals_[1]);
  s.renewals_refused = read(renewals_[2]);
  s.lost = LostCounts{read(lost_[0]), read(lost_[1]), read(lost_[2]), read(lost_[3]), read(lost_[4])};
  s.session_locks_lost = read(session_locks_lost_);
  s.reaped = read(reaped_);
  return s;
}

}  // namespace dblock::detail
