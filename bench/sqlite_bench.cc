// bench/sqlite_bench.cc — dblock on SQLite, each figure printed beside the raw sqlite3 floor
// measured in the same run (docs/design.md, "Performance").
//
// Figures (bench/README.md explains each one):
//   pair_same_name        try_acquire + release of one name     vs  INSERT OR IGNORE + DELETE
//   pair_distinct_names   the same, cycling through 10 000 names
//   acquire_* / release_* the two halves of each pair, to show where a gap comes from
//   contention_one_key    4 forked processes x K acquire(wait) -> 20 us critical section -> release
//                         of one key, vs the same loop written as a bare 1 ms polling loop
//
// The process is single-threaded apart from the threads a LockManager starts, and it forks only
// while no manager and no SQLite connection is open (neither survives a fork). Exit status: 0 when
// the benchmark ran, whatever the figures say; 1 when it could not run.

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <filesystem>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "bench_util.h"
#include "contention.h"
#include "figures.h"
#include "scale.h"
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "dblock/options.h"

#ifndef DBLOCK_BENCH_BUILD_TYPE
#define DBLOCK_BENCH_BUILD_TYPE ""
#endif

namespace dblock_bench {
namespace {

using namespace std::chrono_literals;

// Pair figures.
constexpr int kDefaultPairs = 20'000;
constexpr int kDefaultWarmup = 2'000;
constexpr int kQuickPairs = 400;
constexpr int kQuickWarmup = 100;
constexpr int kDistinctNames = 10'000;
// The target: dblock acquire+release p50 at most twice the floor's.
constexpr double kTargetRatio = 2.0;

// Contention figure (the set-up is in contention.h).
constexpr int kDefaultIterations = 500;
constexpr int kQuickIterations = 40;
constexpr auto kFloorPollSleep = 1ms;
// "No waiter starves", made checkable. The issue only asks us to report hand-off share and maximum
// wait; these bounds are ours (bench/README.md): a fair lock hands the key to another process most
// of the time, and no acquire waits anywhere near its 10 s limit.
constexpr double kMinHandoffShare = 0.5;
constexpr auto kMaxFairWait = 1s;
// Contended hand-off at 2, 4, 8 processes: throughput at 8 at least half that at 2, and no wait
// longer than this at the p99, at every count.
constexpr double kMinThroughputAt8VsAt2 = 0.5;
constexpr auto kMaxScaleWaitP99 = 20ms;

// A dblock WAL this many times the floor's after the pair figures gets flagged in the table.
constexpr std::int64_t kWalWarnFactor = 4;

// Both sides get the same busy timeout as dblock's SQLite default, so a briefly locked database
// file waits instead of failing.
constexpr int kBusyTimeoutMs = 5'000;
// Expiry the floor binds: the floor never expires anything, the column only has to be written.
constexpr auto kFloorTtl = 30s;

struct Config {
  int pairs = kDefaultPairs;
  int warmup = kDefaultWarmup;
  int iterations = kDefaultIterations;
  bool quick = false;
  bool json_only = false;
  bool pin = true;
  std::optional<int> cpu;  // unset: see choose_cpu()
  bool keep_dir = false;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--quick] [--json-only] [--cpu N | --no-pin] [--pairs N] [--iterations K] [--keep]\n"
               "  --quick         small N and K (CI smoke test)\n"
               "  --json-only     print only the BENCH_JSON lines\n"
               "  --cpu N         pin this process and its children to CPU N (default: the launcher's\n"
               "                  CPU when started with a single-CPU mask, e.g. by taskset; else the lowest\n"
               "                  allowed CPU)\n"
               "  --no-pin        do not pin (placement is reported as such)\n"
               "  --pairs N       measured acquire+release pairs per figure (default %d)\n"
               "  --iterations K  acquisitions per contending process (default %d)\n"
               "  --keep          keep the temporary directory with the database files\n",
               argv0, kDefaultPairs, kDefaultIterations);
  std::exit(status);
}

Config parse_args(int argc, char** argv) {
  Config config;
  std::optional<int> pairs;
  std::optional<int> iterations;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) usage(argv[0], 2);
      return argv[++i];
    };
    if (arg == "--quick") {
      config.quick = true;
    } else if (arg == "--json-only") {
      config.json_only = true;
    } else if (arg == "--no-pin") {
      config.pin = false;
    } else if (arg == "--cpu") {
      config.cpu = parse_non_negative(argv[0], "--cpu", next(), usage);
    } else if (arg == "--pairs") {
      pairs = parse_non_negative(argv[0], "--pairs", next(), usage);
    } else if (arg == "--iterations") {
      iterations = parse_non_negative(argv[0], "--iterations", next(), usage);
    } else if (arg == "--keep") {
      config.keep_dir = true;
    } else if (arg == "--help" || arg == "-h") {
      usage(argv[0], 0);
    } else {
      std::fprintf(stderr, "%s: unknown argument: %s\n", argv[0], argv[i]);
      usage(argv[0], 2);
    }
  }
  if (config.quick) {
    config.pairs = kQuickPairs;
    config.warmup = kQuickWarmup;
    config.iterations = kQuickIterations;
  }
  if (pairs) config.pairs = std::max(*pairs, 1);
  if (iterations) config.iterations = std::max(*iterations, 2);
  return config;
}

// Size of a file, or -1 when it does not exist.
std::int64_t file_bytes(const std::string& path) {
  std::error_code error;
  const auto size = std::filesystem::file_size(path, error);
  return error ? -1 : static_cast<std::int64_t>(size);
}

// ---------------------------------------------------------------------------------------------
// Temporary directory

class TempDir {
 public:
  explicit TempDir(bool keep) : keep_(keep) {
    const char* base = std::getenv("TMPDIR");
    std::string pattern = std::string(base && *base ? base : "/tmp") + "/dblock-bench-XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) {
      throw std::runtime_error("mkdtemp " + pattern + ": " + std::strerror(errno));
    }
    path_ = pattern;
  }
  ~TempDir() {
    if (keep_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool keep_;
};

// ---------------------------------------------------------------------------------------------
// The floor: the bare two statements through sqlite3, nothing else.

// 16 bytes like dblock's owner secret, but from a counter: the floor does not pay for getrandom(2).
struct Owner {
  std::uint64_t process = 0;
  std::uint64_t sequence = 0;
};
static_assert(sizeof(Owner) == 16);

std::int64_t floor_expiry_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             (std::chrono::system_clock::now() + kFloorTtl).time_since_epoch())
      .count();
}

// One connection to the floor's database file, opened the way a careful hand-written lock table
// would be: WAL, synchronous=NORMAL, a busy timeout and the two statements prepared once.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    const int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
    if (rc != SQLITE_OK) {
      const std::string message = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      throw std::runtime_error("floor: cannot open " + path + ": " + message);
    }
    sqlite3_busy_timeout(db_, kBusyTimeoutMs);
    exec("PRAGMA journal_mode=WAL");
    exec("PRAGMA synchronous=NORMAL");
    exec("CREATE TABLE IF NOT EXISTS raw_locks(name TEXT PRIMARY KEY, owner BLOB, expires INTEGER)");
    insert_ = prepare("INSERT OR IGNORE INTO raw_locks VALUES(?,?,?)");
    delete_ = prepare("DELETE FROM raw_locks WHERE name=? AND owner=?");
  }
  ~RawDb() {
    sqlite3_finalize(insert_);
    sqlite3_finalize(delete_);
    sqlite3_close(db_);
  }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  // True when the row was inserted (the lock was free).
  bool try_insert(std::string_view name, const Owner& owner, std::int64_t expires) {
    sqlite3_bind_text(insert_, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    sqlite3_bind_blob(insert_, 2, &owner, sizeof owner, SQLITE_STATIC);
    sqlite3_bind_int64(insert_, 3, expires);
    step_done(insert_, "INSERT");
    return sqlite3_changes(db_) == 1;
  }

  // True when this owner's row was deleted.
  bool remove(std::string_view name, const Owner& owner) {
    sqlite3_bind_text(delete_, 1, name.data(), static_cast<int>(name.size()), SQLITE_STATIC);
    sqlite3_bind_blob(delete_, 2, &owner, sizeof owner, SQLITE_STATIC);
    step_done(delete_, "DELETE");
    return sqlite3_changes(db_) == 1;
  }

 private:
  void exec(const char* sql) {
    char* error = nullptr;
    if (sqlite3_exec(db_, sql, nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string message = error ? error : "unknown error";
      sqlite3_free(error);
      throw std::runtime_error(std::string("floor: ") + sql + ": " + message);
    }
  }
  sqlite3_stmt* prepare(const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v3(db_, sql, -1, SQLITE_PREPARE_PERSISTENT, &stmt, nullptr) != SQLITE_OK) {
      throw std::runtime_error(std::string("floor: prepare ") + sql + ": " + sqlite3_errmsg(db_));
    }
    return stmt;
  }
  void step_done(sqlite3_stmt* stmt, const char* what) {
    const int rc = sqlite3_step(stmt);
    sqlite3_reset(stmt);
    if (rc != SQLITE_DONE) {
      throw std::runtime_error(std::string("floor: ") + what + ": " + sqlite3_errstr(rc));
    }
  }

  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  sqlite3_stmt* delete_ = nullptr;
};

// ---------------------------------------------------------------------------------------------
// Pair figures

class FloorSide {
 public:
  explicit FloorSide(RawDb& db) : db_(db) {}

  void pair(std::string_view name, PairSamples* out) {
    const Owner owner{static_cast<std::uint64_t>(::getpid()), ++sequence_};
    const auto t0 = Clock::now();
    const bool inserted = db_.try_insert(name, owner, floor_expiry_us());
    const auto t1 = Clock::now();
    const bool deleted = inserted && db_.remove(name, owner);
    const auto t2 = Clock::now();
    if (!inserted || !deleted) throw std::runtime_error("floor: uncontended INSERT/DELETE did not change a row");
    if (out) out->add(t0, t1, t2);
  }

 private:
  RawDb& db_;
  std::uint64_t sequence_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Contention figure: forked processes, results in shared memory.

enum class Kind { kDblock, kDblockUnfair, kFloor };

// The blog-post lock: INSERT OR IGNORE until it sticks, sleeping a fixed 1 ms after each miss.
void floor_contender(const std::string& path, int index, int iterations, SharedArena& arena, StartLine& start) {
  RawDb db(path);
  start.ready_and_wait();
  auto owner = [&](int j) { return Owner{static_cast<std::uint64_t>(index), static_cast<std::uint64_t>(j)}; };
  contend(
      arena, index, iterations,
      [&](int j) -> std::optional<std::int64_t> {
        const auto deadline = Clock::now() + kContentionWait;
        while (!db.try_insert(kHotKey, owner(j), floor_expiry_us())) {
          if (Clock::now() >= deadline) return std::nullopt;
          std::this_thread::sleep_for(kFloorPollSleep);
        }
        return std::int64_t{0};  // the floor has no fence; the entry order stands in
      },
      [&](int j) { return db.remove(kHotKey, owner(j)); });
}

// Forks `processes` contenders of `kind`, starts them together and collects their records.
// REQUIRES: no LockManager and no SQLite connection open in this process (neither survives fork).
ContentionResult run_contention(Kind kind, const std::string& target, int processes, int iterations) {
  dblock::ManagerOptions options;
  options.reaper = false;  // as in the pair figures: no background writes beside the measured ones
  options.default_ttl = kContentionTtl;
  options.fair = kind != Kind::kDblockUnfair;
  return run_contenders(kind == Kind::kFloor ? "floor" : "dblock", processes, iterations,
                        [&](int index, SharedArena& arena, StartLine& start) {
                          if (kind != Kind::kFloor) {
                            dblock_bench::dblock_lease_contender(target, options, index, iterations, arena, start);
                          } else {
                            floor_contender(target, index, iterations, arena, start);
                          }
                        });
}

// ---------------------------------------------------------------------------------------------
// Output

bool starvation_free(const ContentionResult& r) {
  return r.timeouts == 0 && r.violations == 0 && r.handoff_share >= kMinHandoffShare &&
         r.wait_us.max <= to_us(kMaxFairWait);
}

void print_contention_table(const ContentionResult& d, const ContentionResult& f, int iterations) {
  std::printf("contention: %d processes x %d acquire(\"%s\", wait=%llds) -> %lld us busy critical section -> release\n",
              kProcesses, iterations, kHotKey, static_cast<long long>(kContentionWait.count()),
              static_cast<long long>(kCriticalSection.count()));
  std::printf("%-46s %16s %18s\n", "", "dblock", "floor (1 ms poll)");
  auto row = [](const char* label, const std::string& a, const std::string& b) {
    std::printf("%-46s %16s %18s\n", label, a.c_str(), b.c_str());
  };
  auto pct = [](double v) { return std::isfinite(v) ? format("%.1f%%", 100.0 * v) : std::string("n/a"); };
  auto ms = [](double us) { return cell(us / 1e3, "%.3f"); };
  row("hand-off share (next holder is another proc)", pct(d.handoff_share), pct(f.handoff_share));
  row("max wait (ms)", ms(d.wait_us.max), ms(f.wait_us.max));
  row("p50 wait (ms)", ms(d.wait_us.p50), ms(f.wait_us.p50));
  row("p99 wait (ms)", ms(d.wait_us.p99), ms(f.wait_us.p99));
  row("hand-off latency p50 (ms, release -> waiter)", ms(d.handoff_latency_us.p50), ms(f.handoff_latency_us.p50));
  row("hand-off latency p99 (ms)", ms(d.handoff_latency_us.p99), ms(f.handoff_latency_us.p99));
  row("throughput (acquisitions/s)", cell(d.throughput_per_s, "%.0f"), cell(f.throughput_per_s, "%.0f"));
  row("acquisitions per process (total)", join(d.per_process), join(f.per_process));
  row("  ... until the first process finished", join(d.per_process_contended), join(f.per_process_contended));
  row("timeouts (waits that ran out)", std::to_string(d.timeouts), std::to_string(f.timeouts));
  row("mutual-exclusion violations", std::to_string(d.violations), std::to_string(f.violations));
  row("releases that did not confirm", std::to_string(d.release_failures), std::to_string(f.release_failures));
  row("fence order = critical-section order", d.order_matches && d.fences_unique ? "yes" : "NO", "(by counter)");
  row(format("target: no waiter starves (share >= %.0f%%,", kMinHandoffShare * 100).c_str(),
      starvation_free(d) ? "PASS" : "FAIL", starvation_free(f) ? "(would pass)" : "(would fail)");
  row(format("  max wait <= %lld ms, no timeout)", static_cast<long long>(kMaxFairWait / 1ms)).c_str(), "", "");
}

int run(const Config& config) {
  // One CPU for everything makes the run repeatable on small machines (no migrations, no second
  // core absorbing a waiter), and it is the hardest case for fairness: a releasing process keeps
  // the CPU and could take the lock again before any waiter even runs.
  const Placement placement = apply_placement(config.pin, config.cpu);
  TempDir dir(config.keep_dir);
  const std::string dblock_path = dir.path() + "/bench.db";
  const std::string floor_path = dir.path() + "/floor.db";
  const std::string url = "sqlite://" + dblock_path;  // dblock_path is absolute: sqlite:///tmp/...
  const std::string date = utc_now();
  const long online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string build_type = DBLOCK_BENCH_BUILD_TYPE;
#ifdef NDEBUG
  const bool assertions = false;
#else
  const bool assertions = true;
#endif
  const std::string placement_text =
      placement.pinned ? format("all processes pinned to CPU %d", placement.cpu) : std::string("not pinned");

  if (!config.json_only) {
    std::printf("dblock sqlite_bench: dblock %s against the raw sqlite3 floor, measured in the same run\n",
                dblock::version());
    std::printf("date:      %s\n", date.c_str());
    std::printf("sqlite:    %s (WAL, synchronous=NORMAL on the floor)\n", sqlite3_libversion());
    std::printf("host:      %ld online CPUs, %s\n", online_cpus, cpu_model().c_str());
    std::printf("placement: %s (%s; allowed before: %s; forked contenders and dblock threads inherit it)\n",
                placement_text.c_str(), placement.how.c_str(), placement.allowed_before.c_str());
    std::printf("build:     %s%s\n", build_type.empty() ? "(no CMAKE_BUILD_TYPE)" : build_type.c_str(),
                assertions ? ", assertions ON: figures are not representative" : "");
    std::printf("pairs:     N=%d per figure after %d warm-up pairs, floor and dblock interleaved in blocks of %d\n",
                config.pairs, config.warmup, kInterleaveBlock);
    std::printf("dblock:    %s, reaper=false (keeps background writes out of the timed loop)\n", url.c_str());
    std::printf("floor:     %s: INSERT OR IGNORE INTO raw_locks VALUES(?,?,?) + DELETE ... WHERE name=? AND owner=?\n\n",
                floor_path.c_str());
    std::fflush(stdout);
  }

  // Pair figures. The floor and dblock use separate files in the same directory so that each side
  // pays for its own WAL growth and checkpoints.
  std::vector<Row> rows;
  std::int64_t dblock_wal_bytes = -1;
  std::int64_t floor_wal_bytes = -1;
  {
    RawDb raw(floor_path);
    dblock::ManagerOptions options;
    options.reaper = false;
    auto manager = dblock::open(url, options);
    FloorSide floor_side(raw);
    DblockLeaseSide dblock_side(*manager);

    std::fprintf(stderr, "[sqlite_bench] pairs on one name...\n");
    const PairFigure same = measure_pairs(floor_side, dblock_side, {"bench-same-name"}, config.warmup, config.pairs);
    std::vector<std::string> names;
    names.reserve(kDistinctNames);
    for (int i = 0; i < kDistinctNames; ++i) names.push_back(format("bench-name-%05d", i));
    std::fprintf(stderr, "[sqlite_bench] pairs on %d names...\n", kDistinctNames);
    const PairFigure distinct = measure_pairs(floor_side, dblock_side, names, config.warmup, config.pairs);

    rows.push_back(
        make_row("pair_same_name", "acquire+release (same name)", same.dblock.pair, same.floor.pair, kTargetRatio));
    rows.push_back(make_row("acquire_same_name", "  acquire only", same.dblock.acquire, same.floor.acquire));
    rows.push_back(make_row("release_same_name", "  release only", same.dblock.release, same.floor.release));
    rows.push_back(make_row("pair_distinct_names", "acquire+release (10k names)", distinct.dblock.pair,
                            distinct.floor.pair, kTargetRatio));
    rows.push_back(make_row("acquire_distinct_names", "  acquire only", distinct.dblock.acquire,
                            distinct.floor.acquire));
    rows.push_back(make_row("release_distinct_names", "  release only", distinct.dblock.release,
                            distinct.floor.release));
    // Measured while both sides are still open (closing checkpoints and removes the WAL). With
    // SQLite's default auto-checkpoint a WAL stays near 4 MB; one that keeps growing means
    // checkpoints are not running, and every commit then pays for extending the file.
    dblock_wal_bytes = file_bytes(dblock_path + "-wal");
    floor_wal_bytes = file_bytes(floor_path + "-wal");
  }  // manager and connection closed here: the contention figure forks next

  std::fprintf(stderr, "[sqlite_bench] contention, dblock...\n");
  const ContentionResult dblock_contention = run_contention(Kind::kDblock, url, kProcesses, config.iterations);
  std::fprintf(stderr, "[sqlite_bench] contention, floor...\n");
  const ContentionResult floor_contention = run_contention(Kind::kFloor, floor_path, kProcesses, config.iterations);

  // The same at 2, 4 and 8 processes (the contended hand-off targets).
  ScaleTargets targets;
  targets.min_throughput_last_vs_first = kMinThroughputAt8VsAt2;
  targets.max_wait_p99_us = to_us(kMaxScaleWaitP99);
  const ScaleFigure scale = measure_scale(
      "scale_lease", "contention at 2, 4, 8 processes: acquire(wait) -> 20 us -> release, one name", targets,
      {{"dblock", "dblock lease"}, {"floor", "raw INSERT OR IGNORE, 1 ms poll"}, {"unfair", "dblock lease, fair=false"}},
      [&](std::size_t side, int processes) {
        const Kind kind = side == 0 ? Kind::kDblock : side == 1 ? Kind::kFloor : Kind::kDblockUnfair;
        std::fprintf(stderr, "[sqlite_bench] scale, %d processes, side %zu...\n", processes, side);
        return run_contention(kind, kind == Kind::kFloor ? floor_path : url, processes, config.iterations);
      });

  if (!config.json_only) {
    print_table(rows);
    std::printf("WAL size after the pair figures: dblock %.1f MB, floor %.1f MB%s\n\n",
                static_cast<double>(dblock_wal_bytes) / 1e6, static_cast<double>(floor_wal_bytes) / 1e6,
                dblock_wal_bytes > kWalWarnFactor * std::max<std::int64_t>(floor_wal_bytes, 1)
                    ? "  <- dblock's WAL is not being checkpointed"
                    : "");
    print_contention_table(dblock_contention, floor_contention, config.iterations);
    print_scale_table(scale);
    std::printf("\n");
  }
  std::printf("BENCH_JSON %s\n",
              JsonLine()
                  .add("figure", "run")
                  .add("date", date)
                  .add("dblock_version", dblock::version())
                  .add("sqlite_version", sqlite3_libversion())
                  .add("build_type", build_type)
                  .add("assertions", assertions)
                  .add("online_cpus", static_cast<std::int64_t>(online_cpus))
                  .add("pinned", placement.pinned)
                  .add("cpu", placement.cpu)
                  .add("placement", placement_text)
                  .add("pairs", config.pairs)
                  .add("warmup", config.warmup)
                  .add("distinct_names", kDistinctNames)
                  .add("processes", kProcesses)
                  .add("iterations", config.iterations)
                  .add("quick", config.quick)
                  .add("reaper", false)
                  .str()
                  .c_str());
  for (const Row& row : rows) print_row_json(row);
  std::printf("BENCH_JSON %s\n", JsonLine()
                                      .add("figure", "wal_after_pairs")
                                      .add("dblock_wal_bytes", dblock_wal_bytes)
                                      .add("floor_wal_bytes", floor_wal_bytes)
                                      .str()
                                      .c_str());
  JsonLine contention;
  contention.add("figure", "contention_one_key")
      .add("processes", kProcesses)
      .add("iterations", config.iterations)
      .add("critical_section_us", static_cast<std::int64_t>(kCriticalSection.count()))
      .add("wait_ms", static_cast<std::int64_t>(kContentionWait / 1ms))
      .add("floor_poll_ms", static_cast<std::int64_t>(kFloorPollSleep / 1ms))
      .add("dblock_ttl_ms", static_cast<std::int64_t>(kContentionTtl / 1ms));
  add_contention_json(contention, "dblock", dblock_contention);
  add_contention_json(contention, "floor", floor_contention);
  contention.add("dblock_fence_order_ok", dblock_contention.order_matches && dblock_contention.fences_unique)
      .add("target_min_handoff_share", kMinHandoffShare, "%.2f")
      .add("target_max_wait_us", static_cast<std::int64_t>(kMaxFairWait / 1us))
      .add("pass", starvation_free(dblock_contention));
  std::printf("BENCH_JSON %s\n", contention.str().c_str());
  print_scale_json(scale, config.iterations);
  return 0;
}

}  // namespace
}  // namespace dblock_bench

int main(int argc, char** argv) {
  const dblock_bench::Config config = dblock_bench::parse_args(argc, argv);
  return dblock_bench::run_reporting_errors("sqlite_bench", [&] { return dblock_bench::run(config); });
}
