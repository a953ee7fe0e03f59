// bench/postgresql_bench.cc — dblock on PostgreSQL, each figure printed beside the raw libpqxx
// floor (or the reference state) measured in the same run (docs/design.md, "Performance").
//
// Figures (bench/README.md explains each one):
//   lease_pair_logged     try_acquire + release            vs  prepared INSERT ... ON CONFLICT DO UPDATE
//                                                              ... WHERE expired RETURNING + DELETE
//   lease_pair_unlogged   the same with ?unlogged=1        vs  the same on an UNLOGGED raw table
//   advisory_pair         session_lock(name, 0) + release  vs  prepared pg_try_advisory_lock + pg_advisory_unlock
//   handoff_lease         4 processes x K acquire(wait) -> 20 us -> release of one name
//                                                          vs  raw INSERT ... ON CONFLICT + LISTEN/NOTIFY loop
//   handoff_advisory      4 processes x K session_lock(wait) -> 20 us -> release
//                                                          vs  raw blocking pg_advisory_lock / unlock loop
//   live_leases_acquire   try_acquire with 100 000 live leases in the table  vs  with 10
//   reaper_pair_p99       try_acquire + release while the reaper deletes 1 000 000 expired rows  vs  idle
//   reaper_acquire_p99    the acquire half of the same pairs
//
// Placement: the server runs on one CPU (scripts/bench-postgresql.sh starts it under taskset -c 0)
// and this process pins itself to another before anything starts; forked contenders and dblock's
// threads inherit the client CPU. The process forks only while it holds no connection and no
// LockManager (neither survives a fork). Exit status: 0 when the benchmark ran, whatever the figures
// say; 1 when it could not run (no URL, server unreachable, ...).

#include <unistd.h>

#include <pqxx/pqxx>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <exception>
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
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "dblock/options.h"
#include "dblock/postgresql/postgresql.h"
#include "dblock/session_lock.h"
#include "figures.h"
#include "scale.h"
// Diagnostics only: the backend's own statement texts, so that "dblock's SQL sent from raw libpqxx"
// can be measured beside the floor and dblock (separating SQL cost from client-side overhead).
#include "connection.h"
#include "dblock/service/sql/statement.h"
#include "sql.h"

#ifndef DBLOCK_BENCH_BUILD_TYPE
#define DBLOCK_BENCH_BUILD_TYPE ""
#endif

namespace dblock_bench {
namespace {

using namespace std::chrono_literals;

constexpr const char* kUrlEnv = "DBLOCK_BENCH_POSTGRESQL_URL";

// Pair figures.
constexpr int kDefaultPairs = 20'000;
constexpr int kDefaultWarmup = 2'000;
constexpr int kQuickPairs = 300;
constexpr int kQuickWarmup = 50;

// Hand-off figures (the contention set-up is in contention.h).
constexpr int kDefaultIterations = 500;
constexpr int kQuickIterations = 30;
// The raw LISTEN/NOTIFY loop re-tries after this long without a notification (never needed while
// notifications flow; it only bounds a lost one).
constexpr auto kRawNotifyFallback = 100ms;
// The blog-post floor of the scale figures polls at this pace.
constexpr auto kRawPollSleep = 1ms;
// Contended hand-off at 2, 4, 8 processes (bench/scale.h): the lease keeps at least this share of
// the raw (polling) floor's throughput; a session lock's hand-off stays within this of the
// blocking pg_advisory_lock's.
constexpr double kTargetScaleLeaseThroughput = 0.9;
constexpr double kTargetScaleSessionHandoff = 1.15;

// Live-lease figure.
constexpr int kDefaultLive = 100'000;
constexpr int kQuickLive = 2'000;
constexpr int kSmallLive = 10;
constexpr int kProbeNames = 1'000;

// Reaper figure.
constexpr int kDefaultReapRows = 1'000'000;
constexpr int kQuickReapRows = 20'000;
constexpr auto kReaperInterval = 100ms;  // "small reaper_interval"; the batch stays at the default (ManagerOptions::reaper_batch)
constexpr auto kReapProbeEvery = 100ms;
constexpr auto kReapTimeLimit = 900s;

// Targets (issue text).
constexpr double kTargetLeasePair = 1.15;
constexpr double kTargetAdvisoryPair = 1.1;
constexpr double kTargetHandoffLease = 1.3;
constexpr double kTargetHandoffAdvisory = 1.2;
constexpr double kTargetLive = 1.2;
constexpr double kTargetReaperP99 = 3.0;

// Everything this benchmark creates is named dblock_bench_*, dropped at the start and (unless
// --keep) at the end, so it can share a server with the test suite.
constexpr const char* kPrefixLogged = "dblock_bench_";
constexpr const char* kPrefixUnlogged = "dblock_bench_u_";
constexpr const char* kPrefixHandoff = "dblock_bench_ho_";
constexpr const char* kPrefixHandoffUnlogged = "dblock_bench_hou_";
constexpr const char* kPrefixSmall = "dblock_bench_small_";
constexpr const char* kPrefixBig = "dblock_bench_big_";
constexpr const char* kPrefixReap = "dblock_bench_reap_";
constexpr const char* kReapNamePrefix = "expired-";
// Bulk-loaded row names carry a zero-padded row number (bulk_name_sql), which bounds the row count.
constexpr int kBulkNameDigits = 7;
constexpr int kMaxBulkRows = 9'999'999;
constexpr const char* kRawLogged = "dblock_bench_raw_leases";
constexpr const char* kRawUnlogged = "dblock_bench_raw_leases_u";
constexpr const char* kRawHandoff = "dblock_bench_raw_handoff";
constexpr const char* kRawHandoffUnlogged = "dblock_bench_raw_handoff_u";
constexpr const char* kRawChannel = "dblock_bench_raw_release";
constexpr const char* kFloorTtl = "30 seconds";

constexpr const char* kAllFigures[] = {"pairs", "advisory", "handoff", "scale", "live", "reaper"};

struct Config : ServerBenchFlags {
  int pairs = kDefaultPairs;
  int warmup = kDefaultWarmup;
  int iterations = kDefaultIterations;
  int live = kDefaultLive;
  int reap_rows = kDefaultReapRows;
  int reap_batch = dblock::ManagerOptions{}.reaper_batch;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--url URL] [--quick] [--json-only] [--cpu N | --no-pin] [--pairs N]\n"
               "          [--iterations K] [--live N] [--reap-rows N] [--reap-batch N] [--figures LIST] [--keep]\n"
               "  --url URL       postgresql://user@host:port/db (default: $%s); a plain libpq URI\n"
               "  --quick         small N everywhere (CI smoke test)\n"
               "  --json-only     print only the BENCH_JSON lines\n"
               "  --cpu N         pin this process and its children to CPU N (default: the launcher's CPU\n"
               "                  when started with a single-CPU mask; else the lowest allowed CPU the\n"
               "                  server is not pinned to)\n"
               "  --no-pin        do not pin (placement is reported as such)\n"
               "  --pairs N       measured pairs per pair figure (default %d)\n"
               "  --iterations K  acquisitions per contending process (default %d)\n"
               "  --live N        live leases for the live-lease figure (default %d)\n"
               "  --reap-rows N   expired rows for the reaper figure (default %d)\n"
               "  --reap-batch N  the reaping manager's reaper_batch (default: ManagerOptions' default)\n"
               "  --figures LIST  comma-separated subset of pairs,advisory,handoff,scale,live,reaper\n"
               "  --keep          keep the dblock_bench_* tables afterwards\n",
               argv0, kUrlEnv, kDefaultPairs, kDefaultIterations, kDefaultLive, kDefaultReapRows);
  std::exit(status);
}

Config parse_args(int argc, char** argv) {
  Config config;
  std::optional<int> live, reap_rows, reap_batch;
  parse_server_flags(argc, argv, kAllFigures, usage, config, [&](std::string_view arg, auto next) {
    if (arg == "--live") {
      live = parse_non_negative(argv[0], "--live", next(), usage);
    } else if (arg == "--reap-rows") {
      reap_rows = parse_non_negative(argv[0], "--reap-rows", next(), usage);
    } else if (arg == "--reap-batch") {
      reap_batch = parse_non_negative(argv[0], "--reap-batch", next(), usage);
    } else {
      return false;
    }
    return true;
  });
  if (config.server_pid) {  // a shared flag this benchmark has no use for: refused, as before
    std::fprintf(stderr, "%s: unknown argument: --server-pid\n", argv[0]);
    usage(argv[0], 2);
  }
  if (config.url.empty()) {
    const char* env = std::getenv(kUrlEnv);
    if (env != nullptr) config.url = env;
  }
  if (config.url.empty()) {
    std::fprintf(stderr, "%s: no server: pass --url postgresql://... or set %s\n", argv[0], kUrlEnv);
    std::exit(1);
  }
  if (config.quick) {
    config.pairs = kQuickPairs;
    config.warmup = kQuickWarmup;
    config.iterations = kQuickIterations;
    config.live = kQuickLive;
    config.reap_rows = kQuickReapRows;
  }
  if (config.pairs_given) config.pairs = std::max(*config.pairs_given, 1);
  if (config.iterations_given) config.iterations = std::max(*config.iterations_given, 2);
  if (live) config.live = std::clamp(*live, kSmallLive + 1, kMaxBulkRows);
  if (reap_rows) config.reap_rows = std::clamp(*reap_rows, 1, kMaxBulkRows);
  if (reap_batch) config.reap_batch = std::max(*reap_batch, 1);
  return config;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

std::string quote_ident(const std::string& name) { return "\"" + name + "\""; }

// The URL with one more query parameter (dblock's own, e.g. unlogged=1).
std::string with_param(const std::string& url, const std::string& param) {
  return url + (url.find('?') == std::string::npos ? "?" : "&") + param;
}

void progress(const char* what) { std::fprintf(stderr, "[postgresql_bench] %s\n", what); }

// ---------------------------------------------------------------------------------------------
// Raw connections: the floor talks libpqxx directly, like hand-written application code would.

std::unique_ptr<pqxx::connection> raw_connect(const std::string& url) {
  return std::make_unique<pqxx::connection>(url);
}

pqxx::result run_sql(pqxx::connection& c, const std::string& sql) {
  pqxx::nontransaction tx(c);
  return tx.exec(sql);
}

std::string scalar(pqxx::connection& c, const std::string& sql) {
  pqxx::result r = run_sql(c, sql);
  return r.empty() || r[0][0].is_null() ? std::string() : r[0][0].as<std::string>();
}

// Drops a dblock schema created with `prefix` (all of its objects; nothing else).
void drop_prefix(pqxx::connection& c, const std::string& prefix) {
  run_sql(c, "DROP TABLE IF EXISTS " + quote_ident(prefix + "leases") + ", " + quote_ident(prefix + "readers") + ", " +
                 quote_ident(prefix + "waiters") + ", " + quote_ident(prefix + "schema_version") + ", " +
                 quote_ident(prefix + "force_releases"));
  run_sql(c, "DROP SEQUENCE IF EXISTS " + quote_ident(prefix + "fence_seq"));
}

void drop_everything(pqxx::connection& c) {
  for (const char* prefix : {kPrefixLogged, kPrefixUnlogged, kPrefixHandoff, kPrefixHandoffUnlogged, kPrefixSmall,
                             kPrefixBig, kPrefixReap}) {
    drop_prefix(c, prefix);
  }
  run_sql(c, std::string("DROP TABLE IF EXISTS ") + kRawLogged + ", " + kRawUnlogged + ", " + kRawHandoff + ", " +
                 kRawHandoffUnlogged);
}

// The raw lease table: name PK, owner, expiry.
void create_raw_table(pqxx::connection& c, const char* table, bool unlogged) {
  run_sql(c, std::string("CREATE ") + (unlogged ? "UNLOGGED " : "") + "TABLE " + table +
                 " (name text PRIMARY KEY, owner uuid NOT NULL, expires_at timestamptz NOT NULL)");
}

// Owner ids for the floor, from a counter: the floor does not pay for randomness.
std::string counter_uuid(std::uint64_t a, std::uint64_t b) {
  return format("%08llx-0000-4000-8000-%012llx", static_cast<unsigned long long>(a & 0xffffffffULL),
                static_cast<unsigned long long>(b & 0xffffffffffffULL));
}

// Statements of the raw lease, prepared once on one connection.
class RawLease {
 public:
  // flush_wait = false: the release commits without waiting for the WAL flush, as dblock's
  // releases do (see DBLOCK_PG_NO_FLUSH_WAIT in src/backends/postgresql/sql.h); a second floor.
  RawLease(pqxx::connection& c, const std::string& table, bool notify, bool flush_wait = true) : c_(c) {
    const std::string suffix = flush_wait ? "" : "_no_flush_wait";
    // A RETURNING item of the release (evaluated once per deleted row, before the commit).
    const std::string no_flush_wait = flush_wait ? "" : ", set_config('synchronous_commit', 'off', true) AS sc";
    acquire_ = "raw_acquire_" + table + suffix;
    release_ = "raw_release_" + table + suffix;
    c_.prepare(acquire_, "INSERT INTO " + table + " AS t (name, owner, expires_at) VALUES ($1, $2::uuid, now() + $3::interval)"
                         " ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at"
                         " WHERE t.expires_at < now() RETURNING expires_at");
    if (notify) {
      // Release and wake-up in one statement: NOTIFY is sent when the DELETE commits.
      c_.prepare(release_, "WITH d AS (DELETE FROM " + table + " WHERE name = $1 AND owner = $2::uuid RETURNING name" +
                               no_flush_wait + ") SELECT pg_notify('" + kRawChannel + "', d.name)" +
                               (flush_wait ? "" : ", d.sc") + " FROM d");
    } else {
      c_.prepare(release_, "DELETE FROM " + table + " WHERE name = $1 AND owner = $2::uuid" +
                               (flush_wait ? "" : " RETURNING name" + no_flush_wait));
    }
    notify_ = notify;
  }

  bool try_acquire(const std::string& name, const std::string& owner) {
    pqxx::nontransaction tx(c_);
    return tx.exec_prepared(acquire_, name, owner, kFloorTtl).size() == 1;
  }
  bool release(const std::string& name, const std::string& owner) {
    pqxx::nontransaction tx(c_);
    pqxx::result r = tx.exec_prepared(release_, name, owner);
    return notify_ ? r.size() == 1 : r.affected_rows() == 1;
  }

 private:
  pqxx::connection& c_;
  std::string acquire_, release_;
  bool notify_ = false;
};

// ---------------------------------------------------------------------------------------------
// Pair figures

class RawLeaseSide {
 public:
  RawLeaseSide(pqxx::connection& c, const char* table, bool flush_wait = true) : lease_(c, table, false, flush_wait) {}

  void pair(const std::string& name, PairSamples* out) {
    const std::string owner = counter_uuid(static_cast<std::uint64_t>(::getpid()), ++sequence_);
    const auto t0 = Clock::now();
    const bool acquired = lease_.try_acquire(name, owner);
    const auto t1 = Clock::now();
    const bool released = acquired && lease_.release(name, owner);
    const auto t2 = Clock::now();
    if (!acquired || !released) throw std::runtime_error("floor: uncontended raw lease did not change a row");
    if (out) out->add(t0, t1, t2);
  }

 private:
  RawLease lease_;
  std::uint64_t sequence_ = 0;
};

class RawAdvisorySide {
 public:
  explicit RawAdvisorySide(pqxx::connection& c) : c_(c) {
    c_.prepare("raw_try_advisory", "SELECT pg_try_advisory_lock($1::bigint)");
    c_.prepare("raw_advisory_unlock", "SELECT pg_advisory_unlock($1::bigint)");
  }

  void pair(const std::string& name, PairSamples* out) {
    const std::int64_t key = dblock::postgresql::advisory_key("raw:" + name);
    const auto t0 = Clock::now();
    bool locked;
    {
      pqxx::nontransaction tx(c_);
      locked = tx.exec_prepared1("raw_try_advisory", key)[0].as<bool>();
    }
    const auto t1 = Clock::now();
    bool unlocked = false;
    if (locked) {
      pqxx::nontransaction tx(c_);
      unlocked = tx.exec_prepared1("raw_advisory_unlock", key)[0].as<bool>();
    }
    const auto t2 = Clock::now();
    if (!locked || !unlocked) throw std::runtime_error("floor: uncontended advisory lock/unlock failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  pqxx::connection& c_;
};

// dblock's statement as the service sends it: the table placeholders filled in, its ":name"
// parameters spelled $1, $2, ... Throws unless they come in the order `params` (the order the
// bench binds them in).
std::string render_dblock_sql(const dblock::sql::Statement& statement, const std::string& prefix,
                              const std::vector<std::string>& params) {
  dblock::sql::DriverText spelled = dblock::sql::spell_params(
      dblock::sql::render(statement.text, dblock::postgresql::tables(prefix)), dblock::sql::ParamStyle::kDollar);
  if (spelled.params != params) throw std::runtime_error(std::string("bench: parameters of ") + statement.name + " changed");
  return spelled.text;
}

// Diagnostic side: dblock's exact lease statements (prepared, like the backend prepares them) sent
// from raw libpqxx on dblock's own tables, without the LockManager around them. dblock minus this
// is client-side overhead; this minus the floor is the cost of dblock's SQL.
class DblockSqlLeaseSide {
 public:
  DblockSqlLeaseSide(pqxx::connection& c, const std::string& prefix) : c_(c), channel_(prefix + "release") {
    c_.prepare("diag_acquire_" + prefix, render_dblock_sql(dblock::postgresql::sql::kAcquireExclusive, prefix,
                                                           {"name", "secret", "holder", "ttl_us"}));
    c_.prepare("diag_release_" + prefix,
               render_dblock_sql(dblock::postgresql::sql::kReleaseExclusive, prefix, {"name", "secret", "channel"}));
    acquire_ = "diag_acquire_" + prefix;
    release_ = "diag_release_" + prefix;
  }

  void pair(const std::string& name, PairSamples* out) {
    const std::string secret = counter_uuid(0xd1a6, ++sequence_);
    const auto t0 = Clock::now();
    bool acquired;
    {
      pqxx::nontransaction tx(c_);
      acquired = tx.exec_prepared(acquire_, name, secret, "postgresql_bench", std::int64_t{30'000'000}).size() == 1;
    }
    const auto t1 = Clock::now();
    bool released = false;
    if (acquired) {
      pqxx::nontransaction tx(c_);
      pqxx::result r = tx.exec_prepared(release_, name, secret, channel_);
      released = r.size() == 1;
    }
    const auto t2 = Clock::now();
    if (!acquired || !released) throw std::runtime_error("diagnostic: dblock's SQL did not acquire/release");
    if (out) out->add(t0, t1, t2);
  }

 private:
  pqxx::connection& c_;
  std::string channel_;
  std::string acquire_, release_;
  std::uint64_t sequence_ = 0;
};

// Diagnostic side: dblock's session-lock statements (pid-guarded, see sql.h) sent unprepared
// (exec_params: parsed and planned on every call) on one raw connection. The backend prepares them.
class DblockSqlAdvisorySide {
 public:
  explicit DblockSqlAdvisorySide(pqxx::connection& c)
      : c_(c),
        pid_(c.backendpid()),
        lock_(render_dblock_sql(dblock::postgresql::sql::kTrySessionExclusive, "", {"pid", "key"})),
        unlock_(render_dblock_sql(dblock::postgresql::sql::kUnlockSessionExclusive, "", {"pid", "key"})) {}

  void pair(const std::string& name, PairSamples* out) {
    const std::int64_t key = dblock::postgresql::advisory_key("diag:" + name);
    const auto t0 = Clock::now();
    bool locked;
    {
      pqxx::nontransaction tx(c_);
      locked = tx.exec_params1(lock_, pid_, key)["got"].as<bool>();
    }
    const auto t1 = Clock::now();
    bool unlocked = false;
    if (locked) {
      pqxx::nontransaction tx(c_);
      unlocked = tx.exec_params1(unlock_, pid_, key)["released"].as<bool>();
    }
    const auto t2 = Clock::now();
    if (!locked || !unlocked) throw std::runtime_error("diagnostic: dblock's advisory SQL failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  pqxx::connection& c_;
  const int pid_;
  const std::string lock_, unlock_;
};

std::unique_ptr<dblock::LockManager> open_manager(const std::string& url, const char* prefix, bool reaper,
                                                  std::chrono::milliseconds reaper_interval = 5'000ms,
                                                  int reaper_batch = dblock::ManagerOptions{}.reaper_batch) {
  dblock::ManagerOptions options;
  options.table_prefix = prefix;
  options.reaper = reaper;
  options.reaper_interval = reaper_interval;
  options.reaper_batch = reaper_batch;
  return dblock::open(url, options);
}

// ---------------------------------------------------------------------------------------------
// Hand-off figures: forked processes, results in shared memory.

enum class Kind {
  kDblockLease,
  kDblockLeaseUnfair,
  kRawLease,
  kRawLeasePoll,
  kRawLeaseNoFlushWait,
  kDblockLeaseUnlogged,
  kRawLeaseUnlogged,
  kDblockAdvisory,
  kRawAdvisory
};

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kDblockLease: return "dblock lease";
    case Kind::kDblockLeaseUnfair: return "dblock lease (fair=false)";
    case Kind::kRawLease: return "raw LISTEN/NOTIFY lease";
    case Kind::kRawLeasePoll: return "raw lease, 1 ms poll";
    case Kind::kRawLeaseNoFlushWait: return "raw LISTEN/NOTIFY lease (release without flush wait)";
    case Kind::kDblockLeaseUnlogged: return "dblock lease (unlogged)";
    case Kind::kRawLeaseUnlogged: return "raw LISTEN/NOTIFY lease (unlogged)";
    case Kind::kDblockAdvisory: return "dblock session lock";
    case Kind::kRawAdvisory: return "raw pg_advisory_lock";
  }
  return "?";
}

// Counts notifications; the raw loop only needs to be woken.
struct WakeUp final : pqxx::notification_receiver {
  WakeUp(pqxx::connection_base& c, const std::string& channel) : pqxx::notification_receiver(c, channel) {}
  void operator()(const std::string&, int) override { ++count; }
  long count = 0;
};

// One owner id per acquisition of contender `index`, made before the start.
std::vector<std::string> owner_ids(int index, int iterations) {
  std::vector<std::string> owners;
  for (int j = 0; j < iterations; ++j) {
    owners.push_back(counter_uuid(static_cast<std::uint64_t>(index), static_cast<std::uint64_t>(j)));
  }
  return owners;
}

// The hand-written lease with LISTEN/NOTIFY: try the upsert; on failure wait for a notification
// (bounded by a fallback timeout) and try again; release = DELETE + pg_notify in one statement.
void raw_lease_contender(const std::string& url, const char* table, bool flush_wait, int index, int iterations,
                         SharedArena& arena, StartLine& start) {
  auto c = raw_connect(url);
  RawLease lease(*c, table, true, flush_wait);
  WakeUp wake(*c, kRawChannel);  // LISTEN, once, before the first attempt
  const std::vector<std::string> owners = owner_ids(index, iterations);  // the floor does not pay for them
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int j) -> std::optional<std::int64_t> {
        const auto deadline = Clock::now() + kContentionWait;
        for (;;) {
          c->get_notifs();  // forget wake-ups for releases before this attempt (our own included)
          if (lease.try_acquire(kHotKey, owners[static_cast<std::size_t>(j)])) return std::int64_t{0};  // no fence
          const auto now = Clock::now();
          if (now >= deadline) return std::nullopt;
          const auto wait = std::min<Clock::duration>(kRawNotifyFallback, deadline - now);
          const auto us = std::chrono::duration_cast<std::chrono::microseconds>(wait).count();
          c->await_notification(static_cast<long>(us / 1'000'000), static_cast<long>(us % 1'000'000));
        }
      },
      [&](int j) { return lease.release(kHotKey, owners[static_cast<std::size_t>(j)]); });
}

// The blog-post lease: the same upsert until it sticks, sleeping a fixed 1 ms after each miss (no
// LISTEN); unfair, as whoever polls first after a release gets the name.
void raw_poll_contender(const std::string& url, int index, int iterations, SharedArena& arena, StartLine& start) {
  auto c = raw_connect(url);
  RawLease lease(*c, kRawHandoff, false);
  const std::vector<std::string> owners = owner_ids(index, iterations);  // the floor does not pay for them
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int j) -> std::optional<std::int64_t> {
        const auto deadline = Clock::now() + kContentionWait;
        while (!lease.try_acquire(kHotKey, owners[static_cast<std::size_t>(j)])) {
          if (Clock::now() >= deadline) return std::nullopt;
          std::this_thread::sleep_for(kRawPollSleep);
        }
        return std::int64_t{0};  // no fence
      },
      [&](int j) { return lease.release(kHotKey, owners[static_cast<std::size_t>(j)]); });
}

// The hand-written blocking advisory lock: the server queues the waiters and wakes the next one.
void raw_advisory_contender(const std::string& url, int index, int iterations, SharedArena& arena, StartLine& start) {
  auto c = raw_connect(url);
  const std::int64_t key = dblock::postgresql::advisory_key(std::string("raw:") + kHotKey);
  run_sql(*c, format("SET lock_timeout = '%lldms'", static_cast<long long>(kContentionWait / 1ms)));
  c->prepare("raw_advisory_lock", "SELECT pg_advisory_lock($1::bigint)");
  c->prepare("raw_advisory_unlock", "SELECT pg_advisory_unlock($1::bigint)");
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int) -> std::optional<std::int64_t> {
        try {
          pqxx::nontransaction tx(*c);
          tx.exec_prepared("raw_advisory_lock", key);
          return std::int64_t{0};  // no fence
        } catch (const pqxx::sql_error& e) {
          if (e.sqlstate() != "55P03") throw;  // lock_timeout: the wait ran out
          return std::nullopt;
        }
      },
      [&](int) {
        pqxx::nontransaction tx(*c);
        return tx.exec_prepared1("raw_advisory_unlock", key)[0].as<bool>();
      });
}

struct ServerCounters {
  double commits = NAN;
  double wal_records = NAN;
  double wal_flushes = NAN;
};

// Cluster-wide counters; the contenders' backends report theirs when they exit, so the caller waits
// a little after the contenders are gone. Opens and closes its own connection.
ServerCounters server_counters(const std::string& url) {
  ServerCounters out;
  try {
    auto c = raw_connect(url);
    pqxx::result r = run_sql(*c, "SELECT (SELECT sum(xact_commit) FROM pg_stat_database)::float8, wal_records::float8,"
                                 " wal_sync::float8 FROM pg_stat_wal");
    out.commits = r[0][0].as<double>();
    out.wal_records = r[0][1].as<double>();
    out.wal_flushes = r[0][2].as<double>();
  } catch (const std::exception&) {
    // pg_stat_wal is PostgreSQL 14+: leave the figures out.
  }
  return out;
}

// Forks `processes` contenders of `kind`, starts them together and collects their records, with
// the server's work per acquisition.
// REQUIRES: no LockManager and no connection open in this process.
// `stats_url` is a plain libpq URL for the statistics (the dblock URL may carry dblock's parameters).
ContentionResult run_contention(Kind kind, const std::string& url, const std::string& stats_url, int processes,
                                int iterations) {
  const ServerCounters before = server_counters(stats_url);
  dblock::ManagerOptions options;
  options.table_prefix =
      kind == Kind::kDblockLeaseUnlogged ? kPrefixHandoffUnlogged : kPrefixHandoff;
  options.reaper = false;  // no background writes beside the measured ones
  if (kind != Kind::kDblockAdvisory) options.default_ttl = kContentionTtl;
  options.fair = kind != Kind::kDblockLeaseUnfair;
  ContentionResult result =
      run_contenders(kind_name(kind), processes, iterations, [&](int index, SharedArena& arena, StartLine& start) {
        switch (kind) {
          case Kind::kDblockLease:
          case Kind::kDblockLeaseUnfair:
          case Kind::kDblockLeaseUnlogged:
            dblock_bench::dblock_lease_contender(url, options, index, iterations, arena, start);
            break;
          case Kind::kRawLease: raw_lease_contender(url, kRawHandoff, true, index, iterations, arena, start); break;
          case Kind::kRawLeasePoll: raw_poll_contender(url, index, iterations, arena, start); break;
          case Kind::kRawLeaseNoFlushWait:
            raw_lease_contender(url, kRawHandoff, false, index, iterations, arena, start);
            break;
          case Kind::kRawLeaseUnlogged:
            raw_lease_contender(url, kRawHandoffUnlogged, true, index, iterations, arena, start);
            break;
          case Kind::kDblockAdvisory:
            dblock_bench::dblock_session_contender(url, options, index, iterations, arena, start);
            break;
          case Kind::kRawAdvisory: raw_advisory_contender(url, index, iterations, arena, start); break;
        }
      });
  std::this_thread::sleep_for(500ms);  // the contenders' server backends flush their statistics on exit
  const ServerCounters after = server_counters(stats_url);
  // The two statistics connections commit nothing worth counting (one read-only statement each).
  const double n = static_cast<double>(std::max<std::size_t>(result.acquired, 1));
  result.commits_per_acquisition = (after.commits - before.commits) / n;
  result.wal_records_per_acquisition = (after.wal_records - before.wal_records) / n;
  result.wal_flushes_per_acquisition = (after.wal_flushes - before.wal_flushes) / n;
  return result;
}

// ---------------------------------------------------------------------------------------------
// Live leases and reaper: bulk rows straight into dblock's own table (migrations/postgresql/0001).

// Bulk-loaded rows are named name_prefix + the row number zero-padded to kBulkNameDigits, so that
// name order is load order. `number` is an SQL expression.
std::string bulk_name_sql(const char* name_prefix, const std::string& number) {
  return std::string("'") + name_prefix + "' || lpad((" + number + ")::text, " + std::to_string(kBulkNameDigits) +
         ", '0')";
}

void bulk_insert_leases(pqxx::connection& c, const char* prefix, const char* name_prefix, int count, bool expired) {
  const std::string leases = quote_ident(std::string(prefix) + "leases");
  const std::string sequence = quote_ident(std::string(prefix) + "fence_seq");
  const char* acquired = expired ? "now() - interval '2 hours'" : "now()";
  const char* expires = expired ? "now() - interval '1 hour'" : "now() + interval '10 years'";
  run_sql(c, "INSERT INTO " + leases +
                 " (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals)"
                 " SELECT " + bulk_name_sql(name_prefix, "g") + ", gen_random_uuid(), 'postgresql_bench',"
                 " 'exclusive', nextval('" + sequence + "'), " + acquired + ", " + expires + ", 0"
                 " FROM generate_series(1, " + std::to_string(count) + ") g");
  // A long-lived table has statistics and a visibility map; give the bulk-loaded one the same.
  run_sql(c, "VACUUM ANALYZE " + leases);
}

std::int64_t count_rows(pqxx::connection& c, const char* prefix, const char* condition) {
  return std::stoll(scalar(c, "SELECT count(*) FROM " + quote_ident(std::string(prefix) + "leases") + " WHERE " +
                                  condition));
}

struct ReaperResult {
  PairSamples idle;
  PairSamples during;
  double reap_seconds = NAN;
  bool finished = false;
  std::int64_t rows = 0;
  std::int64_t left = -1;
  double insert_seconds = NAN;
};

ReaperResult measure_reaper(const Config& config, const std::string& logged_url, pqxx::connection& raw) {
  ReaperResult result;
  result.rows = config.reap_rows;
  auto manager = open_manager(logged_url, kPrefixReap, false);
  DblockLeaseSide side(*manager);
  std::vector<std::string> names;
  for (int i = 0; i < kProbeNames; ++i) names.push_back(format("reap-probe-%04d", i));

  progress(format("reaper: inserting %d expired rows...", config.reap_rows).c_str());
  const auto t0 = Clock::now();
  bulk_insert_leases(raw, kPrefixReap, kReapNamePrefix, config.reap_rows, true);
  try {
    run_sql(raw, "CHECKPOINT");  // so that the idle figure does not inherit the bulk load's checkpoint
  } catch (const pqxx::sql_error&) {
    // Not a superuser: the figures then include whatever checkpoint the load triggers.
  }
  result.insert_seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  progress("reaper: idle pairs (expired rows present, no reaper)...");
  for (int i = 0; i < config.warmup; ++i) side.pair(names[static_cast<std::size_t>(i % kProbeNames)], nullptr);
  result.idle.reserve(static_cast<std::size_t>(config.pairs));
  for (int i = 0; i < config.pairs; ++i) side.pair(names[static_cast<std::size_t>(i % kProbeNames)], &result.idle);

  progress("reaper: pairs while a reaping LockManager deletes the expired rows...");
  const std::string leases = quote_ident(std::string(kPrefixReap) + "leases");
  // Done when no expired row is left. Scanning for one walks the expiry index from its start,
  // through the entries of every row deleted so far (they stay until vacuum): milliseconds of the
  // server's CPU at a million rows, taken from the reaper. So the probe every 100 ms looks up the
  // row the reaper deletes last (all rows share one expiry and go in name order) by its key, and
  // only once that is gone does the full scan check that none is left.
  const std::string last_row_probe =
      "SELECT 1 FROM " + leases + " WHERE name = " + bulk_name_sql(kReapNamePrefix, std::to_string(config.reap_rows));
  const std::string probe = "SELECT 1 FROM " + leases + " WHERE expires_at <= clock_timestamp() LIMIT 1";
  bool last_row_gone = false;
  const auto reap_start = Clock::now();
  auto reaper = open_manager(logged_url, kPrefixReap, true, std::chrono::duration_cast<std::chrono::milliseconds>(kReaperInterval),
                             config.reap_batch);
  auto next_probe = Clock::now() + kReapProbeEvery;
  for (int i = 0;; ++i) {
    side.pair(names[static_cast<std::size_t>(i % kProbeNames)], &result.during);
    const auto now = Clock::now();
    if (now >= next_probe) {
      if (!last_row_gone) last_row_gone = run_sql(raw, last_row_probe).empty();
      if (last_row_gone && run_sql(raw, probe).empty()) {
        result.finished = true;
        break;
      }
      if (now - reap_start > kReapTimeLimit) break;
      next_probe = now + kReapProbeEvery;
    }
  }
  result.reap_seconds = std::chrono::duration<double>(Clock::now() - reap_start).count();
  reaper.reset();
  manager.reset();
  result.left = count_rows(raw, kPrefixReap, "expires_at <= clock_timestamp()");
  return result;
}

// ---------------------------------------------------------------------------------------------
// Output

int run(const Config& config) {
  // Server facts first (this connection is closed before anything forks).
  std::string server_version, sync_commit, fsync_setting;
  int server_pid = 0;
  {
    auto c = raw_connect(config.url);
    server_pid = c->backendpid();
    server_version = scalar(*c, "SHOW server_version");
    sync_commit = scalar(*c, "SHOW synchronous_commit");
    fsync_setting = scalar(*c, "SHOW fsync");
    drop_everything(*c);
  }
  const Placement placement = apply_placement(config.pin, config.cpu, server_pid);
  const std::string logged_url = with_param(config.url, "unlogged=0");
  const std::string unlogged_url = with_param(config.url, "unlogged=1");
  const std::string date = utc_now();
  const long online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string build_type = DBLOCK_BENCH_BUILD_TYPE;
#ifdef NDEBUG
  const bool assertions = false;
#else
  const bool assertions = true;
#endif
  const std::string redacted_url = redact_password(config.url);

  if (!config.json_only) {
    std::printf("dblock postgresql_bench: dblock %s against raw libpqxx statements, measured in the same run\n",
                dblock::version());
    std::printf("date:      %s\n", date.c_str());
    std::printf("server:    PostgreSQL %s at %s (synchronous_commit=%s, fsync=%s), libpqxx %s\n",
                server_version.c_str(), redacted_url.c_str(), sync_commit.c_str(), fsync_setting.c_str(),
                PQXX_VERSION);
    std::printf("host:      %ld online CPUs, %s\n", online_cpus, cpu_model().c_str());
    print_placement(placement, "backend pid");
    std::printf("build:     %s%s\n", build_type.empty() ? "(no CMAKE_BUILD_TYPE)" : build_type.c_str(),
                assertions ? ", assertions ON: figures are not representative" : "");
    std::printf("pairs:     N=%d per figure after %d warm-up pairs, floor and dblock interleaved in blocks of %d\n",
                config.pairs, config.warmup, kInterleaveBlock);
    std::printf("dblock:    LockManager per figure, reaper=false except the reaping manager; tables dblock_bench_*\n");
    std::printf("floor:     one pqxx connection, statements prepared once, a nontransaction per statement\n\n");
    std::fflush(stdout);
  }

  std::vector<Row> rows;

  // --- pair figures ---------------------------------------------------------------------------
  if (config.wants("pairs")) {
    auto raw = raw_connect(config.url);
    create_raw_table(*raw, kRawLogged, false);
    create_raw_table(*raw, kRawUnlogged, true);
    const std::vector<std::string> names{"bench-lease"};
    for (const bool unlogged : {false, true}) {
      progress(unlogged ? "lease pairs, unlogged..." : "lease pairs, logged...");
      auto manager = open_manager(unlogged ? unlogged_url : logged_url, unlogged ? kPrefixUnlogged : kPrefixLogged, false);
      RawLeaseSide floor_side(*raw, unlogged ? kRawUnlogged : kRawLogged);
      DblockLeaseSide dblock_side(*manager);
      DblockSqlLeaseSide diag_side(*raw, unlogged ? kPrefixUnlogged : kPrefixLogged);
      const PairFigure f = measure_pairs(floor_side, dblock_side, diag_side, names, config.warmup, config.pairs);
      const std::string tag = unlogged ? "unlogged" : "logged";
      rows.push_back(make_row("lease_pair_" + tag, "lease acquire+release (" + tag + ")", f.dblock.pair, f.floor.pair,
                              kTargetLeasePair));
      rows.push_back(make_row("lease_acquire_" + tag, "  acquire only", f.dblock.acquire, f.floor.acquire));
      rows.push_back(make_row("lease_release_" + tag, "  release only", f.dblock.release, f.floor.release));
      rows.push_back(make_row("lease_pair_" + tag + "_dblock_sql", "  diag: dblock's SQL via raw pqxx",
                              f.diag.pair, f.floor.pair));
      if (!unlogged) {
        // dblock's release does not wait for the WAL flush; the floor above does. Against a floor
        // that skips it too, the ratio shows dblock's own cost rather than that choice.
        progress("lease pairs, logged, floor releasing without flush wait...");
        RawLeaseSide quick_floor(*raw, kRawLogged, false);
        const PairFigure g = measure_pairs(quick_floor, dblock_side, names, config.warmup, config.pairs);
        rows.push_back(make_row("lease_pair_logged_vs_no_flush_wait", "  vs floor whose DELETE skips flush wait",
                                g.dblock.pair, g.floor.pair));
        rows.push_back(make_row("lease_release_logged_vs_no_flush_wait", "    release only", g.dblock.release,
                                g.floor.release));
      }
    }
  }
  if (config.wants("advisory")) {
    progress("advisory pairs...");
    auto raw = raw_connect(config.url);
    auto manager = open_manager(logged_url, kPrefixLogged, false);
    RawAdvisorySide floor_side(*raw);
    DblockSessionSide dblock_side(*manager);
    DblockSqlAdvisorySide diag_side(*raw);
    const PairFigure f =
        measure_pairs(floor_side, dblock_side, diag_side, {"bench-advisory"}, config.warmup, config.pairs);
    rows.push_back(make_row("advisory_pair", "advisory session_lock(0)+release", f.dblock.pair, f.floor.pair,
                            kTargetAdvisoryPair));
    rows.push_back(make_row("advisory_acquire", "  acquire only", f.dblock.acquire, f.floor.acquire));
    rows.push_back(make_row("advisory_release", "  release only", f.dblock.release, f.floor.release));
    rows.push_back(make_row("advisory_pair_dblock_sql", "  diag: dblock's SQL via raw pqxx", f.diag.pair,
                            f.floor.pair));
  }

  // --- hand-off figures (fork: nothing may be open here) ----------------------------------------
  std::vector<HandoffFigure> handoffs;
  if (config.wants("handoff")) {
    {
      auto raw = raw_connect(config.url);
      create_raw_table(*raw, kRawHandoff, false);
      create_raw_table(*raw, kRawHandoffUnlogged, true);
      open_manager(logged_url, kPrefixHandoff, false).reset();             // creates the tables once, logged
      open_manager(unlogged_url, kPrefixHandoffUnlogged, false).reset();  // ... and UNLOGGED
    }
    const std::string contention_title =
        format("%d processes x %d acquire(\"%s\", wait=%llds) -> %lld us busy critical section -> release", kProcesses,
               config.iterations, kHotKey, static_cast<long long>(kContentionWait.count()),
               static_cast<long long>(kCriticalSection.count()));
    // Returns the dblock side's result (for a second floor).
    auto measure = [&](const char* figure, const char* label, const std::string& title, Kind dblock_kind,
                       const std::string& dblock_url, const char* dblock_name, Kind raw_kind, const char* raw_name,
                       double target) {
      progress(format("hand-off, %s...", kind_name(dblock_kind)).c_str());
      ContentionResult d = run_contention(dblock_kind, dblock_url, config.url, kProcesses, config.iterations);
      progress(format("hand-off, %s...", kind_name(raw_kind)).c_str());
      ContentionResult f = run_contention(raw_kind, config.url, config.url, kProcesses, config.iterations);
      rows.push_back(handoff_row(figure, label, d, f, target));
      handoffs.push_back(HandoffFigure{figure, title, dblock_name, raw_name, d, std::move(f), target});
      return d;
    };
    const ContentionResult logged =
        measure("handoff_lease", "hand-off lease, 4 procs (logged)", "hand-off (lease, logged tables): " + contention_title,
                Kind::kDblockLease, logged_url, "dblock lease", Kind::kRawLease, "raw LISTEN/NOTIFY", kTargetHandoffLease);
    {
      // The same dblock run against a floor whose release also skips the WAL flush wait.
      progress(format("hand-off, %s...", kind_name(Kind::kRawLeaseNoFlushWait)).c_str());
      ContentionResult f = run_contention(Kind::kRawLeaseNoFlushWait, config.url, config.url, kProcesses, config.iterations);
      rows.push_back(handoff_row("handoff_lease_vs_no_flush_wait", "  vs floor releasing without flush wait", logged, f,
                                 NAN));
      handoffs.push_back(HandoffFigure{"handoff_lease_vs_no_flush_wait",
                                       "hand-off (lease, logged tables): the same dblock run against a floor whose"
                                       " DELETE + pg_notify skips the WAL flush wait",
                                       "dblock lease", "raw, no flush wait", logged, std::move(f), NAN});
    }
    measure("handoff_lease_unlogged", "hand-off lease, 4 procs (unlogged)",
            "hand-off (lease, UNLOGGED tables on both sides): the same", Kind::kDblockLeaseUnlogged, unlogged_url,
            "dblock lease", Kind::kRawLeaseUnlogged, "raw LISTEN/NOTIFY", kTargetHandoffLease);
    measure("handoff_advisory", "hand-off advisory, 4 procs (vs blocking)",
            "hand-off (session locks): the same with session_lock(wait=10s) / blocking pg_advisory_lock",
            Kind::kDblockAdvisory, logged_url, "dblock session_lock", Kind::kRawAdvisory, "raw pg_advisory_lock",
            kTargetHandoffAdvisory);
  }

  // --- the same hand-offs at 2, 4, 8 processes (fork: nothing may be open here) -------------------
  std::vector<ScaleFigure> scales;
  if (config.wants("scale")) {
    {
      auto raw = raw_connect(config.url);
      run_sql(*raw, std::string("DROP TABLE IF EXISTS ") + kRawHandoff);  // the hand-off figures may have made it
      create_raw_table(*raw, kRawHandoff, false);
      open_manager(logged_url, kPrefixHandoff, false).reset();
    }
    auto run = [&](std::vector<Kind> kinds, const std::string& dblock_url) {
      return [&config, kinds, dblock_url](std::size_t side, int processes) {
        progress(format("scale, %d processes, %s...", processes, kind_name(kinds[side])).c_str());
        return run_contention(kinds[side], side == 0 ? dblock_url : config.url, config.url, processes, config.iterations);
      };
    };
    ScaleTargets lease;
    lease.min_throughput_vs_raw = kTargetScaleLeaseThroughput;
    scales.push_back(measure_scale("scale_lease", "lease (logged tables) at 2, 4, 8 processes: acquire(wait) -> 20 us -> release",
                                   lease,
                                   {{"dblock", "dblock lease"}, {"floor", "raw lease, 1 ms poll"},
                                    {"fair_floor", "raw LISTEN/NOTIFY lease (fair)"},
                                    {"unfair", "dblock lease, fair=false"}},
                                   run({Kind::kDblockLease, Kind::kRawLeasePoll, Kind::kRawLease,
                                        Kind::kDblockLeaseUnfair}, logged_url)));
    ScaleTargets session;
    session.max_handoff_vs_raw = kTargetScaleSessionHandoff;
    scales.push_back(measure_scale("scale_session", "session lock at 2, 4, 8 processes: session_lock(wait) / blocking"
                                   " pg_advisory_lock", session,
                                   {{"dblock", "dblock session_lock"}, {"floor", "raw pg_advisory_lock"}},
                                   run({Kind::kDblockAdvisory, Kind::kRawAdvisory}, logged_url)));
  }

  // --- live leases ------------------------------------------------------------------------------
  if (config.wants("live")) {
    auto raw = raw_connect(config.url);
    auto small = open_manager(logged_url, kPrefixSmall, false);
    auto big = open_manager(logged_url, kPrefixBig, false);
    progress(format("live leases: inserting %d and %d live rows...", kSmallLive, config.live).c_str());
    bulk_insert_leases(*raw, kPrefixSmall, "live-", kSmallLive, false);
    bulk_insert_leases(*raw, kPrefixBig, "live-", config.live, false);
    std::vector<std::string> names;
    for (int i = 0; i < kProbeNames; ++i) names.push_back(format("probe-%04d", i));
    DblockLeaseSide small_side(*small);
    DblockLeaseSide big_side(*big);
    progress("live leases: pairs...");
    const PairFigure f = measure_pairs(small_side, big_side, names, config.warmup, config.pairs);
    const std::int64_t live_big = count_rows(*raw, kPrefixBig, "expires_at > clock_timestamp()");
    const std::int64_t live_small = count_rows(*raw, kPrefixSmall, "expires_at > clock_timestamp()");
    Row acquire = make_row("live_leases_acquire",
                           format("acquire, %s live vs %d live", config.live >= 1000 ? format("%dk", config.live / 1000).c_str()
                                                                                      : std::to_string(config.live).c_str(),
                                  kSmallLive),
                           f.dblock.acquire, f.floor.acquire, kTargetLive);
    acquire.extra = {{"live_big", static_cast<double>(live_big)}, {"live_small", static_cast<double>(live_small)}};
    rows.push_back(std::move(acquire));
    rows.push_back(make_row("live_leases_pair", "  acquire+release", f.dblock.pair, f.floor.pair));
  }

  // --- reaper -----------------------------------------------------------------------------------
  std::optional<ReaperResult> reaper;
  if (config.wants("reaper")) {
    auto raw = raw_connect(config.url);
    reaper = measure_reaper(config, logged_url, *raw);
    Row row = make_row("reaper_pair", format("acq+rel while reaping %s rows vs idle",
                                             config.reap_rows >= 1000 ? format("%dk", config.reap_rows / 1000).c_str()
                                                                      : std::to_string(config.reap_rows).c_str()),
                       reaper->during.pair, reaper->idle.pair, kTargetReaperP99, true);
    row.extra = {{"rows", static_cast<double>(reaper->rows)},
                 {"reap_batch", static_cast<double>(config.reap_batch)},
                 {"reap_seconds", reaper->reap_seconds},
                 {"reap_rows_per_s", static_cast<double>(reaper->rows) / reaper->reap_seconds},
                 {"reap_finished", reaper->finished ? 1.0 : 0.0},
                 {"expired_left", static_cast<double>(reaper->left)},
                 {"insert_seconds", reaper->insert_seconds}};
    rows.push_back(std::move(row));
    // The wording is "acquire p99", the pair row's is the whole cycle: both carry the target.
    rows.push_back(make_row("reaper_acquire", "  acquire only", reaper->during.acquire, reaper->idle.acquire,
                            kTargetReaperP99, true));
  }

  if (!config.keep) {
    auto raw = raw_connect(config.url);
    drop_everything(*raw);
  }

  if (!config.json_only) {
    print_table(rows);
    std::printf("(live-lease rows: \"dblock\" = %d live leases, \"floor\" = %d; reaper rows: \"dblock\" = during the reap,"
                " \"floor\" = idle.\n hand-off latency = from the start of the release call to the return of the next"
                " holder's acquire.)\n\n",
                config.live, kSmallLive);
    for (const HandoffFigure& h : handoffs) {
      print_contention_table(h.title.c_str(), h.dblock_name, h.dblock, h.raw_name, h.raw, true);
      std::printf("\n");
    }
    for (const ScaleFigure& f : scales) print_scale_table(f);
    if (!scales.empty()) std::printf("\n");
    if (reaper) {
      std::printf("reaper: %lld expired rows inserted in %.1f s; a LockManager (reaper_interval %lld ms, batch %d)\n"
                  "        deleted them in %.1f s (%.0f rows/s)%s; %lld expired rows left; %zu pairs measured during,"
                  " %zu idle\n\n",
                  static_cast<long long>(reaper->rows), reaper->insert_seconds,
                  static_cast<long long>(kReaperInterval / 1ms), config.reap_batch, reaper->reap_seconds,
                  static_cast<double>(reaper->rows) / reaper->reap_seconds,
                  reaper->finished ? "" : " -- DID NOT FINISH within the time limit",
                  static_cast<long long>(reaper->left), reaper->during.pair.size(), reaper->idle.pair.size());
    }
  }

  std::printf("BENCH_JSON %s\n", JsonLine()
                                      .add("figure", "run")
                                      .add("date", date)
                                      .add("dblock_version", dblock::version())
                                      .add("server_version", server_version)
                                      .add("libpqxx_version", PQXX_VERSION)
                                      .add("synchronous_commit", sync_commit)
                                      .add("fsync", fsync_setting)
                                      .add("build_type", build_type)
                                      .add("assertions", assertions)
                                      .add("online_cpus", static_cast<std::int64_t>(online_cpus))
                                      .add("pinned", placement.pinned)
                                      .add("client_cpu", placement.cpu)
                                      .add("server_cpus", placement.server_cpus)
                                      .add("placement", placement_text(placement))
                                      .add("pairs", config.pairs)
                                      .add("warmup", config.warmup)
                                      .add("processes", kProcesses)
                                      .add("iterations", config.iterations)
                                      .add("live", config.live)
                                      .add("reap_rows", config.reap_rows)
                                      .add("quick", config.quick)
                                      .str()
                                      .c_str());
  print_rows_json(rows, handoffs, config.iterations, true);
  for (const ScaleFigure& f : scales) print_scale_json(f, config.iterations);
  return 0;
}

}  // namespace
}  // namespace dblock_bench

int main(int argc, char** argv) {
  const dblock_bench::Config config = dblock_bench::parse_args(argc, argv);
  return dblock_bench::run_reporting_errors("postgresql_bench", [&] { return dblock_bench::run(config); });
}
