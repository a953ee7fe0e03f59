#include "reaper.h"

#include <algorithm>

#include "dblock/service/call_deadline.h"
#include "internal.h"

namespace dblock::detail {

namespace {
using SteadyClock = std::chrono::steady_clock;
// At most this many batches per pass (5 million rows at the default batch size).
constexpr int kMaxBatchesPerPass = 100'000;
}  // namespace

Reaper::Reaper(Maintenance& maintenance, EngineMetrics& metrics, std::chrono::milliseconds interval,
               std::size_t batch, std::function<void(const Error&)> report)
    : maintenance_(maintenance), metrics_(metrics), interval_(interval), batch_(batch), report_(std::move(report)) {}

Reaper::~Reaper() { stop(); }

void Reaper::start() { thread_ = std::thread([this] { loop(); }); }

void Reaper::stop() noexcept {
  {
    service::MutexLock lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool Reaper::pause_for(SteadyClock::duration pause) {
  service::UniqueLock lock(mutex_);
  return !cv_.wait_for(lock.native(), pause, [this]() DBLOCK_REQUIRES(mutex_) { return stopping_; });
}

void Reaper::loop() {
  using std::chrono::duration_cast;
  using std::chrono::microseconds;
  for (;;) {
    const auto pause = duration_cast<SteadyClock::duration>(jittered(duration_cast<microseconds>(interval_), 0.2));
    if (!pause_for(pause)) return;
    try {
      if (!pass()) return;
    } catch (const Error& e) {
      report_(e);
    }
  }
}

// Each batch is followed by a pause at least as long as the batch took (at least 1 ms), so the
// reaper never holds the database for long and takes at most half of it while it catches up: a
// statement that waits for a reap batch (for its row locks, or for a server CPU the reaping
// backend occupies) waits at most about one batch.
bool Reaper::pass() {
  for (int i = 0; i < kMaxBatchesPerPass; ++i) {
    const auto started = SteadyClock::now();
    // A batch is short: it is given the least time a call gets, so that a stalled connection never
    // keeps the reaper (and a shutdown joining it) waiting long.
    const CallDeadlineScope call(started);
    const std::size_t reaped = maintenance_.reap(batch_);
    metrics_.reaped(reaped);
    if (reaped < batch_) return true;
    const auto took = std::clamp<SteadyClock::duration>(SteadyClock::now() - started, std::chrono::milliseconds(1),
                                                        std::chrono::seconds(1));
    if (!pause_for(took)) return false;
  }
  return true;
}

}  // namespace dblock::detail
