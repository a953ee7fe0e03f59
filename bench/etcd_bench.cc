// bench/etcd_bench.cc — dblock on etcd (etcd:// backend), each figure printed beside the raw gRPC
// recipe measured in the same run (docs/design.md, "Performance"). Modelled on zookeeper_bench.cc.
//
// Figures (bench/README.md explains each one):
//   lease_pair     try_acquire + release (layout etcd-mutex)  vs  Txn put-if-absent with a lease
//                                                                 granted once + DeleteRange
//                  (diag: the same with layout=python-etcd3; the floor with a lease granted and
//                  revoked around each acquisition: what a lease per acquisition costs)
//   handoff_lease  4 processes x K acquire(wait=10s) -> 20 us -> release of one name
//                                                      vs  concurrency.Mutex's recipe: a watch on
//                                                          the key just ahead
//   scale_lease    the same hand-off at 2, 4 and 8 processes
// plus diagnostics: the server's CPU time (/proc/<pid>/stat) and the client's context switches and
// CPU time (getrusage) per pair of each side, one side at a time, and the same per hand-off
// acquisition. Not measured: the server's request counts (etcd has them only on its HTTP
// /metrics endpoint, which this bench does not read).
//
// gRPC and fork(): gRPC does not survive a fork() after the parent made a channel. So this process
// makes none, and no LockManager, until every forked figure has run: the server's version and the
// clean-up of leftover keys come from a forked child, the hand-off and scale figures run first, the
// pair figures last, in this process.
//
// Placement: the server runs on one CPU (scripts/bench-etcd.sh starts it and pins it with taskset)
// and this process pins itself to another before anything starts; forked contenders and gRPC's
// and dblock's threads inherit the client CPU. Exit status: 0 when the benchmark ran, whatever
// the figures say; 1 when it could not run (no URL, server unreachable, ...).

#include <grpcpp/version_info.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "bench_args.h"
#include "bench_util.h"
#include "contention.h"
#include "figures.h"
#include "raw_etcd.h"
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

// The URL when --url is not given.
constexpr const char* kUrlEnv = "DBLOCK_BENCH_ETCD_URL";

constexpr int kDefaultPairs = 5'000;
constexpr int kDefaultWarmup = 500;
constexpr int kQuickPairs = 200;
constexpr int kQuickWarmup = 50;
constexpr int kDefaultIterations = 300;
constexpr int kQuickIterations = 10;  // a smoke: etcd's 100 ms watch catch-up makes each hand-off slow
constexpr int kProbePairs = 1'000;  // per side, for the server's CPU time

// Targets.
constexpr double kTargetLeasePair = 1.15;
constexpr double kTargetHandoff = 1.2;

// Every key the benchmark makes begins with kPrefix, deleted at the start and (unless --keep) at
// the end: dblock's etcd-mutex locks ("dblock_bench_<name>/<lease hex>", the manager's table
// prefix), its python-etcd3 locks (kPythonPrefix) and the raw recipes' (kRawPrefix).
constexpr const char* kPrefix = "dblock_bench_";
constexpr const char* kPythonPrefix = "dblock_bench_py/";
constexpr const char* kRawPrefix = "dblock_bench_raw/";

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
               "  --url URL         etcd://host:port (default: $%s); the floor uses the first member\n"
               "  --quick           small N everywhere (CI smoke test)\n"
               "  --json-only       print only the BENCH_JSON lines\n"
               "  --cpu N           pin this process and its children to CPU N (default: the launcher's CPU\n"
               "                    when started with a single-CPU mask; else the lowest allowed CPU the\n"
               "                    server is not pinned to)\n"
               "  --no-pin          do not pin (placement is reported as such)\n"
               "  --server-pid PID  the etcd server's pid, for its placement, CPU time and the header\n"
               "  --pairs N         measured pairs per pair figure (default %d)\n"
               "  --iterations K    acquisitions per contending process (default %d)\n"
               "  --figures LIST    comma-separated subset of pairs,handoff,scale\n"
               "  --keep            keep the benchmark's keys afterwards\n",
               argv0, kUrlEnv, kDefaultPairs, kDefaultIterations);
  std::exit(status);
}

Config parse_args(int argc, char** argv) {
  Config config;
  parse_server_flags(argc, argv, kAllFigures, usage, config, [](std::string_view, auto) { return false; });
  if (const char* value = std::getenv(kUrlEnv); config.url.empty() && value != nullptr) config.url = value;
  if (config.url.empty()) {
    std::fprintf(stderr, "%s: no server: pass --url etcd://... or set %s\n", argv[0], kUrlEnv);
    std::exit(1);
  }
  dblock::Url url;
  try {
    url = dblock::parse_url(config.url);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", argv[0], e.what());
    std::exit(1);
  }
  if (url.scheme != "etcd" || !url.path.empty() || !url.params.empty() || !url.user.empty()) {
    std::fprintf(stderr,
                 "%s: the URL must be a plain etcd://host:port[,host:port...]: no path or options (the bench sets "
                 "its own prefixes and layouts), no user (the floor does not authenticate)\n",
                 argv[0]);
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

void progress(const char* what) { std::fprintf(stderr, "[etcd_bench] %s\n", what); }

// Runs `body` (returning a string) in a forked child and returns what it returned: gRPC work for a
// process that must not make a channel of its own yet. Throws when the child fails (its message
// is on stderr).
template <class Body>
std::string in_child(const std::string& what, Body&& body) {
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  std::fflush(nullptr);  // or the child would inherit, and later flush, our buffered output
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::close(out[0]);
    int status = 0;
    try {
      const std::string text = body();
      for (std::size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(out[1], text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw std::runtime_error("pipe: write failed");
        done += static_cast<std::size_t>(n);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "etcd_bench: %s: %s\n", what.c_str(), e.what());
      status = 2;
    }
    ::_exit(status);  // no atexit handlers or static destructors of the parent's state
  }
  ::close(out[1]);
  std::string text;
  char buffer[256];
  for (;;) {
    const ssize_t n = ::read(out[0], buffer, sizeof buffer);
    if (n > 0) {
      text.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(out[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) throw std::runtime_error(what + " failed (see stderr)");
  return text;
}

// ---------------------------------------------------------------------------------------------
// Pair figures

// A raw pair floor's pair: one Txn (acquire), one DeleteRange (release). Its lease is kept alive
// before the timed calls.
class RawPairSide {
 public:
  RawPairSide(RawEtcd& etcd, bool lease_each) : lock_(etcd, std::string(kRawPrefix) + (lease_each ? "each/" : "")) {}

  void pair(const std::string& name, PairSamples* out) {
    lock_.keep_alive_if_due();
    const auto t0 = Clock::now();
    const bool acquired = lock_.acquire(name) != 0;
    const auto t1 = Clock::now();
    const bool released = acquired && lock_.release(name);
    const auto t2 = Clock::now();
    if (!released) throw std::runtime_error("raw recipe: uncontended acquire/release failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  RawEtcdKeyLock lock_;
};

std::string mutex_url(const std::string& url) { return url + "?layout=etcd-mutex"; }
std::string python_url(const std::string& url) {
  return url + "?layout=python-etcd3&prefix=" + kPythonPrefix;
}

dblock::ManagerOptions manager_options() {
  dblock::ManagerOptions options;
  options.table_prefix = kPrefix;  // the etcd-mutex layout's key prefix
  options.reaper = false;          // no background work beside the measured calls
  return options;
}

void drop_keys(RawEtcd& etcd) { etcd.remove_prefix(kPrefix); }

// Server CPU µs and the client's context switches and CPU µs per pair of one side, alone.
struct ServerCost {
  double cpu_us = NAN;
  double switches = NAN;  // the client's context switches
  double client_cpu_us = NAN;
};

template <class Side>
ServerCost server_cost(int server_pid, Side& side, int pairs) {
  const double cpu = process_cpu_us(server_pid);
  const double switches = context_switches(RUSAGE_SELF);
  const double client_cpu = own_cpu_us();
  for (int i = 0; i < pairs; ++i) side.pair("bench-lease", nullptr);
  const double switched = context_switches(RUSAGE_SELF) - switches;
  const double client_used = own_cpu_us() - client_cpu;
  return ServerCost{(process_cpu_us(server_pid) - cpu) / pairs, switched / pairs, client_used / pairs};
}

// ---------------------------------------------------------------------------------------------
// Hand-off figures: forked processes, results in shared memory.

enum class Kind { kDblockLease, kRawRecipe };

const char* kind_name(Kind kind) { return kind == Kind::kDblockLease ? "dblock lease" : "raw watch recipe"; }

// concurrency.Mutex's waiter on kHotKey; the fence is the own key's create revision.
void raw_contender(const std::string& url, int index, int iterations, SharedArena& arena, StartLine& start) {
  RawEtcd etcd(url);
  RawEtcdMutex lock(etcd, std::string(kRawPrefix) + kHotKey + "/");
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int) { return lock.acquire(std::chrono::duration_cast<std::chrono::milliseconds>(kContentionWait)); },
      [&](int) { return lock.release(); });
}

// Forks `processes` contenders of `kind` on kHotKey and collects their records.
// REQUIRES: no gRPC channel and no LockManager made in this process yet.
ContentionResult run_contention(Kind kind, const std::string& url, int processes, int iterations) {
  dblock::ManagerOptions options = manager_options();
  options.default_ttl = kContentionTtl;
  const std::string lease_url = mutex_url(url);
  return run_contenders(kind_name(kind), processes, iterations, [&](int index, SharedArena& arena, StartLine& start) {
    if (kind == Kind::kDblockLease) {
      dblock_lease_contender(lease_url, options, index, iterations, arena, start);
    } else {
      raw_contender(url, index, iterations, arena, start);
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
  std::printf("dblock etcd_bench: dblock %s against raw gRPC recipes, measured in the same run\n", dblock::version());
  std::printf("date:      %s\n", h.date.c_str());
  std::printf("server:    etcd %s at %s (the floor talks to the first member), gRPC C++ %s, stubs generated\n"
              "           from Debian's etcd rpc.proto\n",
              h.server_version.c_str(), config.url.c_str(), h.client_version.c_str());
  std::printf("host:      %ld online CPUs, %s\n", sysconf(_SC_NPROCESSORS_ONLN), cpu_model().c_str());
  print_placement(h.placement, "server (etcd) pid");
  std::printf("build:     %s%s\n", h.build_type.empty() ? "(no CMAKE_BUILD_TYPE)" : h.build_type.c_str(),
              h.assertions ? ", assertions ON: figures are not representative" : "");
  std::printf("pairs:     N=%d per figure after %d warm-up pairs, sides interleaved in blocks of %d\n", config.pairs,
              config.warmup, kInterleaveBlock);
  std::printf("dblock:    LockManager per layout, keys %s<name>/<lease hex> (etcd-mutex) and %s<name>\n"
              "           (python-etcd3), reaper=false\n",
              kPrefix, kPythonPrefix);
  std::printf("floor:     one gRPC channel, synchronous calls, each with a %llds deadline, keys under %s;\n"
              "           pair: one lease (TTL %llds) granted at start-up and kept alive every %llds between pairs,\n"
              "           Txn create_revision(key)==0 ? put(key, lease) : get(key), then DeleteRange;\n"
              "           hand-off: concurrency.Mutex's recipe, a lease per process, a watch on the key ahead\n"
              "server requests: not counted (etcd counts them only on its HTTP /metrics)\n\n",
              static_cast<long long>(kRawCallTimeout.count()), kRawPrefix,
              static_cast<long long>(kRawLeaseTtl.count()), static_cast<long long>(kRawKeepAliveEvery.count()));
  std::fflush(stdout);
}

int run(const Config& config) {
  Header h;
  const int server_pid = config.server_pid.value_or(0);
  h.placement = apply_placement(config.pin, config.cpu, server_pid);
  // The server's version and the clean-up of an earlier run's keys, from a child: this process
  // makes no channel before its last fork.
  h.server_version = in_child("connecting to " + config.url, [&] {
    RawEtcd etcd(config.url);
    drop_keys(etcd);
    return etcd.server_version();
  });
  if (h.server_version.empty()) h.server_version = "unknown";
  h.client_version = GRPC_CPP_VERSION_STRING;
  h.date = utc_now();
  h.build_type = DBLOCK_BENCH_BUILD_TYPE;
#ifndef NDEBUG
  h.assertions = true;
#endif
  if (!config.json_only) print_header(config, h);

  std::vector<Row> rows;

  // Forked figures first (see the top of this file).
  std::vector<HandoffFigure> handoffs;
  ServerCost handoff_dblock, handoff_floor;  // per acquisition
  if (config.wants("handoff")) {
    const std::string title =
        format("hand-off (leases): %d processes x %d acquire(\"%s\", wait=%llds) -> %lld us busy critical section -> "
               "release\n  with dblock acquire(wait=10s) / concurrency.Mutex's watch on the key ahead",
               kProcesses, config.iterations, kHotKey, static_cast<long long>(kContentionWait.count()),
               static_cast<long long>(kCriticalSection.count()));
    // The server's CPU time and the contenders' context switches per acquisition, over each whole
    // run (the contenders' set-up included).
    auto measured = [&](Kind kind, ServerCost& per_acquisition) {
      progress(format("hand-off, %s...", kind_name(kind)).c_str());
      const double cpu = process_cpu_us(server_pid);
      const double switches = context_switches(RUSAGE_CHILDREN);
      ContentionResult result = run_contention(kind, config.url, kProcesses, config.iterations);
      const double n = static_cast<double>(std::max<std::size_t>(result.acquired, 1));
      per_acquisition.cpu_us = (process_cpu_us(server_pid) - cpu) / n;
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
    const std::vector<Kind> kinds{Kind::kDblockLease, Kind::kRawRecipe};
    ScaleTargets targets;
    targets.max_handoff_vs_raw = kTargetHandoff;
    scales.push_back(measure_scale(
        "scale_lease", "lease at 2, 4, 8 processes: acquire(wait) -> 20 us -> release (x raw: vs the watch recipe)",
        targets, {{"dblock", "dblock lease"}, {"floor", "raw watch recipe"}},
        [&config, &kinds](std::size_t side, int processes) {
          progress(format("scale, %d processes, %s...", processes, kind_name(kinds[side])).c_str());
          return run_contention(kinds[side], config.url, processes, config.iterations);
        }));
  }

  // No more forks: from here on this process talks gRPC itself.
  ServerCost floor_cost, dblock_cost, python_cost, each_cost;
  int probe_pairs = 0;
  RawEtcd raw(config.url);
  if (config.wants("pairs")) {
    progress("lease pairs...");
    auto manager = dblock::open(mutex_url(config.url), manager_options());
    auto python_manager = dblock::open(python_url(config.url), manager_options());
    RawPairSide floor_side(raw, false);
    RawPairSide each_side(raw, true);
    DblockLeaseSide dblock_side(*manager);
    DblockLeaseSide python_side(*python_manager);
    auto side = [](auto& s) { return [&s](const std::string& n, PairSamples* o) { s.pair(n, o); }; };
    std::vector<PairSamples> samples =
        measure_sides({side(floor_side), side(dblock_side), side(python_side), side(each_side)}, {"bench-lease"},
                      config.warmup, config.pairs);
    const PairFigure f{std::move(samples[0]), std::move(samples[1]), std::move(samples[2])};
    const PairSamples& each_pairs = samples[3];
    rows.push_back(make_row("lease_pair", "lease acquire+release (vs Txn put + delete)", f.dblock.pair, f.floor.pair,
                            kTargetLeasePair));
    rows.push_back(make_row("lease_acquire", "  acquire only (vs Txn put-if-absent)", f.dblock.acquire,
                            f.floor.acquire));
    rows.push_back(make_row("lease_release", "  release only (vs DeleteRange)", f.dblock.release, f.floor.release));
    rows.push_back(make_row("lease_pair_python_etcd3", "  diag: dblock, layout=python-etcd3", f.diag.pair,
                            f.floor.pair));
    rows.push_back(make_row("lease_pair_raw_lease_each", "  diag: the floor, grant+Txn, delete+revoke",
                            each_pairs.pair, f.floor.pair));

    progress("server and client CPU per pair...");
    probe_pairs = std::min(config.pairs, kProbePairs);
    floor_cost = server_cost(server_pid, floor_side, probe_pairs);
    dblock_cost = server_cost(server_pid, dblock_side, probe_pairs);
    python_cost = server_cost(server_pid, python_side, probe_pairs);
    each_cost = server_cost(server_pid, each_side, probe_pairs);
  }

  if (!config.keep) drop_keys(raw);

  if (!config.json_only) {
    print_table(rows);
    std::printf("(hand-off latency = from the start of the release call to the return of the next holder's acquire.)\n");
    if (probe_pairs > 0) {
      std::printf("per pair (one side at a time, %d pairs each): server CPU floor %s us, dblock %s us, python-etcd3 %s us,"
                  " floor lease-each %s us;\n  client context switches floor %s, dblock %s, python-etcd3 %s, floor "
                  "lease-each %s;\n  client CPU floor %s us, dblock %s us, python-etcd3 %s us, floor lease-each %s us\n",
                  probe_pairs, cell(floor_cost.cpu_us).c_str(), cell(dblock_cost.cpu_us).c_str(),
                  cell(python_cost.cpu_us).c_str(), cell(each_cost.cpu_us).c_str(), cell(floor_cost.switches).c_str(),
                  cell(dblock_cost.switches).c_str(), cell(python_cost.switches).c_str(),
                  cell(each_cost.switches).c_str(), cell(floor_cost.client_cpu_us).c_str(),
                  cell(dblock_cost.client_cpu_us).c_str(), cell(python_cost.client_cpu_us).c_str(),
                  cell(each_cost.client_cpu_us).c_str());
    }
    if (!handoffs.empty()) {
      std::printf("per acquisition, hand-off at %d processes (whole run): server CPU dblock %s us, recipe %s us;\n"
                  "  client context switches dblock %s, recipe %s\n",
                  kProcesses, cell(handoff_dblock.cpu_us).c_str(), cell(handoff_floor.cpu_us).c_str(),
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
                                        .add("dblock_server_cpu_us", handoff_dblock.cpu_us)
                                        .add("floor_server_cpu_us", handoff_floor.cpu_us)
                                        .add("dblock_context_switches", handoff_dblock.switches)
                                        .add("floor_context_switches", handoff_floor.switches)
                                        .str()
                                        .c_str());
  }
  if (probe_pairs > 0) {
    std::printf("BENCH_JSON %s\n", JsonLine()
                                        .add("figure", "server_per_pair")
                                        .add("pairs", probe_pairs)
                                        .add("floor_cpu_us", floor_cost.cpu_us)
                                        .add("dblock_cpu_us", dblock_cost.cpu_us)
                                        .add("python_etcd3_cpu_us", python_cost.cpu_us)
                                        .add("floor_lease_each_cpu_us", each_cost.cpu_us)
                                        .add("floor_context_switches", floor_cost.switches)
                                        .add("dblock_context_switches", dblock_cost.switches)
                                        .add("python_etcd3_context_switches", python_cost.switches)
                                        .add("floor_lease_each_context_switches", each_cost.switches)
                                        .add("floor_client_cpu_us", floor_cost.client_cpu_us)
                                        .add("dblock_client_cpu_us", dblock_cost.client_cpu_us)
                                        .add("python_etcd3_client_cpu_us", python_cost.client_cpu_us)
                                        .add("floor_lease_each_client_cpu_us", each_cost.client_cpu_us)
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
  return dblock_bench::run_reporting_errors("etcd_bench", [&] { return dblock_bench::run(config); });
}
