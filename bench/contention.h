// bench/contention.h — what the dblock benchmarks share beyond bench_util.h: CPU placement text,
// pair samples, and the multi-process contention machinery (records in shared memory, a start
// line, the critical section with its exclusion check, and the analysis of hand-offs).
//
// Header-only, one translation unit per benchmark. SharedArena lives in MAP_SHARED memory created
// before fork(); everything else is per process and not thread-safe.
#ifndef DBLOCK_BENCH_CONTENTION_H_
#define DBLOCK_BENCH_CONTENTION_H_

#include <sched.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <new>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"

namespace dblock_bench {

// The busy critical section every contender runs while it holds the lock.
inline constexpr std::chrono::microseconds kCriticalSection{20};

inline std::string cpu_list(const cpu_set_t& set) {
  std::string out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    int last = cpu;
    while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, &set)) ++last;
    if (!out.empty()) out += ',';
    out += last == cpu ? std::to_string(cpu) : std::to_string(cpu) + "-" + std::to_string(last);
    cpu = last;
  }
  return out;
}

// Parses a kernel CPU list ("0", "0-1", "0,2-3"); false when it is not one.
inline bool parse_cpu_list(const std::string& text, cpu_set_t& out) {
  CPU_ZERO(&out);
  std::stringstream in(text);
  std::string part;
  bool any = false;
  while (std::getline(in, part, ',')) {
    int first = 0, last = 0;
    if (std::sscanf(part.c_str(), "%d-%d", &first, &last) == 2) {
    } else if (std::sscanf(part.c_str(), "%d", &first) == 1) {
      last = first;
    } else {
      return false;
    }
    for (int cpu = first; cpu <= last && cpu < CPU_SETSIZE; ++cpu) CPU_SET(cpu, &out);
    any = true;
  }
  return any;
}

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

struct PairSamples {
  std::vector<double> acquire;  // µs
  std::vector<double> release;  // µs
  std::vector<double> pair;     // µs, acquire start to release end (including dropping the handle)

  void reserve(std::size_t n) {
    acquire.reserve(n);
    release.reserve(n);
    pair.reserve(n);
  }
  void add(Clock::time_point t0, Clock::time_point t1, Clock::time_point t2) {
    acquire.push_back(to_us(t1 - t0));
    release.push_back(to_us(t2 - t1));
    pair.push_back(to_us(t2 - t0));
  }
};

// One acquisition attempt by one contender. Times are steady_clock nanoseconds (system-wide).
struct Record {
  std::int64_t start_ns = 0;          // acquire call started
  std::int64_t acquired_ns = 0;       // acquire call returned
  std::int64_t release_start_ns = 0;  // release call started (critical section over)
  std::int64_t release_end_ns = 0;    // release call returned
  std::int64_t fence = 0;             // dblock: the lease's fence; floor: = seq
  std::int64_t seq = 0;               // order of entry into the critical section (shared counter)
  std::int32_t process = 0;
  std::int32_t acquired = 0;          // 0: the wait ran out (a starved waiter)
  std::int32_t release_ok = 0;        // dblock: release() said kReleased; floor: the DELETE hit
};

// Counters every contender updates inside the critical section. Lock-free atomics work across
// processes in a MAP_SHARED mapping.
struct SharedCounters {
  std::atomic<std::int64_t> next_seq{0};
  std::atomic<std::int64_t> holders{0};     // processes inside the critical section right now
  std::atomic<std::int64_t> violations{0};  // entries that found another holder inside
};

class SharedArena {
 public:
  explicit SharedArena(std::size_t records) : records_(records) {
    bytes_ = sizeof(SharedCounters) + records * sizeof(Record);
    void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::runtime_error(std::string("mmap: ") + std::strerror(errno));
    base_ = static_cast<char*>(p);
    new (base_) SharedCounters();
    for (std::size_t i = 0; i < records; ++i) new (record_ptr(i)) Record();
  }
  ~SharedArena() { munmap(base_, bytes_); }
  SharedArena(const SharedArena&) = delete;
  SharedArena& operator=(const SharedArena&) = delete;

  SharedCounters& counters() { return *reinterpret_cast<SharedCounters*>(base_); }
  Record& record(std::size_t i) { return *record_ptr(i); }
  std::size_t size() const { return records_; }

 private:
  Record* record_ptr(std::size_t i) {
    return reinterpret_cast<Record*>(base_ + sizeof(SharedCounters)) + i;
  }
  char* base_ = nullptr;
  std::size_t bytes_ = 0;
  std::size_t records_ = 0;
};

// The work done while holding the lock: stamp the entry order, check that nobody else is inside,
// burn kCriticalSection of CPU.
inline void critical_section(SharedCounters& counters, Record& record) {
  record.seq = counters.next_seq.fetch_add(1);
  if (counters.holders.fetch_add(1) != 0) counters.violations.fetch_add(1);
  dblock_bench::busy_wait(kCriticalSection);
  counters.holders.fetch_sub(1);
}

// Start line for the contenders: each one reports ready on one pipe and then blocks reading the
// other; the parent closes that pipe's write end once all are ready, releasing everyone at once.
struct StartLine {
  int ready[2] = {-1, -1};
  int go[2] = {-1, -1};

  // Child side.
  void ready_and_wait() {
    const char byte = 'r';
    if (::write(ready[1], &byte, 1) != 1) throw std::runtime_error("start line: write failed");
    ::close(ready[1]);
    char ignored;
    while (::read(go[0], &ignored, 1) < 0 && errno == EINTR) {
    }
    ::close(go[0]);
  }
};

struct ContentionResult {
  // Server work per successful acquisition (commits, WAL records, WAL flushes), from the server's
  // cumulative statistics before and after the run; NaN when the bench does not measure them.
  double commits_per_acquisition = NAN;
  double wal_records_per_acquisition = NAN;
  double wal_flushes_per_acquisition = NAN;
  std::size_t attempts = 0;
  std::size_t acquired = 0;
  std::size_t timeouts = 0;
  std::size_t release_failures = 0;
  std::size_t handoffs = 0;
  double handoff_share = NAN;
  Summary wait_us;              // every attempt, timeouts included
  Summary handoff_latency_us;   // release start -> acquire returns in the next holder, when that
                                // holder is another process that was already waiting
  double throughput_per_s = NAN;
  double span_ms = NAN;
  std::vector<std::int64_t> per_process;            // successful acquisitions
  std::vector<std::int64_t> per_process_contended;  // ... until the first process had all of its own
  std::int64_t violations = 0;
  bool order_matches = true;   // sorting by fence gives critical-section entry order
  bool fences_unique = true;
};

inline ContentionResult analyse(SharedArena& arena, int processes) {
  ContentionResult result;
  result.per_process.assign(static_cast<std::size_t>(processes), 0);
  result.per_process_contended.assign(static_cast<std::size_t>(processes), 0);
  result.violations = arena.counters().violations.load();

  std::vector<Record> held;
  std::vector<double> waits;
  std::int64_t first_start = INT64_MAX;
  std::int64_t last_end = INT64_MIN;
  for (std::size_t i = 0; i < arena.size(); ++i) {
    const Record& r = arena.record(i);
    ++result.attempts;
    waits.push_back(static_cast<double>(r.acquired_ns - r.start_ns) / 1e3);
    first_start = std::min(first_start, r.start_ns);
    if (!r.acquired) {
      ++result.timeouts;
      last_end = std::max(last_end, r.acquired_ns);
      continue;
    }
    ++result.acquired;
    if (!r.release_ok) ++result.release_failures;
    ++result.per_process[static_cast<std::size_t>(r.process)];
    last_end = std::max(last_end, r.release_end_ns);
    held.push_back(r);
  }
  result.wait_us = summarize(std::move(waits));
  if (result.attempts > 0 && last_end > first_start) {
    result.span_ms = static_cast<double>(last_end - first_start) / 1e6;
    result.throughput_per_s = static_cast<double>(result.acquired) / (result.span_ms / 1e3);
  }

  // Fences are strictly increasing in acquisition order, so they order the hand-offs.
  std::sort(held.begin(), held.end(), [](const Record& a, const Record& b) { return a.fence < b.fence; });
  std::vector<double> latencies;
  std::vector<std::int64_t> running(static_cast<std::size_t>(processes), 0);
  bool someone_finished = false;
  for (std::size_t i = 0; i < held.size(); ++i) {
    const Record& r = held[i];
    if (!someone_finished) {
      const auto p = static_cast<std::size_t>(r.process);
      if (++running[p] == result.per_process[p]) someone_finished = true;
    }
    if (i == 0) continue;
    const Record& prev = held[i - 1];
    if (r.fence == prev.fence) result.fences_unique = false;
    if (r.seq <= prev.seq) result.order_matches = false;
    if (r.process != prev.process) {
      ++result.handoffs;
      // Only a holder that was already waiting when the release began measures the hand-off;
      // one that called acquire later would add its own scheduling delay to the figure.
      if (r.start_ns < prev.release_start_ns) {
        latencies.push_back(static_cast<double>(r.acquired_ns - prev.release_start_ns) / 1e3);
      }
    }
  }
  result.per_process_contended = running;
  if (held.size() >= 2) {
    result.handoff_share = static_cast<double>(result.handoffs) / static_cast<double>(held.size() - 1);
  }
  result.handoff_latency_us = summarize(std::move(latencies));
  return result;
}

inline std::string join(const std::vector<std::int64_t>& values) {
  std::string out;
  for (const auto v : values) {
    if (!out.empty()) out += '/';
    out += std::to_string(v);
  }
  return out;
}

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_CONTENTION_H_
