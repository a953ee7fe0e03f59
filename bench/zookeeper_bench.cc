// bench/zookeeper_bench.cc — dblock on ZooKeeper (zookeeper:// backend), each figure printed beside
// the raw C-client recipe measured in the same run (docs/design.md, "Performance"). Modelled on
// redis_bench.cc.
//
// Figures (bench/README.md explains each one):
//   lease_pair     try_acquire + release (layout rw)   vs  create EPHEMERAL_SEQUENTIAL + get children
//                                                          + delete, one libzookeeper_mt session
//                  (diag: the same with layout=curator-mutex; the recipe with asynchronous calls, each
//                  awaited on a condition variable, as dblock's session sends them)
//   handoff_lease  4 processes x K acquire(wait=10s) -> 20 us -> release of one name
//                                                      vs  the recipe's waiter: a watch on the child
//                                                          just ahead, get children when it goes
//   scale_lease    the same hand-off at 2, 4 and 8 processes (also the recipe with asynchronous calls)
// plus diagnostics: the server's request count (mntr zk_packets_received) and CPU time
// (/proc/<pid>/stat) and the client's context switches and CPU time (getrusage) per pair of each
// side, one side at a time, and requests and context switches per hand-off acquisition.
//
// Placement: the server runs on one CPU (scripts/bench-zookeeper.sh starts it and pins it with
// taskset) and this process pins itself to another before anything starts; forked contenders and
// the client's and dblock's threads inherit the client CPU. The process forks only while it holds
// no session and no LockManager. Exit status: 0 when the benchmark ran, whatever the figures say;
// 1 when it could not run (no URL, server unreachable, ...).

#include <netdb.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zookeeper/zookeeper_version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_args.h"
#include "bench_util.h"
#include "contention.h"
#include "figures.h"
#include "raw_zookeeper.h"
#include "scale.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "dblock/options.h"
#include "dblock/url.h"

#ifndef DBLOCK_BENCH_BUILD_TYPE
#define DBLOCK_BENCH_BUILD_TYPE ""
#endif

namespace dblock_bench {
namespace {

using namespace std::chrono_literals;

// The URL when --url is not given. (Not the tests' DBLOCK_TEST_ZOOKEEPER_URL: it carries options.)
constexpr const char* kUrlEnv = "DBLOCK_BENCH_ZOOKEEPER_URL";

constexpr int kDefaultPairs = 5'000;
constexpr int kDefaultWarmup = 500;
constexpr int kQuickPairs = 200;
constexpr int kQuickWarmup = 50;
constexpr int kDefaultIterations = 300;
constexpr int kQuickIterations = 20;
constexpr int kProbePairs = 1'000;  // per side, for the server counters

// Targets (issue 30).
constexpr double kTargetLeasePair = 1.15;
constexpr double kTargetHandoff = 1.15;

// Everything the benchmark creates lies under these two nodes, deleted at the start and (unless
// --keep) at the end: dblock's base for the prefix "dblock_bench_", and the raw recipe's locks.
constexpr const char* kPrefix = "dblock_bench_";
constexpr const char* kDblockBase = "/dblock/dblock_bench_locks";
constexpr const char* kRawRoot = "/dblock_bench_raw";

constexpr const char* kAllFigures[] = {"pairs", "handoff", "scale"};

struct Config : ServerBenchFlags {
  int pairs = kDefaultPairs;
  int warmup = kDefaultWarmup;
  int iterations = kDefaultIterations;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--url URL] [--quick] [--json-only] [--cpu N | --no-pin] [--server-pid PID]\n"
               "          [--pairs N] [--iterations K] [--figures LIST] [--keep]\n"
               "  --url URL         zookeeper://host:port (default: $%s)\n"
               "  --quick           small N everywhere (CI smoke test)\n"
               "  --json-only       print only the BENCH_JSON lines\n"
               "  --cpu N           pin this process and its children to CPU N (default: the launcher's CPU\n"
               "                    when started with a single-CPU mask; else the lowest allowed CPU the\n"
               "                    server is not pinned to)\n"
               "  --no-pin          do not pin (placement is reported as such)\n"
               "  --server-pid PID  the server's (JVM's) pid, for its placement, CPU time and the header\n"
               "  --pairs N         measured pairs per pair figure (default %d)\n"
               "  --iterations K    acquisitions per contending process (default %d)\n"
               "  --figures LIST    comma-separated subset of pairs,handoff,scale\n"
               "  --keep            keep the benchmark's nodes afterwards\n",
               argv0, kUrlEnv, kDefaultPairs, kDefaultIterations);
  std::exit(status);
}

Config parse_args(int argc, char** argv) {
  Config config;
  parse_server_flags(argc, argv, kAllFigures, usage, config, [](std::string_view, auto) { return false; });
  if (const char* value = std::getenv(kUrlEnv); config.url.empty() && value != nullptr) config.url = value;
  if (config.url.empty()) {
    std::fprintf(stderr, "%s: no server: pass --url zookeeper://... or set %s\n", argv[0], kUrlEnv);
    std::exit(1);
  }
  if (config.url.find('?') != std::string::npos) {
    std::fprintf(stderr, "%s: the URL must not carry options (?...): the benchmark sets its own\n", argv[0]);
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

void progress(const char* what) { std::fprintf(stderr, "[zookeeper_bench] %s\n", what); }

// ---------------------------------------------------------------------------------------------
// Server facts: the four-letter words (srvr, mntr: zookeeper.sh whitelists them) and /proc.

// The reply to a four-letter word from the first host of `url` ("" when none within 2 s).
std::string four_letter(const std::string& url, const char* word) {
  const dblock::Url u = dblock::parse_url(url);
  const std::string port = std::to_string(u.hosts.at(0).port != 0 ? u.hosts.at(0).port : 2181);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(u.hosts.at(0).host.c_str(), port.c_str(), &hints, &found) != 0) return "";
  std::string out;
  const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  if (fd >= 0) {
    const timeval timeout{2, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
    if (::connect(fd, found->ai_addr, found->ai_addrlen) == 0 && ::write(fd, word, 4) == 4) {
      char buffer[4096];
      for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
  }
  freeaddrinfo(found);
  return out;
}

// The value after "key" up to the end of its line ("Zookeeper version: " in srvr, "zk_x\t" in mntr).
std::string field(const std::string& text, const std::string& key) {
  const std::size_t at = text.find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size();
  return text.substr(start, text.find('\n', start) - start);
}

double packets_received(const std::string& url) {
  const std::string value = field(four_letter(url, "mntr"), "zk_packets_received\t");
  return value.empty() ? NAN : std::atof(value.c_str());
}

// The server's CPU time, this process's context switches and CPU time: bench_util.h.

// ---------------------------------------------------------------------------------------------
// Pair figures

// The raw recipe's pair: create EPHEMERAL_SEQUENTIAL + get children (acquire), delete (release).
class RawPairSide {
 public:
  RawPairSide(RawZk& zk, const std::string& name) : lock_(zk, std::string(kRawRoot) + "/" + name) {}

  void pair(const std::string&, PairSamples* out) {
    const auto t0 = Clock::now();
    const std::string own = lock_.acquire(0ms);
    const auto t1 = Clock::now();
    const bool released = !own.empty() && lock_.release(own);
    const auto t2 = Clock::now();
    if (!released) throw std::runtime_error("raw recipe: uncontended acquire/release failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  RawZkLock lock_;
};

std::string dblock_url(const std::string& url, const char* layout) { return url + "?layout=" + layout; }

dblock::ManagerOptions manager_options() {
  dblock::ManagerOptions options;
  options.table_prefix = kPrefix;  // base /dblock/dblock_bench_locks
  options.reaper = false;          // no background work beside the measured calls
  return options;
}

void drop_nodes(const std::string& url) {
  RawZk zk(url);
  zk.remove_tree(kDblockBase);
  zk.remove_tree(kRawRoot);
}

// Requests (packets the server received) and server CPU µs per pair of one side, alone.
struct ServerCost {
  double packets = NAN;
  double cpu_us = NAN;
  double switches = NAN;  // the client's context switches
  double client_cpu_us = NAN;
};

template <class Side>
ServerCost server_cost(const std::string& url, int server_pid, Side& side, int pairs) {
  const double packets = packets_received(url);
  const double cpu = process_cpu_us(server_pid);
  const double switches = context_switches(RUSAGE_SELF);
  const double client_cpu = own_cpu_us();
  for (int i = 0; i < pairs; ++i) side.pair("bench-lease", nullptr);
  const double switched = context_switches(RUSAGE_SELF) - switches;
  const double client_used = own_cpu_us() - client_cpu;
  // mntr's own connection is not a packet; a session's pings are (one per third of the timeout).
  return ServerCost{(packets_received(url) - packets) / pairs, (process_cpu_us(server_pid) - cpu) / pairs,
                    switched / pairs, client_used / pairs};
}

// ---------------------------------------------------------------------------------------------
// Hand-off figures: forked processes, results in shared memory.

enum class Kind { kDblockLease, kRawRecipe, kRawRecipeAsync };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kDblockLease: return "dblock lease";
    case Kind::kRawRecipe: return "raw watch recipe";
    case Kind::kRawRecipeAsync: return "raw watch recipe, async calls";
  }
  return "?";
}

// The recipe's waiter: create, get children, watch the child ahead, get children again when it
// goes; the fence is the own node's sequence (unique and increasing in acquisition order).
void raw_contender(const std::string& url, bool async, int index, int iterations, SharedArena& arena,
                   StartLine& start) {
  RawZk zk(url, async);
  RawZkLock lock(zk, std::string(kRawRoot) + "/" + kHotKey);
  start.ready_and_wait();
  std::string own;
  contend(
      arena, index, iterations,
      [&](int) -> std::optional<std::int64_t> {
        own = lock.acquire(std::chrono::duration_cast<std::chrono::milliseconds>(kContentionWait));
        if (own.empty()) return std::nullopt;
        return std::atoll(own.c_str() + own.size() - 10) + 1;  // 0 would mean "no fence"
      },
      [&](int) { return lock.release(own); });
}

// Forks `processes` contenders of `kind` on kHotKey and collects their records.
// REQUIRES: no LockManager and no session open in this process.
ContentionResult run_contention(Kind kind, const std::string& url, int processes, int iterations) {
  dblock::ManagerOptions options = manager_options();
  options.default_ttl = kContentionTtl;
  const std::string lease_url = dblock_url(url, "rw");
  return run_contenders(kind_name(kind), processes, iterations, [&](int index, SharedArena& arena, StartLine& start) {
    if (kind == Kind::kDblockLease) {
      dblock_lease_contender(lease_url, options, index, iterations, arena, start);
    } else {
      raw_contender(url, kind == Kind::kRawRecipeAsync, index, iterations, arena, start);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Output

struct Header {
  std::string date, server_version, client_version, build_type;
  Placement placement;
  bool assertions = false;
};

void print_header(const Config& config, const Header& h) {
  std::printf("dblock zookeeper_bench: dblock %s against the raw C-client recipe, measured in the same run\n",
              dblock::version());
  std::printf("date:      %s\n", h.date.c_str());
  std::printf("server:    ZooKeeper %s at %s (standalone or not: as started), C client %s (libzookeeper_mt)\n",
              h.server_version.c_str(), config.url.c_str(), h.client_version.c_str());
  std::printf("host:      %ld online CPUs, %s\n", sysconf(_SC_NPROCESSORS_ONLN), cpu_model().c_str());
  print_placement(h.placement, "server (JVM) pid");
  std::printf("build:     %s%s\n", h.build_type.empty() ? "(no CMAKE_BUILD_TYPE)" : h.build_type.c_str(),
              h.assertions ? ", assertions ON: figures are not representative" : "");
  std::printf("pairs:     N=%d per figure after %d warm-up pairs, sides interleaved in blocks of %d\n", config.pairs,
              config.warmup, kInterleaveBlock);
  std::printf("dblock:    LockManager per figure, base %s, session timeout %d ms, reaper=false\n", kDblockBase,
              kRawSessionTimeoutMs);
  std::printf("floor:     one libzookeeper_mt session, synchronous calls; lock node %s/<name>: create\n"
              "           EPHEMERAL_SEQUENTIAL lock-, get children, (waiter: getData watch on the child ahead), delete\n\n",
              kRawRoot);
  std::fflush(stdout);
}

int run(const Config& config) {
  Header h;
  h.server_version = field(four_letter(config.url, "srvr"), "Zookeeper version: ");
  if (h.server_version.empty()) throw std::runtime_error("no ZooKeeper answers srvr at " + config.url);
  h.server_version = h.server_version.substr(0, h.server_version.find('-'));
  h.client_version = ZOO_VERSION;
  const int server_pid = config.server_pid.value_or(0);
  drop_nodes(config.url);  // closes its session before anything forks
  h.placement = apply_placement(config.pin, config.cpu, server_pid);
  h.date = utc_now();
  h.build_type = DBLOCK_BENCH_BUILD_TYPE;
#ifndef NDEBUG
  h.assertions = true;
#endif
  if (!config.json_only) print_header(config, h);

  std::vector<Row> rows;
  ServerCost floor_cost, dblock_cost, diag_cost, async_cost;
  int probe_pairs = 0;
  if (config.wants("pairs")) {
    progress("lease pairs...");
    RawZk raw(config.url);
    RawZk raw_async(config.url, true);
    auto manager = dblock::open(dblock_url(config.url, "rw"), manager_options());
    auto mutex_manager = dblock::open(dblock_url(config.url, "curator-mutex"), manager_options());
    RawPairSide floor_side(raw, "bench-lease");
    RawPairSide async_side(raw_async, "bench-lease-async");
    DblockLeaseSide dblock_side(*manager);
    DblockLeaseSide diag_side(*mutex_manager);
    auto side = [](auto& s) { return [&s](const std::string& n, PairSamples* o) { s.pair(n, o); }; };
    std::vector<PairSamples> samples = measure_sides({side(floor_side), side(dblock_side), side(diag_side), side(async_side)},
                                                     {"bench-lease"}, config.warmup, config.pairs);
    const PairFigure f{std::move(samples[0]), std::move(samples[1]), std::move(samples[2])};
    const PairSamples& async_pairs = samples[3];
    rows.push_back(make_row("lease_pair", "lease acquire+release (vs create+children+delete)", f.dblock.pair,
                            f.floor.pair, kTargetLeasePair));
    rows.push_back(make_row("lease_acquire", "  acquire only (vs create + get children)", f.dblock.acquire,
                            f.floor.acquire));
    rows.push_back(make_row("lease_release", "  release only (vs delete)", f.dblock.release, f.floor.release));
    rows.push_back(make_row("lease_pair_curator_mutex", "  diag: dblock, layout=curator-mutex", f.diag.pair,
                            f.floor.pair));
    rows.push_back(make_row("lease_pair_raw_async", "  diag: the recipe with async calls + condvar", async_pairs.pair,
                            f.floor.pair));

    progress("server requests and CPU per pair...");
    probe_pairs = std::min(config.pairs, kProbePairs);
    floor_cost = server_cost(config.url, server_pid, floor_side, probe_pairs);
    dblock_cost = server_cost(config.url, server_pid, dblock_side, probe_pairs);
    diag_cost = server_cost(config.url, server_pid, diag_side, probe_pairs);
    async_cost = server_cost(config.url, server_pid, async_side, probe_pairs);
  }

  std::vector<HandoffFigure> handoffs;
  ServerCost handoff_dblock, handoff_floor;  // per acquisition
  if (config.wants("handoff")) {
    const std::string title =
        format("hand-off (leases): %d processes x %d acquire(\"%s\", wait=%llds) -> %lld us busy critical section -> "
               "release\n  with dblock acquire(wait=10s) / the recipe's watch on the child ahead",
               kProcesses, config.iterations, kHotKey, static_cast<long long>(kContentionWait.count()),
               static_cast<long long>(kCriticalSection.count()));
    // Requests the server received per acquisition over each whole run (the contenders' session
    // set-up and pings included): the round trips a hand-off costs each side.
    // Also the contenders' context switches per acquisition (every thread, set-up included).
    auto measured = [&](Kind kind, ServerCost& per_acquisition) {
      progress(format("hand-off, %s...", kind_name(kind)).c_str());
      const double before = packets_received(config.url);
      const double switches = context_switches(RUSAGE_CHILDREN);
      ContentionResult result = run_contention(kind, config.url, kProcesses, config.iterations);
      const double n = static_cast<double>(std::max<std::size_t>(result.acquired, 1));
      per_acquisition.packets = (packets_received(config.url) - before) / n;
      per_acquisition.switches = (context_switches(RUSAGE_CHILDREN) - switches) / n;
      return result;
    };
    ContentionResult d = measured(Kind::kDblockLease, handoff_dblock);
    ContentionResult r = measured(Kind::kRawRecipe, handoff_floor);
    rows.push_back(handoff_row("handoff_lease", "hand-off lease, 4 procs (vs watch recipe)", d, r, kTargetHandoff));
    handoffs.push_back(HandoffFigure{"handoff_lease", title, "dblock lease", "raw watch recipe", std::move(d),
                                     std::move(r), kTargetHandoff});
  }

  std::vector<ScaleFigure> scales;
  if (config.wants("scale")) {
    const std::vector<Kind> kinds{Kind::kDblockLease, Kind::kRawRecipe, Kind::kRawRecipeAsync};
    ScaleTargets targets;
    targets.max_handoff_vs_raw = kTargetHandoff;
    scales.push_back(measure_scale(
        "scale_lease", "lease at 2, 4, 8 processes: acquire(wait) -> 20 us -> release (x raw: vs the watch recipe)",
        targets,
        {{"dblock", "dblock lease"}, {"floor", "raw watch recipe"}, {"async_floor", "raw watch recipe, async calls"}},
        [&config, &kinds](std::size_t side, int processes) {
          progress(format("scale, %d processes, %s...", processes, kind_name(kinds[side])).c_str());
          return run_contention(kinds[side], config.url, processes, config.iterations);
        }));
  }

  if (!config.keep) drop_nodes(config.url);

  if (!config.json_only) {
    print_table(rows);
    std::printf("(hand-off latency = from the start of the release call to the return of the next holder's acquire.)\n");
    if (probe_pairs > 0) {
      std::printf("server per pair (one side at a time, %d pairs each): requests floor %s, dblock %s, curator-mutex %s;"
                  "\n  CPU floor %s us, dblock %s us, curator-mutex %s us;"
                  "\n  client context switches floor %s, dblock %s, curator-mutex %s, recipe async %s;"
                  "\n  client CPU floor %s us, dblock %s us, curator-mutex %s us, recipe async %s us\n",
                  probe_pairs, cell(floor_cost.packets, "%.2f").c_str(), cell(dblock_cost.packets, "%.2f").c_str(),
                  cell(diag_cost.packets, "%.2f").c_str(), cell(floor_cost.cpu_us).c_str(),
                  cell(dblock_cost.cpu_us).c_str(), cell(diag_cost.cpu_us).c_str(), cell(floor_cost.switches).c_str(),
                  cell(dblock_cost.switches).c_str(), cell(diag_cost.switches).c_str(), cell(async_cost.switches).c_str(),
                  cell(floor_cost.client_cpu_us).c_str(), cell(dblock_cost.client_cpu_us).c_str(),
                  cell(diag_cost.client_cpu_us).c_str(), cell(async_cost.client_cpu_us).c_str());
    }
    if (!handoffs.empty()) {
      std::printf("per acquisition, hand-off at %d processes (whole run): server requests dblock %s, recipe %s;\n"
                  "  client context switches dblock %s, recipe %s\n",
                  kProcesses, cell(handoff_dblock.packets, "%.2f").c_str(), cell(handoff_floor.packets, "%.2f").c_str(),
                  cell(handoff_dblock.switches, "%.2f").c_str(), cell(handoff_floor.switches, "%.2f").c_str());
    }
    std::printf("\n");
    for (const HandoffFigure& f : handoffs) {
      print_contention_table(f.title.c_str(), f.dblock_name, f.dblock, f.raw_name, f.raw);
      std::printf("\n");
    }
    for (const ScaleFigure& f : scales) print_scale_table(f);
    if (!scales.empty()) std::printf("\n");
  }
  std::printf("BENCH_JSON %s\n", JsonLine()
                                      .add("figure", "run")
                                      .add("date", h.date)
                                      .add("dblock_version", dblock::version())
                                      .add("server_version", h.server_version)
                                      .add("client_version", h.client_version)
                                      .add("build_type", h.build_type)
                                      .add("assertions", h.assertions)
                                      .add("pinned", h.placement.pinned)
                                      .add("client_cpu", h.placement.cpu)
                                      .add("server_cpus", h.placement.server_cpus)
                                      .add("placement", placement_text(h.placement))
                                      .add("same_cpu", h.placement.pinned && h.placement.overlap)
                                      .add("pairs", config.pairs)
                                      .add("warmup", config.warmup)
                                      .add("iterations", config.iterations)
                                      .add("quick", config.quick)
                                      .str()
                                      .c_str());
  print_rows_json(rows, handoffs, config.iterations, false);
  if (!handoffs.empty()) {
    std::printf("BENCH_JSON %s\n", JsonLine()
                                        .add("figure", "server_per_handoff_acquisition")
                                        .add("processes", kProcesses)
                                        .add("dblock_requests", handoff_dblock.packets)
                                        .add("floor_requests", handoff_floor.packets)
                                        .add("dblock_context_switches", handoff_dblock.switches)
                                        .add("floor_context_switches", handoff_floor.switches)
                                        .str()
                                        .c_str());
  }
  if (probe_pairs > 0) {
    std::printf("BENCH_JSON %s\n", JsonLine()
                                        .add("figure", "server_per_pair")
                                        .add("pairs", probe_pairs)
                                        .add("floor_requests", floor_cost.packets)
                                        .add("dblock_requests", dblock_cost.packets)
                                        .add("curator_mutex_requests", diag_cost.packets)
                                        .add("floor_cpu_us", floor_cost.cpu_us)
                                        .add("dblock_cpu_us", dblock_cost.cpu_us)
                                        .add("curator_mutex_cpu_us", diag_cost.cpu_us)
                                        .add("floor_context_switches", floor_cost.switches)
                                        .add("dblock_context_switches", dblock_cost.switches)
                                        .add("curator_mutex_context_switches", diag_cost.switches)
                                        .add("floor_async_context_switches", async_cost.switches)
                                        .add("floor_client_cpu_us", floor_cost.client_cpu_us)
                                        .add("dblock_client_cpu_us", dblock_cost.client_cpu_us)
                                        .add("curator_mutex_client_cpu_us", diag_cost.client_cpu_us)
                                        .add("floor_async_client_cpu_us", async_cost.client_cpu_us)
                                        .str()
                                        .c_str());
  }
  for (const ScaleFigure& f : scales) print_scale_json(f, config.iterations);
  return 0;
}

}  // namespace
}  // namespace dblock_bench

int main(int argc, char** argv) {
  const dblock_bench::Config config = dblock_bench::parse_args(argc, argv);
  return dblock_bench::run_reporting_errors("zookeeper_bench", [&] { return dblock_bench::run(config); });
}
