// bench/bench_util.h — small helpers shared by the dblock benchmarks: latency summaries, a JSON
// line builder, fixed-width table cells, a busy-wait, and the CPU time and context switches of this
// process or of a local server process.
//
// Header-only and dependency-free on purpose: a benchmark must not pull in a framework whose own
// overhead or scheduling would blur the figures it compares. Nothing here is thread-safe; each
// benchmark process uses its own objects.
#ifndef DBLOCK_BENCH_BENCH_UTIL_H_
#define DBLOCK_BENCH_BENCH_UTIL_H_

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iterator>
#include <numeric>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/errors.h"

namespace dblock_bench {

// Every local duration in the benchmarks is measured on steady_clock: it never jumps, and on Linux
// it is CLOCK_MONOTONIC, which is system-wide, so timestamps taken in different forked processes
// can be compared with each other.
using Clock = std::chrono::steady_clock;

// Parses a command-line count for `flag` (0 to 100 000 000). A bad value is reported on stderr and
// ends the program through usage(argv0, 2).
inline int parse_non_negative(const char* argv0, const char* flag, const char* text,
                              void (*usage)(const char*, int)) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > 100'000'000) {
    std::fprintf(stderr, "%s: bad value for %s: %s\n", argv0, flag, text);
    usage(argv0, 2);
  }
  return static_cast<int>(value);
}

inline double to_us(Clock::duration d) {
  return std::chrono::duration<double, std::micro>(d).count();
}

// Nanoseconds since the steady_clock epoch; what the contention records store in shared memory.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// Latency summary of one sample set, in the unit of the samples (microseconds everywhere here).
struct Summary {
  std::size_t n = 0;
  double p50 = NAN;
  double p90 = NAN;
  double p99 = NAN;
  double max = NAN;
  double mean = NAN;
};

// Nearest-rank percentile of an ascending-sorted, non-empty vector; q in (0, 1].
inline double percentile_sorted(const std::vector<double>& sorted, double q) {
  const auto n = sorted.size();
  auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(n)));
  rank = std::clamp<std::size_t>(rank, 1, n);
  return sorted[rank - 1];
}

// Takes the samples by value because it sorts them. An empty set gives NaNs (printed as "n/a"
// and JSON null), never a made-up zero.
inline Summary summarize(std::vector<double> samples) {
  Summary s;
  s.n = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.p50 = percentile_sorted(samples, 0.50);
  s.p90 = percentile_sorted(samples, 0.90);
  s.p99 = percentile_sorted(samples, 0.99);
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  return s;
}

// a / b, NaN when either side is missing or b is zero (a ratio against a zero floor means nothing).
inline double ratio(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b) || b == 0.0) return NAN;
  return a / b;
}

// Spins for `d` without sleeping: the contention benchmark's critical section must occupy the CPU
// (like real work under a lock would), not hand it to the waiters.
inline void busy_wait(Clock::duration d) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until) {
  }
}

// printf-style formatting into a std::string (the benchmarks print fixed-width tables).
template <typename... Args>
std::string format(const char* fmt, Args... args) {
  const int size = std::snprintf(nullptr, 0, fmt, args...);
  if (size <= 0) return {};
  std::string out(static_cast<std::size_t>(size) + 1, '\0');
  std::snprintf(out.data(), out.size(), fmt, args...);
  out.resize(static_cast<std::size_t>(size));
  return out;
}

// A number for a table cell, or "n/a" when it is missing.
inline std::string cell(double value, const char* fmt = "%.1f") {
  return std::isfinite(value) ? format(fmt, value) : std::string("n/a");
}

// A (local) process's CPU time (utime + stime of /proc/<pid>/stat) in µs; NaN when unknown. The
// kernel counts it in clock ticks (10 ms on most systems): coarse, use it over many operations.
inline double process_cpu_us(int pid) {
  if (pid <= 0) return NAN;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return NAN;
  std::istringstream fields(stat.substr(paren + 2));
  std::string skip;
  for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt (fields 3-13)
  double utime = 0, stime = 0;
  if (!(fields >> utime >> stime)) return NAN;
  return (utime + stime) * 1e6 / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// Context switches (voluntary + involuntary) of every thread of this process (RUSAGE_SELF) or of
// its waited-for children (RUSAGE_CHILDREN). On one client CPU each one is a thread hop that a
// loaded machine can delay by a scheduler slice.
inline double context_switches(int who) {
  rusage usage{};
  getrusage(who, &usage);
  return static_cast<double>(usage.ru_nvcsw + usage.ru_nivcsw);
}

// CPU time (user + system, µs) of every thread of this process.
inline double own_cpu_us() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto us = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1e6 + static_cast<double>(t.tv_usec); };
  return us(usage.ru_utime) + us(usage.ru_stime);
}

// Builds one flat JSON object on one line. Keys are emitted in insertion order so that lines from
// different runs diff cleanly.
class JsonLine {
 public:
  JsonLine& add(std::string_view key, std::string_view value) {
    begin(key);
    quote(value);
    return *this;
  }
  JsonLine& add(std::string_view key, const char* value) { return add(key, std::string_view(value)); }
  JsonLine& add(std::string_view key, bool value) {
    begin(key);
    out_ += value ? "true" : "false";
    return *this;
  }
  JsonLine& add(std::string_view key, std::int64_t value) {
    begin(key);
    out_ += std::to_string(value);
    return *this;
  }
  JsonLine& add(std::string_view key, int value) { return add(key, static_cast<std::int64_t>(value)); }
  JsonLine& add(std::string_view key, std::size_t value) {
    return add(key, static_cast<std::int64_t>(value));
  }
  // Non-finite numbers become null: JSON has no NaN.
  JsonLine& add(std::string_view key, double value, const char* fmt = "%.3f") {
    begin(key);
    out_ += std::isfinite(value) ? format(fmt, value) : std::string("null");
    return *this;
  }
  JsonLine& add(std::string_view key, const std::vector<std::int64_t>& values) {
    begin(key);
    out_ += '[';
    for (std::size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out_ += ',';
      out_ += std::to_string(values[i]);
    }
    out_ += ']';
    return *this;
  }
  // The p50/p90/p99/max/mean of `s` as "<prefix>_p50_us", ... .
  JsonLine& add_summary(std::string_view prefix, const Summary& s) {
    const std::string p(prefix);
    add(p + "_p50_us", s.p50);
    add(p + "_p90_us", s.p90);
    add(p + "_p99_us", s.p99);
    add(p + "_max_us", s.max);
    add(p + "_mean_us", s.mean);
    return *this;
  }

  std::string str() const { return "{" + out_ + "}"; }

 private:
  void begin(std::string_view key) {
    if (!out_.empty()) out_ += ',';
    quote(key);
    out_ += ':';
  }
  void quote(std::string_view text) {
    out_ += '"';
    for (const char c : text) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            out_ += format("\\u%04x", static_cast<unsigned>(c));
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
};

// The benchmarks' main(): runs `body`; an exception that escapes it is printed as
// "<program>: ..." on stderr and the exit status is 1.
template <class Body>
int run_reporting_errors(const char* program, Body&& body) {
  try {
    return body();
  } catch (const dblock::Error& e) {
    std::fprintf(stderr, "%s: dblock error%s%s: %s\n", program, e.backend().empty() ? "" : " from ",
                 e.backend().c_str(), e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", program, e.what());
  }
  return 1;
}

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_BENCH_UTIL_H_
