// bench/redis_bench.cc — dblock on Redis (redis:// backend), each figure printed beside the raw
// hiredis floor measured in the same run (docs/design.md, "Performance"). Modelled on mysql_bench.cc.
//
// Figures (bench/README.md explains each one):
//   lease_pair      try_acquire + release            vs  SET key token NX PX ttl + EVALSHA of the
//                                                        standard compare-and-delete, one hiredis connection
//   multi_pair      acquire_all of two names (one script) + both releases
//                                                    vs  SET NX PX of each + compare-and-delete of each
//                   (diag: the same two names taken one by one, as services without MultiAcquire do)
//   redlock_pair    try_acquire + release on redlock:// (3 masters)
//                                                    vs  SET NX PX on the three at once + the compare-and-delete
//                                                        on the three at once (each node's request written
//                                                        before any reply is read; diag: one after another)
//   handoff_lease   4 processes x K acquire(wait=10s) -> 20 us -> release of one name
//                                                    vs  a token list: BLPOP the token, hold, RPUSH it back
//   scale_lease     the same hand-off at 2, 4 and 8 processes, beside the BLPOP floor, a SET NX loop
//                   polling every 1 ms and dblock with fair = false
// plus diagnostics: dblock's own scripts sent from raw hiredis (pair rows), and the server's CPU
// time (INFO cpu) per pair of each side and per acquisition of the 4-process hand-offs.
//
// Placement: the server runs on one CPU (scripts/bench-redis.sh starts it and pins it with taskset)
// and this process pins itself to another before anything starts; forked contenders and dblock's
// threads inherit the client CPU. The process forks only while it holds no connection and no
// LockManager. Exit status: 0 when the benchmark ran, whatever the figures say; 1 when it could
// not run (no URL, server unreachable, ...).

#include <hiredis/hiredis.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
#include <fstream>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "bench_args.h"
#include "bench_util.h"
#include "contention.h"
#include "figures.h"
#include "raw_redis.h"
#include "scale.h"
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "dblock/options.h"
#include "dblock/url.h"
// Diagnostics only: the backend's own scripts and key names, so that "dblock's scripts sent from raw
// hiredis" can be measured beside the floor and dblock (separating script cost from client overhead).
#include "keys.h"
#include "scripts.h"

#ifndef DBLOCK_BENCH_BUILD_TYPE
#define DBLOCK_BENCH_BUILD_TYPE ""
#endif

namespace dblock_bench {
namespace {

using namespace std::chrono_literals;

// The URL: --url, else the first of these that is set (the second is what the Redis tests' fixture
// exports, so the ctest smoke test and a shell that runs the tests need nothing more).
constexpr const char* kUrlEnv = "DBLOCK_BENCH_REDIS_URL";
constexpr const char* kTestUrlEnv = "DBLOCK_TEST_REDIS_URL";

// Pair figures.
constexpr int kDefaultPairs = 20'000;
constexpr int kDefaultWarmup = 2'000;
constexpr int kQuickPairs = 300;
constexpr int kQuickWarmup = 50;

// Hand-off figures (the contention set-up is in contention.h).
constexpr int kDefaultIterations = 500;
constexpr int kQuickIterations = 30;

// Targets (issue 29).
constexpr double kTargetLeasePair = 1.15;
constexpr double kTargetHandoff = 1.3;
constexpr double kTargetRedlockPair = 1.2;  // hand-off latency p50 vs the BLPOP floor, at 2, 4 and 8 processes
constexpr auto kRawPollSleep = 1ms;     // the SET NX polling floor's pause after a miss

// Server CPU per pair: measured on a separate pass of at most this many pairs per side, after the
// interleaved figure (INFO cpu around each pass; informational).
constexpr int kServerCpuPairs = 5'000;

// The lease time of the floors' SET ... PX and of dblock's pair leases (ManagerOptions default).
constexpr std::chrono::milliseconds kPairTtl{30'000};

// Everything this benchmark creates is a key beginning with "dblock_bench_" or "{dblock_bench_",
// deleted at the start and (unless --keep) at the end, so it can share a server with the tests.
constexpr const char* kPrefix = "dblock_bench_";           // dblock's prefix (table_prefix)
constexpr const char* kDiagPrefix = "dblock_bench_diag_";  // dblock's scripts sent raw
constexpr const char* kRawPrefix = "dblock_bench_raw:";    // the SET NX floor's keys
constexpr const char* kTokenKey = "dblock_bench_raw_token";  // the BLPOP floor's token list
const std::vector<std::string> kCleanupPatterns = {"dblock_bench_*", "{dblock_bench_*"};

constexpr const char* kAllFigures[] = {"pairs", "multi", "redlock", "handoff", "scale"};

struct Config : ServerBenchFlags {
  std::string redlock_url;  // redlock_pair: the masters; the figure is left out without it
  int pairs = kDefaultPairs;
  int warmup = kDefaultWarmup;
  int iterations = kDefaultIterations;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--url URL] [--quick] [--json-only] [--cpu N | --no-pin] [--server-pid PID]\n"
               "          [--pairs N] [--iterations K] [--figures LIST] [--redlock-url URL] [--keep]\n"
               "  --url URL         redis://[user:password@]host[:port][/db] (default: $%s, else $%s)\n"
               "  --quick           small N everywhere (CI smoke test)\n"
               "  --json-only       print only the BENCH_JSON lines\n"
               "  --cpu N           pin this process and its children to CPU N (default: the launcher's CPU\n"
               "                    when started with a single-CPU mask; else the lowest allowed CPU the\n"
               "                    server is not pinned to)\n"
               "  --no-pin          do not pin (placement is reported as such)\n"
               "  --server-pid PID  the redis-server pid, for its CPU placement (default: INFO's process_id\n"
               "                    when the server is on this host)\n"
               "  --pairs N         measured pairs per pair figure (default %d)\n"
               "  --iterations K    acquisitions per contending process (default %d)\n"
               "  --figures LIST    comma-separated subset of pairs,multi,redlock,handoff,scale\n"
               "  --redlock-url URL redlock://h1:p1,h2:p2,h3:p3 for the redlock figure (left out without it)\n"
               "  --keep            keep the dblock_bench_* keys afterwards\n",
               argv0, kUrlEnv, kTestUrlEnv, kDefaultPairs, kDefaultIterations);
  std::exit(status);
}

Config parse_args(int argc, char** argv) {
  Config config;
  parse_server_flags(argc, argv, kAllFigures, usage, config, [&](std::string_view arg, auto next) {
    if (arg != "--redlock-url") return false;
    config.redlock_url = next();
    return true;
  });
  for (const char* env : {kUrlEnv, kTestUrlEnv}) {
    if (!config.url.empty()) break;
    if (const char* value = std::getenv(env); value != nullptr) config.url = value;
  }
  if (config.url.empty()) {
    std::fprintf(stderr, "%s: no server: pass --url redis://... or set %s\n", argv[0], kUrlEnv);
    std::exit(1);
  }
  if (config.url.find('?') != std::string::npos) {
    // The benchmark decides the key prefix (its cleanup depends on it) and the waiting mode.
    std::fprintf(stderr, "%s: the URL must not carry options (?...): the benchmark sets its own prefix\n", argv[0]);
    std::exit(1);
  }
  if (config.redlock_url.find('?') != std::string::npos) {
    std::fprintf(stderr, "%s: the Redlock URL must not carry options (?...)\n", argv[0]);
    std::exit(1);
  }
  if (config.quick) {
    config.pairs = kQuickPairs;
    config.warmup = kQuickWarmup;
    config.iterations = kQuickIterations;
  }
  if (config.pairs_given) config.pairs = std::max(*config.pairs_given, 1);
  if (config.iterations_given) config.iterations = std::max(*config.iterations_given, 2);
  return config;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

void progress(const char* what) { std::fprintf(stderr, "[redis_bench] %s\n", what); }

// ---------------------------------------------------------------------------------------------
// Pair figures

// The floor's pair: SET NX PX of each of the name's keys (the name itself, or the name + each of
// `suffixes`), then the compare-and-delete of each.
class RawLeaseSide {
 public:
  explicit RawLeaseSide(RawRedis& c, std::vector<std::string> suffixes = {""})
      : lock_(c, kPairTtl), suffixes_(std::move(suffixes)) {}

  void pair(const std::string& name, PairSamples* out) {
    const std::string token = counter_token(static_cast<std::uint64_t>(::getpid()), ++sequence_);
    const auto t0 = Clock::now();
    bool acquired = true;
    for (const std::string& s : suffixes_) acquired = acquired && lock_.acquire(kRawPrefix + name + s, token);
    const auto t1 = Clock::now();
    bool released = acquired;
    for (const std::string& s : suffixes_) released = released && lock_.release(kRawPrefix + name + s, token);
    const auto t2 = Clock::now();
    if (!acquired || !released) throw std::runtime_error("floor: uncontended SET NX / compare-and-delete failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  RawLock lock_;
  const std::vector<std::string> suffixes_;
  std::uint64_t sequence_ = 0;
};

// Diagnostic: dblock's own acquire and release scripts (scripts.h, with the prelude, as the service
// loads them) sent by EVALSHA from a raw hiredis connection, with the arguments the service sends for
// an exclusive try_acquire and its release, on dblock's key layout under kDiagPrefix. dblock minus
// this is client-side overhead (secret, engine, pool, per-call deadlines); this minus the floor is
// the cost of dblock's scripts on the server.
class DblockScriptSide {
 public:
  explicit DblockScriptSide(RawRedis& c)
      : c_(c),
        acquire_sha_(c.text({"SCRIPT", "LOAD",
                             std::string(dblock::redis::scripts::kPrelude).append(dblock::redis::scripts::kAcquire)})),
        release_sha_(c.text({"SCRIPT", "LOAD",
                             std::string(dblock::redis::scripts::kPrelude).append(dblock::redis::scripts::kRelease)})),
        ttl_us_(std::to_string(kPairTtl.count() * 1000)),
        holder_(format("bench-host:%d:1", static_cast<int>(::getpid()))),
        channel_(dblock::redis::release_channel(kDiagPrefix)) {}

  void pair(const std::string& name, PairSamples* out) {
    const dblock::redis::LockKeys k(kDiagPrefix, name);
    const std::string secret = counter_secret(static_cast<std::uint64_t>(::getpid()), ++sequence_);
    const auto t0 = Clock::now();
    ReplyPtr a = RawRedis::check(c_.command({"EVALSHA", acquire_sha_, "4", k.lease, k.fence, k.queue, k.queue_info, secret,
                                             holder_, ttl_us_, "x", "0", "0", "0", "0"}),
                                 "EVALSHA acquire");
    const bool acquired = a->type == REDIS_REPLY_ARRAY && a->elements >= 1 && a->element[0]->integer == 1;
    const auto t1 = Clock::now();
    bool released = false;
    if (acquired) {
      ReplyPtr r = RawRedis::check(c_.command({"EVALSHA", release_sha_, "5", k.lease, k.fence, k.queue, k.queue_info,
                                               k.latch(std::string(40, '0')), secret, "x", channel_, name, "1", "0", "0"}),
                                   "EVALSHA release");
      released = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    }
    const auto t2 = Clock::now();
    if (!acquired || !released) throw std::runtime_error("diagnostic: dblock's scripts did not acquire/release");
    if (out) out->add(t0, t1, t2);
  }

 private:
  RawRedis& c_;
  std::string acquire_sha_, release_sha_, ttl_us_, holder_, channel_;
  std::uint64_t sequence_ = 0;
};

// dblock's acquire_all of two names + the release of each; `one_by_one` takes them with two
// try_acquire calls instead (what acquire_all does on a service without MultiAcquire).
class DblockMultiSide {
 public:
  DblockMultiSide(dblock::LockManager& manager, bool one_by_one) : manager_(manager), one_by_one_(one_by_one) {}

  void pair(const std::string& name, PairSamples* out) {
    const auto t0 = Clock::now();
    std::vector<dblock::Lease> held;
    if (one_by_one_) {
      for (const char* suffix : {"/1", "/2"}) {
        if (auto lease = manager_.try_acquire(name + suffix)) held.push_back(std::move(*lease));
      }
    } else if (auto all = manager_.acquire_all({name + "/1", name + "/2"}, std::chrono::milliseconds(0))) {
      held = std::move(*all);
    }
    const auto t1 = Clock::now();
    bool released = held.size() == 2;
    for (auto it = held.rbegin(); it != held.rend(); ++it) released = it->release() == dblock::ReleaseResult::kReleased && released;
    held.clear();
    const auto t2 = Clock::now();
    if (!released) throw std::runtime_error("dblock: uncontended acquire_all/release of two names failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  dblock::LockManager& manager_;
  const bool one_by_one_;
};

// Redlock's floor: the single-key lock on every master at once (raw_redis.h, RawQuorumLock).
class RawQuorumSide {
 public:
  RawQuorumSide(std::vector<std::unique_ptr<RawRedis>>& nodes, bool parallel) : lock_(nodes, kPairTtl, parallel), all_(nodes.size()) {}

  void pair(const std::string& name, PairSamples* out) {
    const std::string token = counter_token(static_cast<std::uint64_t>(::getpid()), ++sequence_);
    const std::string key = kRawPrefix + name;
    const auto t0 = Clock::now();
    const std::size_t taken = lock_.acquire(key, token);
    const auto t1 = Clock::now();
    const std::size_t released = lock_.release(key, token);
    const auto t2 = Clock::now();
    if (taken != all_ || released != all_) throw std::runtime_error("floor: uncontended quorum SET NX / release failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  RawQuorumLock lock_;
  const std::size_t all_;
  std::uint64_t sequence_ = 0;
};

// One raw connection per master of a redlock:// URL.
std::vector<std::unique_ptr<RawRedis>> connect_nodes(const std::string& redlock_url) {
  const dblock::Url u = dblock::parse_url(redlock_url);
  if (u.scheme != "redlock") throw std::runtime_error("not a redlock:// URL: " + u.redacted());
  if (!u.user.empty() || !u.password.empty()) throw std::runtime_error("redlock figure: masters without credentials only");
  std::vector<std::unique_ptr<RawRedis>> nodes;
  for (const auto& h : u.hosts) {
    const std::string db = u.path.empty() ? "" : "/" + u.path;
    nodes.push_back(std::make_unique<RawRedis>(format("redis://%s:%d%s", h.host.c_str(), h.port, db.c_str())));
  }
  return nodes;
}

dblock::ManagerOptions manager_options() {
  dblock::ManagerOptions options;
  options.table_prefix = kPrefix;  // the redis:// prefix defaults to it
  options.reaper = false;          // no background work beside the measured calls
  return options;
}

// ---------------------------------------------------------------------------------------------
// Hand-off figures: forked processes, results in shared memory.

enum class Kind { kDblockLease, kDblockLeaseUnfair, kRawBlpop, kRawPoll };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kDblockLease: return "dblock lease";
    case Kind::kDblockLeaseUnfair: return "dblock lease (fair=false)";
    case Kind::kRawBlpop: return "raw BLPOP token";
    case Kind::kRawPoll: return "raw SET NX, 1 ms poll";
  }
  return "?";
}

// The hand-off floor: one token in a list; a contender BLPOPs it (the server queues blocked clients
// and serves them first come, first served), holds, and RPUSHes it back, which wakes the next one.
// No expiry, no fence, no owner check: a holder that dies takes the token with it.
void raw_blpop_contender(const std::string& url, int index, int iterations, SharedArena& arena, StartLine& start) {
  RawRedis c(url);
  const std::string wait_s = std::to_string(kContentionWait.count());
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int) -> std::optional<std::int64_t> {
        ReplyPtr r = RawRedis::check(c.command({"BLPOP", kTokenKey, wait_s}), "BLPOP");
        if (r->type != REDIS_REPLY_ARRAY) return std::nullopt;  // nil: the wait ran out
        return std::int64_t{0};                                  // no fence
      },
      [&](int) {
        ReplyPtr r = RawRedis::check(c.command({"RPUSH", kTokenKey, "token"}), "RPUSH");
        return r->type == REDIS_REPLY_INTEGER && r->integer >= 1;
      });
}

// The blog-post lock under contention: SET NX PX until it sticks, kRawPollSleep after each miss,
// compare-and-delete on release (whoever polls first after a release gets it).
void raw_poll_contender(const std::string& url, int index, int iterations, SharedArena& arena, StartLine& start) {
  RawRedis c(url);
  RawLock lock(c, kPairTtl);
  const std::string key = std::string(kRawPrefix) + kHotKey;
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int j) -> std::optional<std::int64_t> {
        const std::string token = counter_token(static_cast<std::uint64_t>(index), static_cast<std::uint64_t>(j));
        const auto deadline = Clock::now() + kContentionWait;
        while (!lock.acquire(key, token)) {
          if (Clock::now() >= deadline) return std::nullopt;
          std::this_thread::sleep_for(kRawPollSleep);
        }
        return std::int64_t{0};
      },
      [&](int j) {
        return lock.release(key, counter_token(static_cast<std::uint64_t>(index), static_cast<std::uint64_t>(j)));
      });
}

// Puts exactly one token in the BLPOP floor's list and frees the polling floor's key.
// Opens and closes its own connection: call it before forking.
void reset_floors(const std::string& url) {
  RawRedis c(url);
  RawRedis::check(c.command({"DEL", kTokenKey, std::string(kRawPrefix) + kHotKey}), "DEL");
  RawRedis::check(c.command({"RPUSH", kTokenKey, "token"}), "RPUSH");
}

// Forks `processes` contenders of `kind` on kHotKey and collects their records.
// REQUIRES: no LockManager and no connection open in this process.
ContentionResult run_contention(Kind kind, const std::string& url, int processes, int iterations) {
  if (kind == Kind::kRawBlpop || kind == Kind::kRawPoll) reset_floors(url);
  dblock::ManagerOptions options = manager_options();
  options.default_ttl = kContentionTtl;
  options.fair = kind != Kind::kDblockLeaseUnfair;
  return run_contenders(kind_name(kind), processes, iterations, [&](int index, SharedArena& arena, StartLine& start) {
    switch (kind) {
      case Kind::kDblockLease:
      case Kind::kDblockLeaseUnfair:
        dblock_bench::dblock_lease_contender(url, options, index, iterations, arena, start);
        break;
      case Kind::kRawBlpop: raw_blpop_contender(url, index, iterations, arena, start); break;
      case Kind::kRawPoll: raw_poll_contender(url, index, iterations, arena, start); break;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Output

bool local_host(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

// The redis-server pid, for its CPU placement: --server-pid, else INFO's process_id when the server
// is on this host and that pid is a redis-server here; 0 when unknown.
int find_server_pid(const Config& config, const RawTarget& target, const std::string& info) {
  if (config.server_pid) return *config.server_pid;
  if (!local_host(target.host)) return 0;
  const int pid = std::atoi(info_field(info, "process_id").c_str());
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string cmdline;
  std::getline(in, cmdline, '\0');
  return cmdline.find("redis-server") != std::string::npos ? pid : 0;
}

int run(const Config& config) {
  // Server facts first (this connection is closed before anything forks).
  std::string server_version, aof, appendfsync, save, io_threads;
  RawTarget target;
  int server_pid = 0;
  {
    RawRedis c(config.url);
    target = c.target();
    const std::string info = c.text({"INFO", "server"});
    server_version = info_field(info, "redis_version");
    server_pid = find_server_pid(config, target, info);
    aof = info_field(c.text({"INFO", "persistence"}), "aof_enabled") == "1" ? "on" : "off";
    appendfsync = config_get(c, "appendfsync");
    save = config_get(c, "save");
    io_threads = config_get(c, "io-threads");
    drop_keys(c, kCleanupPatterns);
  }
  const Placement placement = apply_placement(config.pin, config.cpu, server_pid);
  const std::string date = utc_now();
  const long online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string build_type = DBLOCK_BENCH_BUILD_TYPE;
  const std::string hiredis_version = format("%d.%d.%d", HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH);
#ifdef NDEBUG
  const bool assertions = false;
#else
  const bool assertions = true;
#endif
  const std::string redacted_url = redact_password(config.url);
  const std::string persistence =
      aof == "on" ? format("AOF on, appendfsync %s", appendfsync.c_str()) : std::string("AOF off");

  if (!config.json_only) {
    std::printf("dblock redis_bench: dblock %s against raw hiredis commands, measured in the same run\n",
                dblock::version());
    std::printf("date:      %s\n", date.c_str());
    std::printf("server:    Redis %s at %s (%s, save \"%s\", io-threads %s), hiredis %s\n", server_version.c_str(),
                redacted_url.c_str(), persistence.c_str(), save.c_str(), io_threads.c_str(), hiredis_version.c_str());
    std::printf("host:      %ld online CPUs, %s\n", online_cpus, cpu_model().c_str());
    print_placement(placement, "redis-server pid");
    std::printf("build:     %s%s\n", build_type.empty() ? "(no CMAKE_BUILD_TYPE)" : build_type.c_str(),
                assertions ? ", assertions ON: figures are not representative" : "");
    std::printf("pairs:     N=%d per figure after %d warm-up pairs, floor and dblock interleaved in blocks of %d\n",
                config.pairs, config.warmup, kInterleaveBlock);
    std::printf("dblock:    LockManager per figure, prefix %s, reaper=false, waiters woken by pub/sub\n", kPrefix);
    std::printf("floor:     one hiredis connection; SET key token NX PX %lld + EVALSHA compare-and-delete;\n"
                "           hand-off: BLPOP / RPUSH of one token in a list\n\n",
                static_cast<long long>(kPairTtl.count()));
    std::fflush(stdout);
  }

  std::vector<Row> rows;
  // Server CPU (µs) per pair or per acquisition, by figure and side; NaN: not measured.
  struct ServerCpu {
    int pairs = 0;
    double floor_pair = NAN, dblock_pair = NAN, diag_pair = NAN;
    double handoff_dblock = NAN, handoff_floor = NAN;
  } server_cpu;

  // --- pair figures ---------------------------------------------------------------------------
  if (config.wants("pairs")) {
    progress("lease pairs...");
    RawRedis raw(config.url);
    RawRedis diag_connection(config.url);
    auto manager = dblock::open(config.url, manager_options());
    RawLeaseSide floor_side(raw);
    DblockLeaseSide dblock_side(*manager);
    DblockScriptSide diag_side(diag_connection);
    const PairFigure f = measure_pairs(floor_side, dblock_side, diag_side, {"bench-lease"}, config.warmup, config.pairs);
    rows.push_back(make_row("lease_pair", "lease acquire+release (vs SET NX + CAD)", f.dblock.pair, f.floor.pair,
                            kTargetLeasePair));
    rows.push_back(make_row("lease_acquire", "  acquire only (vs SET NX PX)", f.dblock.acquire, f.floor.acquire));
    rows.push_back(make_row("lease_release", "  release only (vs EVALSHA CAD)", f.dblock.release, f.floor.release));
    rows.push_back(make_row("lease_pair_dblock_scripts", "  diag: dblock's scripts via raw hiredis", f.diag.pair,
                            f.floor.pair));
    rows.push_back(make_row("lease_acquire_dblock_scripts", "  diag: acquire script only", f.diag.acquire,
                            f.floor.acquire));
    rows.push_back(make_row("lease_release_dblock_scripts", "  diag: release script only", f.diag.release,
                            f.floor.release));

    // What each side costs the server: one side at a time (CPU time cannot be split by client).
    progress("server CPU per pair...");
    RawRedis probe(config.url);
    server_cpu.pairs = std::min(config.pairs, kServerCpuPairs);
    auto per_pair = [&](auto& side) {
      const double before = server_cpu_us(probe);
      for (int i = 0; i < server_cpu.pairs; ++i) side.pair("bench-lease", nullptr);
      return (server_cpu_us(probe) - before) / server_cpu.pairs;
    };
    server_cpu.floor_pair = per_pair(floor_side);
    server_cpu.dblock_pair = per_pair(dblock_side);
    server_cpu.diag_pair = per_pair(diag_side);
  }

  // --- MultiLock pair figure -------------------------------------------------------------------
  if (config.wants("multi")) {
    progress("multi-lock pairs...");
    RawRedis raw(config.url);
    auto manager = dblock::open(config.url, manager_options());
    RawLeaseSide floor_side(raw, {"/1", "/2"});  // four round trips
    DblockMultiSide dblock_side(*manager, false);
    DblockMultiSide ordered_side(*manager, true);
    const PairFigure f = measure_pairs(floor_side, dblock_side, ordered_side, {"bench-multi"}, config.warmup, config.pairs);
    rows.push_back(make_row("multi_pair", "two names: acquire_all+releases (vs 2x SET NX + 2x CAD)", f.dblock.pair,
                            f.floor.pair));
    rows.push_back(make_row("multi_acquire", "  acquire_all only (vs 2x SET NX PX)", f.dblock.acquire, f.floor.acquire));
    rows.push_back(make_row("multi_pair_one_by_one", "  diag: the two names one by one", f.diag.pair, f.floor.pair));
    rows.push_back(make_row("multi_acquire_one_by_one", "  diag: two try_acquire only", f.diag.acquire,
                            f.floor.acquire));
  }

  // --- Redlock pair figure ---------------------------------------------------------------------
  if (config.wants("redlock") && !config.redlock_url.empty()) {
    progress("redlock pairs...");
    auto nodes = connect_nodes(config.redlock_url);
    for (auto& n : nodes) drop_keys(*n, kCleanupPatterns);
    auto sequential_nodes = connect_nodes(config.redlock_url);
    auto manager = dblock::open(config.redlock_url, manager_options());
    RawQuorumSide floor_side(nodes, true);
    DblockLeaseSide dblock_side(*manager);
    RawQuorumSide sequential_side(sequential_nodes, false);
    const PairFigure f =
        measure_pairs(floor_side, dblock_side, sequential_side, {"bench-redlock"}, config.warmup, config.pairs);
    rows.push_back(make_row("redlock_pair", "redlock-3 acquire+release (vs SET NX + CAD on 3 at once)", f.dblock.pair,
                            f.floor.pair, kTargetRedlockPair));
    rows.push_back(make_row("redlock_acquire", "  acquire only (vs SET NX PX on 3 at once)", f.dblock.acquire,
                            f.floor.acquire));
    rows.push_back(make_row("redlock_release", "  release only (vs CAD on 3 at once)", f.dblock.release,
                            f.floor.release));
    rows.push_back(make_row("redlock_pair_sequential", "  diag: the floor one node after another", f.diag.pair,
                            f.floor.pair));
    if (!config.keep) {
      for (auto& n : nodes) drop_keys(*n, kCleanupPatterns);
    }
  }

  // --- hand-off figure at 4 processes (fork: nothing may be open here) ---------------------------
  std::vector<HandoffFigure> handoffs;
  if (config.wants("handoff")) {
    const std::string contention_title =
        format("%d processes x %d acquire(\"%s\", wait=%llds) -> %lld us busy critical section -> release", kProcesses,
               config.iterations, kHotKey, static_cast<long long>(kContentionWait.count()),
               static_cast<long long>(kCriticalSection.count()));
    // Server CPU per acquisition over the whole run (the contenders' connects and, for dblock, the
    // loading of its scripts by each manager included).
    auto measured = [&](Kind kind, double& cpu_per_acquisition) {
      progress(format("hand-off, %s...", kind_name(kind)).c_str());
      const double before = server_cpu_us(config.url);
      ContentionResult r = run_contention(kind, config.url, kProcesses, config.iterations);
      cpu_per_acquisition = (server_cpu_us(config.url) - before) / static_cast<double>(std::max<std::size_t>(r.acquired, 1));
      return r;
    };
    ContentionResult d = measured(Kind::kDblockLease, server_cpu.handoff_dblock);
    ContentionResult f = measured(Kind::kRawBlpop, server_cpu.handoff_floor);
    rows.push_back(handoff_row("handoff_lease", "hand-off lease, 4 procs (vs BLPOP token)", d, f, kTargetHandoff));
    handoffs.push_back(HandoffFigure{"handoff_lease",
                                     "hand-off (leases): " + contention_title +
                                         "\n  with acquire(wait=10s) / BLPOP token 10 + RPUSH token",
                                     "dblock lease", "raw BLPOP token", std::move(d), std::move(f), kTargetHandoff});
  }

  // --- the same hand-off at 2, 4, 8 processes (fork: nothing may be open here) --------------------
  std::vector<ScaleFigure> scales;
  if (config.wants("scale")) {
    const std::vector<Kind> kinds{Kind::kDblockLease, Kind::kRawBlpop, Kind::kRawPoll, Kind::kDblockLeaseUnfair};
    ScaleTargets lease;
    lease.max_handoff_vs_raw = kTargetHandoff;
    scales.push_back(measure_scale(
        "scale_lease", "lease at 2, 4, 8 processes: acquire(wait) -> 20 us -> release (x raw: vs the BLPOP floor)",
        lease,
        {{"dblock", "dblock lease"}, {"floor", "raw BLPOP token"}, {"poll_floor", "raw SET NX, 1 ms poll"},
         {"unfair", "dblock lease, fair=false"}},
        [&config, &kinds](std::size_t side, int processes) {
          progress(format("scale, %d processes, %s...", processes, kind_name(kinds[side])).c_str());
          return run_contention(kinds[side], config.url, processes, config.iterations);
        }));
  }

  if (!config.keep) {
    RawRedis c(config.url);
    drop_keys(c, kCleanupPatterns);
  }

  if (!config.json_only) {
    print_table(rows);
    std::printf("(hand-off latency = from the start of the release call to the return of the next holder's acquire.)\n");
    if (server_cpu.pairs > 0) {
      std::printf("server CPU per pair (INFO cpu, one side at a time, %d pairs each): floor %s us, dblock %s us, "
                  "dblock's scripts raw %s us\n",
                  server_cpu.pairs, cell(server_cpu.floor_pair).c_str(), cell(server_cpu.dblock_pair).c_str(),
                  cell(server_cpu.diag_pair).c_str());
    }
    if (!handoffs.empty()) {
      std::printf("server CPU per acquisition, hand-off at 4 processes (whole run): dblock %s us, BLPOP floor %s us\n",
                  cell(server_cpu.handoff_dblock).c_str(), cell(server_cpu.handoff_floor).c_str());
    }
    std::printf("\n");
    for (const HandoffFigure& h : handoffs) {
      print_contention_table(h.title.c_str(), h.dblock_name, h.dblock, h.raw_name, h.raw);
      std::printf("\n");
    }
    for (const ScaleFigure& f : scales) print_scale_table(f);
    if (!scales.empty()) std::printf("\n");
  }
  std::printf("BENCH_JSON %s\n", JsonLine()
                                      .add("figure", "run")
                                      .add("date", date)
                                      .add("dblock_version", dblock::version())
                                      .add("server_version", server_version)
                                      .add("hiredis_version", hiredis_version)
                                      .add("aof", aof)
                                      .add("appendfsync", appendfsync)
                                      .add("build_type", build_type)
                                      .add("assertions", assertions)
                                      .add("online_cpus", static_cast<std::int64_t>(online_cpus))
                                      .add("pinned", placement.pinned)
                                      .add("client_cpu", placement.cpu)
                                      .add("server_cpus", placement.server_cpus)
                                      .add("placement", placement_text(placement))
                                      .add("same_cpu", placement.pinned && placement.overlap)
                                      .add("pairs", config.pairs)
                                      .add("warmup", config.warmup)
                                      .add("processes", kProcesses)
                                      .add("iterations", config.iterations)
                                      .add("quick", config.quick)
                                      .str()
                                      .c_str());
  print_rows_json(rows, handoffs, config.iterations, false);
  if (server_cpu.pairs > 0 || !handoffs.empty()) {
    JsonLine line;
    line.add("figure", "server_cpu").add("pairs", server_cpu.pairs);
    line.add("lease_pair_floor_us", server_cpu.floor_pair)
        .add("lease_pair_dblock_us", server_cpu.dblock_pair)
        .add("lease_pair_dblock_scripts_us", server_cpu.diag_pair)
        .add("handoff_lease_dblock_us_per_acquisition", server_cpu.handoff_dblock)
        .add("handoff_lease_floor_us_per_acquisition", server_cpu.handoff_floor);
    std::printf("BENCH_JSON %s\n", line.str().c_str());
  }
  for (const ScaleFigure& f : scales) print_scale_json(f, config.iterations);
  return 0;
}

}  // namespace
}  // namespace dblock_bench

int main(int argc, char** argv) {
  const dblock_bench::Config config = dblock_bench::parse_args(argc, argv);
  return dblock_bench::run_reporting_errors("redis_bench", [&] { return dblock_bench::run(config); });
}
