// bench/scale.h — contention at several process counts: each process loops acquire(wait) ->
// critical section -> release on one name, and dblock's figures are printed beside its floors
// measured in the same run (the raw floor, and a fair floor where the backend has one), with the
// targets of the contended hand-off. Shared by every benchmark; nothing here knows a backend.
//
// Header-only, one translation unit per benchmark; not thread-safe.
#ifndef DBLOCK_BENCH_SCALE_H_
#define DBLOCK_BENCH_SCALE_H_

#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench_util.h"
#include "contention.h"

namespace dblock_bench {

// The process counts of the scale figures.
inline constexpr int kProcessCounts[] = {2, 4, 8};

// One contender set-up of a mode: its JSON key ("dblock", "floor", "fair_floor", ...) and label.
struct SideSpec {
  std::string key;
  std::string name;
};

struct ScaleSide {
  SideSpec spec;
  ContentionResult result;
};

struct ScalePoint {
  int processes = 0;
  ScaleSide dblock;
  // The raw floor first (the targets compare with it), then a fair floor where there is one, and
  // other set-ups shown for comparison (dblock with fair = false, say).
  std::vector<ScaleSide> others;
};

// What a mode must meet; NaN: no such target for this mode.
struct ScaleTargets {
  double max_p99_over_p50 = 10.0;        // dblock's hand-off latency p99 / p50, at every count
  double min_throughput_vs_raw = NAN;    // dblock acq/s >= this x the raw floor's, at every count
  double max_handoff_vs_raw = NAN;       // dblock hand-off p50 <= this x the raw floor's, at every count
  double min_throughput_last_vs_first = NAN;  // dblock acq/s at the most processes vs at the fewest
  double max_wait_p99_us = NAN;          // dblock's wait p99, at every count
};

struct ScaleFigure {
  std::string figure;  // JSON name
  std::string title;
  ScaleTargets targets;
  std::vector<ScalePoint> points;
};

// Runs `run(side_index, processes)` for dblock (side 0), the raw floor (side 1) and the other
// sides at every count, sides taking turns within a count so that drifts land on every side.
inline ScaleFigure measure_scale(std::string figure, std::string title, ScaleTargets targets,
                                 const std::vector<SideSpec>& sides,
                                 const std::function<ContentionResult(std::size_t side, int processes)>& run) {
  ScaleFigure out{std::move(figure), std::move(title), targets, {}};
  for (const int n : kProcessCounts) {
    ScalePoint point;
    point.processes = n;
    for (std::size_t s = 0; s < sides.size(); ++s) {
      ScaleSide side{sides[s], run(s, n)};
      if (s == 0) {
        point.dblock = std::move(side);
      } else {
        point.others.push_back(std::move(side));
      }
    }
    out.points.push_back(std::move(point));
  }
  return out;
}

inline double p99_over_p50(const ContentionResult& r) { return ratio(r.handoff_latency_us.p99, r.handoff_latency_us.p50); }

// The verdicts of one point (and, for the last-vs-first target, of the whole figure).
inline std::vector<std::string> scale_failures(const ScaleFigure& f, const ScalePoint& p) {
  std::vector<std::string> out;
  const ScaleTargets& t = f.targets;
  const ContentionResult& d = p.dblock.result;
  if (d.timeouts > 0 || d.violations > 0) out.push_back("timeouts or violations");
  if (std::isfinite(t.max_p99_over_p50) && !(p99_over_p50(d) <= t.max_p99_over_p50)) {
    out.push_back(format("p99/p50 %.1f > %.0f", p99_over_p50(d), t.max_p99_over_p50));
  }
  if (!p.others.empty()) {
    const ContentionResult& raw = p.others.front().result;
    const double thr = ratio(d.throughput_per_s, raw.throughput_per_s);
    if (std::isfinite(t.min_throughput_vs_raw) && !(thr >= t.min_throughput_vs_raw)) {
      out.push_back(format("acq/s %.2fx raw < %.2f", thr, t.min_throughput_vs_raw));
    }
    const double h = ratio(d.handoff_latency_us.p50, raw.handoff_latency_us.p50);
    if (std::isfinite(t.max_handoff_vs_raw) && !(h <= t.max_handoff_vs_raw)) {
      out.push_back(format("hand-off %.2fx raw > %.2f", h, t.max_handoff_vs_raw));
    }
  }
  if (std::isfinite(t.max_wait_p99_us) && !(d.wait_us.p99 <= t.max_wait_p99_us)) {
    out.push_back(format("wait p99 %.1f ms > %.0f ms", d.wait_us.p99 / 1e3, t.max_wait_p99_us / 1e3));
  }
  if (std::isfinite(t.min_throughput_last_vs_first) && &p == &f.points.back() && f.points.size() > 1) {
    const double r = ratio(d.throughput_per_s, f.points.front().dblock.result.throughput_per_s);
    if (!(r >= t.min_throughput_last_vs_first)) {
      out.push_back(format("acq/s at %d %.2fx at %d < %.2f", p.processes, r, f.points.front().processes,
                           t.min_throughput_last_vs_first));
    }
  }
  return out;
}

inline void print_scale_table(const ScaleFigure& f) {
  std::printf("\n%s\n", f.title.c_str());
  std::printf("%5s %-34s %9s %7s %11s %11s %7s %11s %8s  %s\n", "procs", "side", "acq/s", "x raw", "handoff p50",
              "handoff p99", "p99/p50", "wait p99", "switch", "target");
  auto ms = [](double us) { return cell(us / 1e3, "%.3f") + "ms"; };
  for (const ScalePoint& p : f.points) {
    const double raw_thr = p.others.empty() ? NAN : p.others.front().result.throughput_per_s;
    auto line = [&](const ScaleSide& s, const std::string& verdict) {
      const ContentionResult& r = s.result;
      std::printf("%5d %-34s %9s %7s %11s %11s %7s %11s %7s%%  %s\n", p.processes, s.spec.name.c_str(),
                  cell(r.throughput_per_s, "%.0f").c_str(), cell(ratio(r.throughput_per_s, raw_thr), "%.2f").c_str(),
                  ms(r.handoff_latency_us.p50).c_str(), ms(r.handoff_latency_us.p99).c_str(),
                  cell(p99_over_p50(r), "%.1f").c_str(), ms(r.wait_us.p99).c_str(),
                  cell(100.0 * r.handoff_share, "%.0f").c_str(), verdict.c_str());
    };
    const std::vector<std::string> failures = scale_failures(f, p);
    std::string verdict = "PASS";
    if (!failures.empty()) {
      verdict = "FAIL:";
      for (const auto& why : failures) verdict += " " + why + ";";
    }
    line(p.dblock, verdict);
    for (const ScaleSide& s : p.others) line(s, "");
  }
}

inline void print_scale_json(const ScaleFigure& f, int iterations) {
  for (const ScalePoint& p : f.points) {
    JsonLine line;
    line.add("figure", f.figure)
        .add("processes", p.processes)
        .add("iterations", iterations)
        .add("critical_section_us", static_cast<std::int64_t>(kCriticalSection.count()));
    add_contention_json(line, "dblock", p.dblock.result);
    line.add("dblock_p99_over_p50", p99_over_p50(p.dblock.result));
    for (const ScaleSide& other : p.others) {
      const std::string& side = other.spec.key;
      add_contention_json(line, side.c_str(), other.result);
      line.add(side + "_name", other.spec.name)
          .add("throughput_vs_" + side, ratio(p.dblock.result.throughput_per_s, other.result.throughput_per_s))
          .add("handoff_p50_vs_" + side,
               ratio(p.dblock.result.handoff_latency_us.p50, other.result.handoff_latency_us.p50));
    }
    line.add("pass", scale_failures(f, p).empty());
    std::printf("BENCH_JSON %s\n", line.str().c_str());
  }
}

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_SCALE_H_
