// bench/figures.h — the dblock side of the benchmarks and the report they share: dblock's pair
// sides and contenders, interleaved pair measurement, and for the server benchmarks
// (postgresql_bench, mysql_bench) the result table, the hand-off tables and the BENCH_JSON lines.
//
// Header-only, one translation unit per benchmark; not thread-safe.
#ifndef DBLOCK_BENCH_FIGURES_H_
#define DBLOCK_BENCH_FIGURES_H_

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.h"
#include "contention.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "dblock/options.h"
#include "dblock/session_lock.h"

namespace dblock_bench {

// Pairs are measured in blocks of this many per side, the sides taking turns, so that slow drifts
// during the run (WAL growth, checkpoints, autovacuum, CPU frequency, page cache) land on every
// side instead of biasing whichever side would have run second.
inline constexpr int kInterleaveBlock = 500;

// ---------------------------------------------------------------------------------------------
// Pair sides: one timed acquire + release each, on a name nobody else uses.

// Times `acquire()` (an optional handle: Lease, SessionLock) and the handle's release(); both must
// succeed, else throws with the given messages.
template <class Acquire>
void time_handle_pair(Acquire&& acquire, const char* acquire_failed, const char* release_failed, PairSamples* out) {
  const auto t0 = Clock::now();
  Clock::time_point t1;
  bool acquired = false;
  dblock::ReleaseResult result = dblock::ReleaseResult::kInDoubt;
  {
    auto handle = acquire();
    t1 = Clock::now();
    if (handle) {
      acquired = true;
      result = handle->release();
    }
  }
  const auto t2 = Clock::now();
  if (!acquired) throw std::runtime_error(acquire_failed);
  if (result != dblock::ReleaseResult::kReleased) {
    throw std::runtime_error(std::string(release_failed) + dblock::to_string(result));
  }
  if (out) out->add(t0, t1, t2);
}

// dblock's try_acquire + release. The handle is dropped inside the timed region: real callers pay
// for it too.
class DblockLeaseSide {
 public:
  explicit DblockLeaseSide(dblock::LockManager& manager) : manager_(manager) {}

  void pair(const std::string& name, PairSamples* out) {
    time_handle_pair([&] { return manager_.try_acquire(name); }, "dblock: uncontended try_acquire returned no lease",
                     "dblock: release returned ", out);
  }

 private:
  dblock::LockManager& manager_;
};

// dblock's session_lock(name, 0) + release.
class DblockSessionSide {
 public:
  explicit DblockSessionSide(dblock::LockManager& manager) : manager_(manager) {}

  void pair(const std::string& name, PairSamples* out) {
    time_handle_pair([&] { return manager_.session_lock(name, std::chrono::milliseconds(0)); },
                     "dblock: uncontended session_lock returned nothing", "dblock: session lock release returned ",
                     out);
  }

 private:
  dblock::LockManager& manager_;
};

struct PairFigure {
  PairSamples floor;   // or the reference state
  PairSamples dblock;  // or the state under test
  PairSamples diag;    // dblock's SQL sent raw (when measured)
};

using PairFn = std::function<void(const std::string&, PairSamples*)>;

// Warms every side up, then runs blocks of kInterleaveBlock measured pairs per side in turn.
// Iteration i uses names[i % names.size()] on every side.
inline std::vector<PairSamples> measure_sides(const std::vector<PairFn>& sides, const std::vector<std::string>& names,
                                              int warmup, int pairs) {
  auto name_at = [&](int i) -> const std::string& { return names[static_cast<std::size_t>(i) % names.size()]; };
  for (int i = 0; i < warmup; ++i) {
    for (const auto& side : sides) side(name_at(i), nullptr);
  }
  std::vector<PairSamples> samples(sides.size());
  for (auto& s : samples) s.reserve(static_cast<std::size_t>(pairs));
  for (int start = 0; start < pairs; start += kInterleaveBlock) {
    const int end = std::min(pairs, start + kInterleaveBlock);
    for (std::size_t k = 0; k < sides.size(); ++k) {
      for (int i = start; i < end; ++i) sides[k](name_at(i), &samples[k]);
    }
  }
  return samples;
}

template <class Floor, class Dblock>
PairFigure measure_pairs(Floor& floor_side, Dblock& dblock_side, const std::vector<std::string>& names, int warmup,
                         int pairs) {
  auto s = measure_sides({[&](const std::string& n, PairSamples* o) { floor_side.pair(n, o); },
                          [&](const std::string& n, PairSamples* o) { dblock_side.pair(n, o); }},
                         names, warmup, pairs);
  return PairFigure{std::move(s[0]), std::move(s[1]), {}};
}

template <class Floor, class Dblock, class Diag>
PairFigure measure_pairs(Floor& floor_side, Dblock& dblock_side, Diag& diag_side, const std::vector<std::string>& names,
                         int warmup, int pairs) {
  auto s = measure_sides({[&](const std::string& n, PairSamples* o) { floor_side.pair(n, o); },
                          [&](const std::string& n, PairSamples* o) { dblock_side.pair(n, o); },
                          [&](const std::string& n, PairSamples* o) { diag_side.pair(n, o); }},
                         names, warmup, pairs);
  return PairFigure{std::move(s[0]), std::move(s[1]), std::move(s[2])};
}

// ---------------------------------------------------------------------------------------------
// dblock contenders (run in a forked child by run_contenders): kHotKey, kContentionWait.

// acquire + release of a lease on kHotKey with a LockManager opened with `options`.
inline void dblock_lease_contender(const std::string& url, const dblock::ManagerOptions& options, int index,
                                   int iterations, SharedArena& arena, StartLine& start) {
  auto manager = dblock::open(url, options);
  start.ready_and_wait();
  std::optional<dblock::Lease> lease;
  contend(
      arena, index, iterations,
      [&](int) -> std::optional<std::int64_t> {
        lease = manager->acquire(kHotKey, kContentionWait);
        if (!lease) return std::nullopt;
        return lease->fence();
      },
      [&](int) {
        const bool released = lease->release() == dblock::ReleaseResult::kReleased;
        lease.reset();
        return released;
      });
  manager.reset();  // stop dblock's threads before the process ends
}

// session_lock + release on kHotKey; session locks have no fence (the entry order stands in).
inline void dblock_session_contender(const std::string& url, const dblock::ManagerOptions& options, int index,
                                     int iterations, SharedArena& arena, StartLine& start) {
  auto manager = dblock::open(url, options);
  start.ready_and_wait();
  std::optional<dblock::SessionLock> lock;
  contend(
      arena, index, iterations,
      [&](int) -> std::optional<std::int64_t> {
        lock = manager->session_lock(kHotKey, kContentionWait);
        if (!lock) return std::nullopt;
        return std::int64_t{0};
      },
      [&](int) {
        const bool released = lock->release() == dblock::ReleaseResult::kReleased;
        lock.reset();
        return released;
      });
  manager.reset();
}

// ---------------------------------------------------------------------------------------------
// Report of the server benchmarks.

struct Row {
  std::string figure;  // JSON name
  std::string label;   // table label
  Summary dblock;      // dblock, or the state under test
  Summary floor;       // the floor, or the reference state
  double target = NAN; // ratio target; NaN: informational row
  bool on_p99 = false; // the target is on the p99 ratio (else p50)
  std::vector<std::pair<std::string, double>> extra;  // more JSON fields
};

inline bool passes(const Row& row) {
  const double r = row.on_p99 ? ratio(row.dblock.p99, row.floor.p99) : ratio(row.dblock.p50, row.floor.p50);
  return r <= row.target;
}

inline Row make_row(std::string figure, std::string label, const std::vector<double>& dblock,
                    const std::vector<double>& floor, double target = NAN, bool on_p99 = false) {
  return Row{std::move(figure), std::move(label), summarize(dblock), summarize(floor), target, on_p99, {}};
}

inline Row handoff_row(std::string figure, std::string label, const ContentionResult& d, const ContentionResult& f,
                       double target) {
  return Row{std::move(figure), std::move(label), d.handoff_latency_us, f.handoff_latency_us, target, false, {}};
}

inline void print_table(const std::vector<Row>& rows) {
  std::printf("%-44s %10s %10s %6s %11s %10s %6s  %s\n", "figure (times in us)", "dblock p50", "floor p50", "ratio",
              "p99 dblock", "p99 floor", "ratio", "target");
  for (const Row& row : rows) {
    const double r50 = ratio(row.dblock.p50, row.floor.p50);
    const double r99 = ratio(row.dblock.p99, row.floor.p99);
    const std::string target =
        std::isfinite(row.target)
            ? format("%s <= %.2fx %s", row.on_p99 ? "p99" : "p50", row.target, passes(row) ? "PASS" : "FAIL")
            : "-";
    std::printf("%-44s %10s %10s %6s %11s %10s %6s  %s\n", row.label.c_str(), cell(row.dblock.p50).c_str(),
                cell(row.floor.p50).c_str(), cell(r50, "%.2f").c_str(), cell(row.dblock.p99).c_str(),
                cell(row.floor.p99).c_str(), cell(r99, "%.2f").c_str(), target.c_str());
  }
}

inline void print_row_json(const Row& row) {
  JsonLine line;
  line.add("figure", row.figure)
      .add("n", row.dblock.n)
      .add("n_floor", row.floor.n)
      .add_summary("dblock", row.dblock)
      .add_summary("floor", row.floor)
      .add("ratio_p50", ratio(row.dblock.p50, row.floor.p50))
      .add("ratio_p99", ratio(row.dblock.p99, row.floor.p99));
  for (const auto& [key, value] : row.extra) line.add(key, value);
  if (std::isfinite(row.target)) {
    line.add(row.on_p99 ? "target_ratio_p99" : "target_ratio_p50", row.target, "%.2f").add("pass", passes(row));
  }
  std::printf("BENCH_JSON %s\n", line.str().c_str());
}

// `server_counters`: also the server work per acquisition (ContentionResult's commits and WAL
// fields), for benchmarks that measure it.
inline void print_contention_table(const char* title, const char* a_name, const ContentionResult& a,
                                   const char* b_name, const ContentionResult& b, bool server_counters = false) {
  std::printf("%s\n", title);
  std::printf("%-46s %20s %24s\n", "", a_name, b_name);
  auto row = [](const char* label, const std::string& x, const std::string& y) {
    std::printf("%-46s %20s %24s\n", label, x.c_str(), y.c_str());
  };
  auto pct = [](double v) { return std::isfinite(v) ? format("%.1f%%", 100.0 * v) : std::string("n/a"); };
  auto ms = [](double us) { return cell(us / 1e3, "%.3f"); };
  row("hand-off share (next holder is another proc)", pct(a.handoff_share), pct(b.handoff_share));
  row("hand-off latency p50 (ms, release -> waiter)", ms(a.handoff_latency_us.p50), ms(b.handoff_latency_us.p50));
  row("hand-off latency p99 (ms)", ms(a.handoff_latency_us.p99), ms(b.handoff_latency_us.p99));
  row("hand-offs measured (waiter already waiting)", std::to_string(a.handoff_latency_us.n),
      std::to_string(b.handoff_latency_us.n));
  row("max wait (ms)", ms(a.wait_us.max), ms(b.wait_us.max));
  row("p50 / p99 wait (ms)", ms(a.wait_us.p50) + " / " + ms(a.wait_us.p99), ms(b.wait_us.p50) + " / " + ms(b.wait_us.p99));
  row("throughput (acquisitions/s)", cell(a.throughput_per_s, "%.0f"), cell(b.throughput_per_s, "%.0f"));
  if (server_counters) {
    row("server: commits per acquisition", cell(a.commits_per_acquisition, "%.2f"), cell(b.commits_per_acquisition, "%.2f"));
    row("server: WAL records per acquisition", cell(a.wal_records_per_acquisition, "%.2f"),
        cell(b.wal_records_per_acquisition, "%.2f"));
    row("server: WAL flushes (fsync) per acquisition", cell(a.wal_flushes_per_acquisition, "%.2f"),
        cell(b.wal_flushes_per_acquisition, "%.2f"));
  }
  row("acquisitions per process (total)", join(a.per_process), join(b.per_process));
  row("  ... until the first process finished", join(a.per_process_contended), join(b.per_process_contended));
  row("timeouts / violations / unconfirmed releases",
      format("%zu / %lld / %zu", a.timeouts, static_cast<long long>(a.violations), a.release_failures),
      format("%zu / %lld / %zu", b.timeouts, static_cast<long long>(b.violations), b.release_failures));
}

inline void add_contention_json(JsonLine& line, const char* side, const ContentionResult& r,
                                bool server_counters = false) {
  const std::string p(side);
  line.add(p + "_handoff_share", r.handoff_share, "%.4f")
      .add(p + "_handoffs", r.handoffs)
      .add(p + "_handoffs_measured", r.handoff_latency_us.n)
      .add(p + "_acquired", r.acquired)
      .add(p + "_timeouts", r.timeouts)
      .add(p + "_wait_p50_us", r.wait_us.p50)
      .add(p + "_wait_p99_us", r.wait_us.p99)
      .add(p + "_max_wait_us", r.wait_us.max)
      .add(p + "_wait_mean_us", r.wait_us.mean)
      .add_summary(p + "_handoff_latency", r.handoff_latency_us)
      .add(p + "_throughput_per_s", r.throughput_per_s, "%.1f")
      .add(p + "_per_process", r.per_process)
      .add(p + "_per_process_until_first_done", r.per_process_contended)
      .add(p + "_violations", r.violations)
      .add(p + "_release_failures", r.release_failures);
  if (server_counters) {
    line.add(p + "_commits_per_acquisition", r.commits_per_acquisition)
        .add(p + "_wal_records_per_acquisition", r.wal_records_per_acquisition)
        .add(p + "_wal_flushes_per_acquisition", r.wal_flushes_per_acquisition);
  }
}

// The JSON fields every hand-off figure starts with.
inline JsonLine handoff_json_head(const char* figure, int iterations) {
  JsonLine line;
  line.add("figure", figure)
      .add("processes", kProcesses)
      .add("iterations", iterations)
      .add("critical_section_us", static_cast<std::int64_t>(kCriticalSection.count()))
      .add("latency_from", "release call start");
  return line;
}

// A hand-off figure with a raw floor: the dblock and raw contention runs and the ratio target on
// the hand-off latency p50.
struct HandoffFigure {
  const char* figure;
  std::string title;
  const char* dblock_name;
  const char* raw_name;
  ContentionResult dblock;
  ContentionResult raw;
  double target;
};

inline void print_handoff_json(const HandoffFigure& h, int iterations, bool server_counters) {
  JsonLine line = handoff_json_head(h.figure, iterations);
  add_contention_json(line, "dblock", h.dblock, server_counters);
  add_contention_json(line, "floor", h.raw, server_counters);
  const double r = ratio(h.dblock.handoff_latency_us.p50, h.raw.handoff_latency_us.p50);
  line.add("ratio_p50", r).add("ratio_p99", ratio(h.dblock.handoff_latency_us.p99, h.raw.handoff_latency_us.p99));
  if (std::isfinite(h.target)) {  // informational figures (a second floor) have no target
    line.add("target_ratio_p50", h.target, "%.2f")
        .add("pass", r <= h.target && h.dblock.violations == 0 && h.dblock.timeouts == 0);
  }
  std::printf("BENCH_JSON %s\n", line.str().c_str());
}

// One BENCH_JSON line per row; rows that are hand-off figures get the hand-off line instead.
inline void print_rows_json(const std::vector<Row>& rows, const std::vector<HandoffFigure>& handoffs, int iterations,
                            bool server_counters) {
  for (const Row& row : rows) {
    const auto h = std::find_if(handoffs.begin(), handoffs.end(),
                                [&](const HandoffFigure& f) { return row.figure == f.figure; });
    if (h != handoffs.end()) {
      print_handoff_json(*h, iterations, server_counters);
    } else {
      print_row_json(row);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Run header.

// "server CPU 0, client CPU 1" (or "client not pinned").
inline std::string placement_text(const Placement& placement) {
  return placement.pinned ? format("server CPU %s, client CPU %d", placement.server_cpus.c_str(), placement.cpu)
                          : format("server CPU %s, client not pinned", placement.server_cpus.c_str());
}

// The header line on placement; `server_process` names what server_pid is ("backend pid", ...).
inline void print_placement(const Placement& placement, const char* server_process) {
  std::printf("placement: %s (client: %s; allowed before: %s; server: %s %d Cpus_allowed_list %s;\n"
              "           forked contenders and dblock threads inherit the client CPU)%s\n",
              placement_text(placement).c_str(), placement.how.c_str(), placement.allowed_before.c_str(),
              server_process, placement.server_pid, placement.server_cpus.c_str(),
              placement.pinned && placement.overlap ? "\n           WARNING: the client CPU is one the server may use"
                                                    : "");
}

// Never print a password: scheme://user:secret@host -> scheme://user:***@host.
inline std::string redact_password(std::string url) {
  const auto scheme = url.find("://");
  const auto at = url.find('@');
  if (scheme != std::string::npos && at != std::string::npos) {
    const auto colon = url.find(':', scheme + 3);
    if (colon != std::string::npos && colon < at) url.replace(colon + 1, at - colon - 1, "***");
  }
  return url;
}

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_FIGURES_H_
