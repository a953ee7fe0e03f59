// bench/contention.h — what the dblock benchmarks share beyond bench_util.h: CPU placement, pair
// samples, and the multi-process contention machinery (records in shared memory, a start line,
// the critical section with its exclusion check, the contender loop, forking the contenders, and
// the analysis of hand-offs). Nothing here knows dblock; bench/figures.h builds on it.
//
// Header-only, one translation unit per benchmark. SharedArena lives in MAP_SHARED memory created
// before fork(); everything else is per process and not thread-safe.
#ifndef DBLOCK_BENCH_CONTENTION_H_
#define DBLOCK_BENCH_CONTENTION_H_

#include <sched.h>
#include <sys/mman.h>
#include <sys/wait.h>
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
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench_util.h"

namespace dblock_bench {

// The contention set-up every benchmark uses: kProcesses processes take turns on kHotKey, each
// waiting up to kContentionWait, holding for the busy kCriticalSection; dblock leases get
// kContentionTtl (renewal never runs during a hold this short).
inline constexpr std::chrono::microseconds kCriticalSection{20};
inline constexpr int kProcesses = 4;
inline constexpr const char* kHotKey = "hot";
inline constexpr std::chrono::seconds kContentionWait{10};
inline constexpr std::chrono::seconds kContentionTtl{5};

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

// Where this process runs. Pinning happens before anything else starts, so forked contenders and
// every dblock thread inherit the mask.
struct Placement {
  bool pinned = false;
  int cpu = -1;
  std::string how;  // why this CPU
  std::string allowed_before;
  std::string server_cpus = "unknown";  // the server process's Cpus_allowed_list, when there is one
  int server_pid = 0;
  bool overlap = false;  // the client CPU is one the server may run on
};

// The CPUs a (local) server process may run on, from /proc; "unknown" without one.
inline std::string server_cpus(int pid) {
  if (pid <= 0) return "unknown";
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Cpus_allowed_list:", 0) == 0) {
      const auto value = line.find_first_not_of(" \t", std::strlen("Cpus_allowed_list:"));
      if (value != std::string::npos) return line.substr(value);
    }
  }
  return "unknown";
}

// Pins the calling (still single-threaded) process to one CPU: `cpu` when given; else the single CPU
// of a launcher's `taskset -c N` mask; else the lowest allowed CPU the server (server_pid, 0: none)
// is not pinned to; else the lowest allowed CPU. `pin` false leaves the mask alone. Fixed CPUs keep
// migrations from blurring the figures; the scripts put the server on another CPU, so that every
// round trip crosses CPUs the same way.
inline Placement apply_placement(bool pin, std::optional<int> cpu, int server_pid = 0) {
  Placement placement;
  placement.server_pid = server_pid;
  placement.server_cpus = server_cpus(server_pid);
  cpu_set_t server_set;
  const bool server_known = parse_cpu_list(placement.server_cpus, server_set);

  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    throw std::runtime_error(std::string("sched_getaffinity: ") + std::strerror(errno));
  }
  placement.allowed_before = cpu_list(allowed);
  if (!pin) {
    placement.how = "not pinned (--no-pin); allowed CPUs " + placement.allowed_before;
    return placement;
  }
  int lowest = -1;
  int lowest_free = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (!CPU_ISSET(c, &allowed)) continue;
    if (lowest < 0) lowest = c;
    if (lowest_free < 0 && server_known && !CPU_ISSET(c, &server_set)) lowest_free = c;
  }
  if (cpu) {
    placement.cpu = *cpu;
    placement.how = "--cpu";
  } else if (CPU_COUNT(&allowed) == 1) {
    placement.cpu = lowest;  // started under `taskset -c N` (scripts/bench*.sh): keep that choice
    placement.how = "launcher's single-CPU mask";
  } else if (lowest_free >= 0) {
    placement.cpu = lowest_free;
    placement.how = "default: lowest allowed CPU the server is not pinned to";
  } else {
    placement.cpu = lowest;
    placement.how = "default: lowest allowed CPU";
  }
  cpu_set_t target;
  CPU_ZERO(&target);
  CPU_SET(placement.cpu, &target);
  if (sched_setaffinity(0, sizeof target, &target) != 0) {
    throw std::runtime_error(format("cannot pin to CPU %d (allowed: %s): %s", placement.cpu,
                                    placement.allowed_before.c_str(), std::strerror(errno)));
  }
  placement.pinned = true;
  placement.overlap = !server_known || CPU_ISSET(placement.cpu, &server_set);
  return placement;
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
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
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

// One contender's measured loop: `iterations` attempts recorded in its slice of the arena.
// attempt(j) tries to take the lock for iteration j: nullopt when the wait ran out, else the fence
// it got (0: none; the entry order into the critical section stands in). release(j) returns
// whether the release was confirmed. The record's times bracket both calls.
template <class Attempt, class Release>
void contend(SharedArena& arena, int index, int iterations, Attempt attempt, Release release) {
  for (int j = 0; j < iterations; ++j) {
    Record& r = arena.record(static_cast<std::size_t>(index * iterations + j));
    r.process = index;
    r.start_ns = now_ns();
    const std::optional<std::int64_t> fence = attempt(j);
    r.acquired_ns = now_ns();
    if (!fence) continue;
    r.acquired = 1;
    critical_section(arena.counters(), r);
    r.fence = *fence != 0 ? *fence : r.seq;
    r.release_start_ns = now_ns();
    r.release_ok = release(j) ? 1 : 0;
    r.release_end_ns = now_ns();
  }
}

// Forks `processes` contenders, starts them together and collects their records. In each child,
// contender(index, arena, start) sets up, calls start.ready_and_wait() and runs its loop; an
// exception fails the run (reported on stderr with `what`).
// REQUIRES: no LockManager and no connection open in this process (neither survives fork).
template <class Contender>
ContentionResult run_contenders(const char* what, int processes, int iterations, Contender contender) {
  SharedArena arena(static_cast<std::size_t>(processes * iterations));
  StartLine start;
  if (::pipe(start.ready) != 0 || ::pipe(start.go) != 0) {
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  std::fflush(nullptr);  // or the children would inherit, and later flush, our buffered output
  std::vector<pid_t> children;
  for (int index = 0; index < processes; ++index) {
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
      ::close(start.ready[0]);
      ::close(start.go[1]);  // or the go pipe would never reach EOF
      int status = 0;
      try {
        contender(index, arena, start);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "contender %d (%s): %s\n", index, what, e.what());
        status = 2;
      }
      ::_exit(status);  // no atexit handlers or static destructors of the parent's state
    }
    children.push_back(pid);
  }
  ::close(start.ready[1]);
  ::close(start.go[0]);
  int ready = 0;
  char byte;
  while (ready < processes) {
    const ssize_t n = ::read(start.ready[0], &byte, 1);
    if (n == 1) {
      ++ready;
    } else if (n == 0 || errno != EINTR) {
      break;  // a contender died before the start; release the others and report below
    }
  }
  ::close(start.ready[0]);
  ::close(start.go[1]);  // go
  int failed = 0;
  for (const pid_t pid : children) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  }
  if (failed > 0 || ready < processes) {
    throw std::runtime_error(format("%d of %d %s contenders failed (see stderr)", failed, processes, what));
  }
  return analyse(arena, processes);
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
