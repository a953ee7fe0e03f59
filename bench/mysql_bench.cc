// bench/mysql_bench.cc — dblock on MariaDB (mysql:// backend), each figure printed beside the raw
// MySQL Connector/C++ 1.1 floor measured in the same run (docs/design.md, "Performance"). Modelled on postgresql_bench.cc.
//
// Figures (bench/README.md explains each one):
//   lease_pair        try_acquire + release            vs  prepared INSERT IGNORE ... + DELETE on one
//                                                          connection (InnoDB, name VARBINARY(255) PK)
//   session_pair      session_lock(name, 0) + release  vs  prepared SELECT GET_LOCK(?, 0) + RELEASE_LOCK(?)
//   handoff_session   4 processes x K session_lock(wait=10s) -> 20 us -> release
//                                                      vs  raw blocking GET_LOCK(name, 10) / RELEASE_LOCK
//   handoff_lease     4 processes x K acquire(wait=10s) -> 20 us -> release; absolute target on the p50
//                     (no raw floor: MariaDB has no LISTEN/NOTIFY to write one against)
//
// Placement: the server runs on one CPU (scripts/bench-mysql.sh starts it and pins it with taskset
// -c 0) and this process pins itself to another before anything starts; forked contenders and
// dblock's threads inherit the client CPU. The process forks only while it holds no connection and
// no LockManager. Exit status: 0 when the benchmark ran, whatever the figures say; 1 when it could
// not run (no URL, server unreachable, ...).

#include <unistd.h>

// Only cppconn/* headers: mysql_driver.h / mysql_connection.h pull in Boost.
#include <cppconn/connection.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/statement.h>
#include <cppconn/version_info.h>

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
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/open.h"
#include "dblock/options.h"
#include "dblock/session_lock.h"
#include "figures.h"
#include "scale.h"

#ifndef DBLOCK_BENCH_BUILD_TYPE
#define DBLOCK_BENCH_BUILD_TYPE ""
#endif

namespace dblock_bench {
namespace {

using namespace std::chrono_literals;

constexpr const char* kUrlEnv = "DBLOCK_BENCH_MYSQL_URL";

// Pair figures.
constexpr int kDefaultPairs = 5'000;
constexpr int kDefaultWarmup = 500;
constexpr int kQuickPairs = 300;
constexpr int kQuickWarmup = 50;

// Hand-off figures (the contention set-up is in contention.h).
constexpr int kDefaultIterations = 300;
constexpr int kQuickIterations = 30;

// Targets (issue text).
constexpr double kTargetLeasePair = 1.15;
constexpr double kTargetSessionPair = 1.1;
constexpr double kTargetHandoffSession = 1.2;
constexpr double kTargetHandoffLeaseP50Us = 2'000.0;  // absolute: p50 < 2 ms
// Contended hand-off at 2, 4, 8 processes (bench/scale.h): against the raw lease that polls every
// kRawPollSleep, the lease's hand-off p50 stays within this; the session lock's within the other.
constexpr double kTargetScaleLeaseHandoff = 1.5;
constexpr double kTargetScaleSessionHandoff = 1.15;
constexpr auto kRawPollSleep = 1ms;

// Everything this benchmark creates is named dblock_bench_*, dropped at the start and (unless
// --keep) at the end, so it can share a server with the test suite.
constexpr const char* kPrefixPairs = "dblock_bench_";
constexpr const char* kPrefixHandoff = "dblock_bench_ho_";
constexpr const char* kRawTable = "dblock_bench_raw_leases";

constexpr const char* kAllFigures[] = {"pairs", "session", "handoff", "scale"};

struct Config : ServerBenchFlags {
  int pairs = kDefaultPairs;
  int warmup = kDefaultWarmup;
  int iterations = kDefaultIterations;
};

[[noreturn]] void usage(const char* argv0, int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s [--url URL] [--quick] [--json-only] [--cpu N | --no-pin] [--server-pid PID]\n"
               "          [--pairs N] [--iterations K] [--figures LIST] [--keep]\n"
               "  --url URL         mysql://user[:password]@host[:port]/database (default: $%s)\n"
               "  --quick           small N everywhere (CI smoke test)\n"
               "  --json-only       print only the BENCH_JSON lines\n"
               "  --cpu N           pin this process and its children to CPU N (default: the launcher's CPU\n"
               "                    when started with a single-CPU mask; else the lowest allowed CPU the\n"
               "                    server is not pinned to)\n"
               "  --no-pin          do not pin (placement is reported as such)\n"
               "  --server-pid PID  the mariadbd pid, for its CPU placement (default: read @@pid_file)\n"
               "  --pairs N         measured pairs per pair figure (default %d)\n"
               "  --iterations K    acquisitions per contending process (default %d)\n"
               "  --figures LIST    comma-separated subset of pairs,session,handoff,scale\n"
               "  --keep            keep the dblock_bench_* tables afterwards\n",
               argv0, kUrlEnv, kDefaultPairs, kDefaultIterations);
  std::exit(status);
}

Config parse_args(int argc, char** argv) {
  Config config;
  parse_server_flags(argc, argv, kAllFigures, usage, config, [](std::string_view, auto) { return false; });
  if (config.url.empty()) {
    const char* env = std::getenv(kUrlEnv);
    if (env != nullptr) config.url = env;
  }
  if (config.url.empty()) {
    std::fprintf(stderr, "%s: no server: pass --url mysql://... or set %s\n", argv[0], kUrlEnv);
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

void progress(const char* what) { std::fprintf(stderr, "[mysql_bench] %s\n", what); }

// ---------------------------------------------------------------------------------------------
// Raw connections: the floor talks Connector/C++ 1.1 directly, like hand-written application code.

struct RawTarget {
  std::string host = "127.0.0.1";
  int port = 3306;
  std::string user = "root";
  std::string password;
  std::string database;
};

// mysql://user[:password]@host[:port]/database[?dblock options]; the query string is dblock's.
RawTarget parse_url(const std::string& url) {
  RawTarget t;
  const auto scheme = url.find("://");
  if (scheme == std::string::npos || url.substr(0, scheme) != "mysql") {
    throw std::runtime_error("not a mysql:// URL: " + url);
  }
  std::string rest = url.substr(scheme + 3);
  if (const auto q = rest.find('?'); q != std::string::npos) rest.resize(q);
  if (const auto slash = rest.find('/'); slash != std::string::npos) {
    t.database = rest.substr(slash + 1);
    rest.resize(slash);
  }
  if (const auto at = rest.rfind('@'); at != std::string::npos) {
    const std::string creds = rest.substr(0, at);
    rest = rest.substr(at + 1);
    if (const auto colon = creds.find(':'); colon != std::string::npos) {
      t.user = creds.substr(0, colon);
      t.password = creds.substr(colon + 1);
    } else {
      t.user = creds;
    }
  }
  if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
    t.port = std::stoi(rest.substr(colon + 1));
    rest.resize(colon);
  }
  if (!rest.empty()) t.host = rest;
  return t;
}

::sql::Driver* driver() {
  static ::sql::Driver* instance = get_driver_instance();
  return instance;
}

std::unique_ptr<::sql::Connection> raw_connect(const std::string& url) {
  const RawTarget t = parse_url(url);
  ::sql::ConnectOptionsMap options;
  options["hostName"] = ::sql::SQLString(t.host);
  options["port"] = t.port;
  options["userName"] = ::sql::SQLString(t.user);
  options["password"] = ::sql::SQLString(t.password);
  options["schema"] = ::sql::SQLString(t.database);
  options["OPT_RECONNECT"] = false;
  options["OPT_CHARSET_NAME"] = ::sql::SQLString("utf8mb4");
  std::unique_ptr<::sql::Connection> c(driver()->connect(options));
  c->setAutoCommit(true);
  return c;
}

void run_sql(::sql::Connection& c, const std::string& text) {
  std::unique_ptr<::sql::Statement> s(c.createStatement());
  s->execute(text);
}

std::string scalar(::sql::Connection& c, const std::string& text) {
  std::unique_ptr<::sql::Statement> s(c.createStatement());
  std::unique_ptr<::sql::ResultSet> r(s->executeQuery(text));
  if (!r->next() || r->isNull(1)) return {};
  return std::string(r->getString(1));
}

std::string quote_ident(const std::string& name) { return "`" + name + "`"; }

void drop_prefix(::sql::Connection& c, const std::string& prefix) {
  run_sql(c, "DROP TABLE IF EXISTS " + quote_ident(prefix + "readers") + ", " + quote_ident(prefix + "waiters") + ", " +
                 quote_ident(prefix + "leases") + ", " + quote_ident(prefix + "schema_version") + ", " +
                 quote_ident(prefix + "force_releases") + ", " + quote_ident(prefix + "fence"));  // and the sequence
}

void drop_everything(::sql::Connection& c) {
  for (const char* prefix : {kPrefixPairs, kPrefixHandoff}) drop_prefix(c, prefix);
  run_sql(c, std::string("DROP TABLE IF EXISTS ") + kRawTable);
}

void create_raw_table(::sql::Connection& c) {
  run_sql(c, std::string("CREATE TABLE ") + kRawTable +
                 " (name VARBINARY(255) NOT NULL PRIMARY KEY, owner BINARY(16) NOT NULL,"
                 " expires_at DATETIME(6) NOT NULL) ENGINE=InnoDB");
}

// Owner ids for the floor, from a counter: the floor does not pay for randomness.
std::string counter_owner(std::uint64_t a, std::uint64_t b) {
  std::string out(16, '\0');
  std::memcpy(out.data(), &a, 8);
  std::memcpy(out.data() + 8, &b, 8);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Pair figures

class RawLeaseSide {
 public:
  explicit RawLeaseSide(::sql::Connection& c)
      : acquire_(c.prepareStatement(std::string("INSERT IGNORE INTO ") + kRawTable +
                                    " (name, owner, expires_at) VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL 30 SECOND)")),
        release_(c.prepareStatement(std::string("DELETE FROM ") + kRawTable + " WHERE name = ? AND owner = ?")) {}

  void pair(const std::string& name, PairSamples* out) {
    const std::string owner = counter_owner(static_cast<std::uint64_t>(::getpid()), ++sequence_);
    const auto t0 = Clock::now();
    acquire_->setString(1, name);
    acquire_->setString(2, owner);
    const bool acquired = acquire_->executeUpdate() == 1;
    const auto t1 = Clock::now();
    bool released = false;
    if (acquired) {
      release_->setString(1, name);
      release_->setString(2, owner);
      released = release_->executeUpdate() == 1;
    }
    const auto t2 = Clock::now();
    if (!acquired || !released) throw std::runtime_error("floor: uncontended raw lease did not change a row");
    if (out) out->add(t0, t1, t2);
  }

 private:
  std::unique_ptr<::sql::PreparedStatement> acquire_, release_;
  std::uint64_t sequence_ = 0;
};

// 1 / 0 / NULL from a one-column SELECT.
int query_int(::sql::PreparedStatement& s) {
  std::unique_ptr<::sql::ResultSet> r(s.executeQuery());
  if (!r->next() || r->isNull(1)) return -1;
  return r->getInt(1);
}

class RawSessionSide {
 public:
  explicit RawSessionSide(::sql::Connection& c)
      : lock_(c.prepareStatement("SELECT GET_LOCK(?, 0)")), unlock_(c.prepareStatement("SELECT RELEASE_LOCK(?)")) {}

  void pair(const std::string& name, PairSamples* out) {
    const std::string key = "raw:" + name;
    const auto t0 = Clock::now();
    lock_->setString(1, key);
    const bool locked = query_int(*lock_) == 1;
    const auto t1 = Clock::now();
    bool unlocked = false;
    if (locked) {
      unlock_->setString(1, key);
      unlocked = query_int(*unlock_) == 1;
    }
    const auto t2 = Clock::now();
    if (!locked || !unlocked) throw std::runtime_error("floor: uncontended GET_LOCK/RELEASE_LOCK failed");
    if (out) out->add(t0, t1, t2);
  }

 private:
  std::unique_ptr<::sql::PreparedStatement> lock_, unlock_;
};

std::unique_ptr<dblock::LockManager> open_manager(const std::string& url, const char* prefix, bool reaper,
                                                  std::chrono::milliseconds reaper_interval = 5'000ms) {
  dblock::ManagerOptions options;
  options.table_prefix = prefix;
  options.reaper = reaper;
  options.reaper_interval = reaper_interval;
  return dblock::open(url, options);
}


// ---------------------------------------------------------------------------------------------
// Hand-off figures: forked processes, results in shared memory.

enum class Kind { kDblockLease, kDblockLeaseUnfair, kDblockSession, kRawSession, kRawLeasePoll, kRawLeaseFair };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kDblockLease: return "dblock lease";
    case Kind::kDblockLeaseUnfair: return "dblock lease (fair=false)";
    case Kind::kDblockSession: return "dblock session lock";
    case Kind::kRawSession: return "raw GET_LOCK";
    case Kind::kRawLeasePoll: return "raw lease, 1 ms poll";
    case Kind::kRawLeaseFair: return "raw lease + GET_LOCK line (fair)";
  }
  return "?";
}

// The hand-written blocking named lock: the server queues the waiters and wakes the next one.
void raw_session_contender(const std::string& url, int index, int iterations, SharedArena& arena, StartLine& start) {
  auto c = raw_connect(url);
  const std::string key = std::string("raw:") + kHotKey;
  std::unique_ptr<::sql::PreparedStatement> lock(c->prepareStatement(
      format("SELECT GET_LOCK(?, %lld)", static_cast<long long>(kContentionWait.count()))));
  std::unique_ptr<::sql::PreparedStatement> unlock(c->prepareStatement("SELECT RELEASE_LOCK(?)"));
  lock->setString(1, key);
  unlock->setString(1, key);
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int) -> std::optional<std::int64_t> {
        if (query_int(*lock) != 1) return std::nullopt;  // 0: the wait ran out
        return std::int64_t{0};                           // no fence
      },
      [&](int) { return query_int(*unlock) == 1; });
}

// The raw lease row (INSERT IGNORE / DELETE, one durable commit each) for the scale figures:
// `fair` = false polls every kRawPollSleep (the blog-post lock; whoever polls first after a release
// gets it); true queues the contenders in GET_LOCK on a companion key first (the server wakes them in
// order) and inserts the row once through it, releasing the row before the key.
void raw_lease_contender(const std::string& url, bool fair, int index, int iterations, SharedArena& arena,
                         StartLine& start) {
  auto c = raw_connect(url);
  run_sql(*c, "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED");  // as dblock's sessions run
  std::unique_ptr<::sql::PreparedStatement> insert(c->prepareStatement(
      std::string("INSERT IGNORE INTO ") + kRawTable + " (name, owner, expires_at) VALUES (?, ?, UTC_TIMESTAMP(6) + INTERVAL 30 SECOND)"));
  std::unique_ptr<::sql::PreparedStatement> remove(c->prepareStatement(std::string("DELETE FROM ") + kRawTable +
                                                                     " WHERE name = ? AND owner = ?"));
  std::unique_ptr<::sql::PreparedStatement> line(c->prepareStatement(
      format("SELECT GET_LOCK(?, %lld)", static_cast<long long>(kContentionWait.count()))));
  std::unique_ptr<::sql::PreparedStatement> unline(c->prepareStatement("SELECT RELEASE_LOCK(?)"));
  // InnoDB may still pick one of two colliding statements as a deadlock victim (1213, rolled back):
  // the blog-post lock retries it.
  auto changed = [](::sql::PreparedStatement& statement) {
    for (;;) {
      try {
        return statement.executeUpdate() == 1;
      } catch (const ::sql::SQLException& e) {
        if (e.getErrorCode() != 1213) throw;
      }
    }
  };
  const std::string key = std::string("raw-line:") + kHotKey;
  line->setString(1, key);
  unline->setString(1, key);
  insert->setString(1, kHotKey);
  remove->setString(1, kHotKey);
  start.ready_and_wait();
  contend(
      arena, index, iterations,
      [&](int j) -> std::optional<std::int64_t> {
        const std::string owner = counter_owner(static_cast<std::uint64_t>(index), static_cast<std::uint64_t>(j));
        insert->setString(2, owner);
        const auto deadline = Clock::now() + kContentionWait;
        if (fair && query_int(*line) != 1) return std::nullopt;  // 0: the wait ran out
        while (!changed(*insert)) {
          if (Clock::now() >= deadline) return std::nullopt;
          std::this_thread::sleep_for(kRawPollSleep);
        }
        return std::int64_t{0};  // no fence
      },
      [&](int j) {
        remove->setString(2, counter_owner(static_cast<std::uint64_t>(index), static_cast<std::uint64_t>(j)));
        const bool removed = changed(*remove);
        return fair ? query_int(*unline) == 1 && removed : removed;
      });
}

// Forks `processes` contenders of `kind` on the hand-off tables and collects their records.
// REQUIRES: no LockManager and no connection open in this process.
ContentionResult run_contention(Kind kind, const std::string& url, int processes, int iterations) {
  dblock::ManagerOptions options;
  options.table_prefix = kPrefixHandoff;
  options.reaper = false;  // no background writes beside the measured ones
  if (kind == Kind::kDblockLease || kind == Kind::kDblockLeaseUnfair) options.default_ttl = kContentionTtl;
  options.fair = kind != Kind::kDblockLeaseUnfair;
  return run_contenders(kind_name(kind), processes, iterations, [&](int index, SharedArena& arena, StartLine& start) {
    switch (kind) {
      case Kind::kDblockLease:
      case Kind::kDblockLeaseUnfair:
        dblock_bench::dblock_lease_contender(url, options, index, iterations, arena, start);
        break;
      case Kind::kDblockSession:
        dblock_bench::dblock_session_contender(url, options, index, iterations, arena, start);
        break;
      case Kind::kRawSession: raw_session_contender(url, index, iterations, arena, start); break;
      case Kind::kRawLeasePoll: raw_lease_contender(url, false, index, iterations, arena, start); break;
      case Kind::kRawLeaseFair: raw_lease_contender(url, true, index, iterations, arena, start); break;
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Output

// The mariadbd pid, for its CPU placement: --server-pid, else the pid file the server names (the
// server runs on this host in scripts/bench-mysql.sh); 0 when unknown.
int find_server_pid(const Config& config, ::sql::Connection& c) {
  if (config.server_pid) return *config.server_pid;
  try {
    std::ifstream in(scalar(c, "SELECT @@pid_file"));
    int pid = 0;
    if (in >> pid) return pid;
  } catch (const std::exception&) {
  }
  return 0;
}

int run(const Config& config) {
  // Server facts first (this connection is closed before anything forks).
  std::string server_version, flush_setting, isolation;
  int server_pid = 0;
  {
    auto c = raw_connect(config.url);
    server_pid = find_server_pid(config, *c);
    server_version = scalar(*c, "SELECT VERSION()");
    flush_setting = scalar(*c, "SELECT @@innodb_flush_log_at_trx_commit");
    isolation = scalar(*c, "SELECT @@global.tx_isolation");
    drop_everything(*c);
  }
  const Placement placement = apply_placement(config.pin, config.cpu, server_pid);
  const std::string date = utc_now();
  const long online_cpus = sysconf(_SC_NPROCESSORS_ONLN);
  const std::string build_type = DBLOCK_BENCH_BUILD_TYPE;
  const std::string connector_version =
      format("%d.%d.%d", MYCPPCONN_DM_MAJOR_VERSION, MYCPPCONN_DM_MINOR_VERSION, MYCPPCONN_DM_PATCH_VERSION);
#ifdef NDEBUG
  const bool assertions = false;
#else
  const bool assertions = true;
#endif
  const std::string redacted_url = redact_password(config.url);

  if (!config.json_only) {
    std::printf("dblock mysql_bench: dblock %s against raw Connector/C++ statements, measured in the same run\n",
                dblock::version());
    std::printf("date:      %s\n", date.c_str());
    std::printf("server:    MariaDB %s at %s (innodb_flush_log_at_trx_commit=%s, global isolation %s), Connector/C++ %s\n",
                server_version.c_str(), redacted_url.c_str(), flush_setting.c_str(), isolation.c_str(),
                connector_version.c_str());
    std::printf("host:      %ld online CPUs, %s\n", online_cpus, cpu_model().c_str());
    print_placement(placement, "mariadbd pid");
    std::printf("build:     %s%s\n", build_type.empty() ? "(no CMAKE_BUILD_TYPE)" : build_type.c_str(),
                assertions ? ", assertions ON: figures are not representative" : "");
    std::printf("pairs:     N=%d per figure after %d warm-up pairs, floor and dblock interleaved in blocks of %d\n",
                config.pairs, config.warmup, kInterleaveBlock);
    std::printf("dblock:    LockManager per figure, reaper=false; tables dblock_bench_*\n");
    std::printf("floor:     one Connector/C++ connection, autocommit, statements prepared once (server-side)\n\n");
    std::fflush(stdout);
  }

  std::vector<Row> rows;

  // --- pair figures ---------------------------------------------------------------------------
  if (config.wants("pairs")) {
    progress("lease pairs...");
    auto raw = raw_connect(config.url);
    create_raw_table(*raw);
    auto manager = open_manager(config.url, kPrefixPairs, false);
    RawLeaseSide floor_side(*raw);
    DblockLeaseSide dblock_side(*manager);
    const PairFigure f = measure_pairs(floor_side, dblock_side, {"bench-lease"}, config.warmup, config.pairs);
    rows.push_back(make_row("lease_pair", "lease acquire+release", f.dblock.pair, f.floor.pair, kTargetLeasePair));
    rows.push_back(make_row("lease_acquire", "  acquire only", f.dblock.acquire, f.floor.acquire));
    rows.push_back(make_row("lease_release", "  release only", f.dblock.release, f.floor.release));
  }
  if (config.wants("session")) {
    progress("session pairs...");
    auto raw = raw_connect(config.url);
    auto manager = open_manager(config.url, kPrefixPairs, false);
    RawSessionSide floor_side(*raw);
    DblockSessionSide dblock_side(*manager);
    const PairFigure f = measure_pairs(floor_side, dblock_side, {"bench-session"}, config.warmup, config.pairs);
    rows.push_back(make_row("session_pair", "session_lock(0)+release (GET_LOCK)", f.dblock.pair, f.floor.pair,
                            kTargetSessionPair));
    rows.push_back(make_row("session_acquire", "  acquire only", f.dblock.acquire, f.floor.acquire));
    rows.push_back(make_row("session_release", "  release only", f.dblock.release, f.floor.release));
  }

  // --- hand-off figures (fork: nothing may be open here) ----------------------------------------
  std::vector<HandoffFigure> handoffs;
  std::optional<ContentionResult> lease_handoff;
  if (config.wants("handoff")) {
    open_manager(config.url, kPrefixHandoff, false).reset();  // creates the tables once
    const std::string contention_title =
        format("%d processes x %d acquire(\"%s\", wait=%llds) -> %lld us busy critical section -> release", kProcesses,
               config.iterations, kHotKey, static_cast<long long>(kContentionWait.count()),
               static_cast<long long>(kCriticalSection.count()));
    progress(format("hand-off, %s...", kind_name(Kind::kDblockSession)).c_str());
    ContentionResult d = run_contention(Kind::kDblockSession, config.url, kProcesses, config.iterations);
    progress(format("hand-off, %s...", kind_name(Kind::kRawSession)).c_str());
    ContentionResult f = run_contention(Kind::kRawSession, config.url, kProcesses, config.iterations);
    rows.push_back(handoff_row("handoff_session", "hand-off session, 4 procs (vs GET_LOCK)", d, f, kTargetHandoffSession));
    handoffs.push_back(HandoffFigure{"handoff_session",
                                     "hand-off (session locks): " + contention_title +
                                         "\n  with session_lock(wait=10s) / blocking GET_LOCK(name, 10)",
                                     "dblock session_lock", "raw GET_LOCK", std::move(d), std::move(f),
                                     kTargetHandoffSession});
    progress(format("hand-off, %s...", kind_name(Kind::kDblockLease)).c_str());
    lease_handoff = run_contention(Kind::kDblockLease, config.url, kProcesses, config.iterations);
  }

  // --- the same hand-offs at 2, 4, 8 processes (fork: nothing may be open here) -------------------
  std::vector<ScaleFigure> scales;
  if (config.wants("scale")) {
    {
      auto raw = raw_connect(config.url);
      run_sql(*raw, std::string("DROP TABLE IF EXISTS ") + kRawTable);
      create_raw_table(*raw);
      open_manager(config.url, kPrefixHandoff, false).reset();
    }
    auto run = [&config](std::vector<Kind> kinds) {
      return [&config, kinds](std::size_t side, int processes) {
        progress(format("scale, %d processes, %s...", processes, kind_name(kinds[side])).c_str());
        return run_contention(kinds[side], config.url, processes, config.iterations);
      };
    };
    ScaleTargets lease;
    lease.max_handoff_vs_raw = kTargetScaleLeaseHandoff;
    scales.push_back(measure_scale("scale_lease", "lease at 2, 4, 8 processes: acquire(wait) -> 20 us -> release", lease,
                                   {{"dblock", "dblock lease"}, {"floor", "raw lease, 1 ms poll"},
                                    {"fair_floor", "raw lease + GET_LOCK line (fair)"},
                                    {"unfair", "dblock lease, fair=false"}},
                                   run({Kind::kDblockLease, Kind::kRawLeasePoll, Kind::kRawLeaseFair,
                                        Kind::kDblockLeaseUnfair})));
    ScaleTargets session;
    session.max_handoff_vs_raw = kTargetScaleSessionHandoff;
    scales.push_back(measure_scale("scale_session", "session lock at 2, 4, 8 processes: session_lock(wait) / blocking"
                                   " GET_LOCK", session, {{"dblock", "dblock session_lock"}, {"floor", "raw GET_LOCK"}},
                                   run({Kind::kDblockSession, Kind::kRawSession})));
  }

  if (!config.keep) {
    auto raw = raw_connect(config.url);
    drop_everything(*raw);
  }

  const bool lease_handoff_pass =
      lease_handoff && lease_handoff->handoff_latency_us.p50 < kTargetHandoffLeaseP50Us &&
      lease_handoff->violations == 0 && lease_handoff->timeouts == 0;
  if (!config.json_only) {
    print_table(rows);
    if (lease_handoff) {
      std::printf("%-44s %10s %10s %6s %11s %10s %6s  %s\n", "hand-off lease, 4 procs (absolute)",
                  cell(lease_handoff->handoff_latency_us.p50).c_str(), "-", "-",
                  cell(lease_handoff->handoff_latency_us.p99).c_str(), "-", "-",
                  format("p50 < %.0f us %s", kTargetHandoffLeaseP50Us, lease_handoff_pass ? "PASS" : "FAIL").c_str());
    }
    std::printf("(hand-off latency = from the start of the release call to the return of the next holder's acquire.)\n\n");
    for (const HandoffFigure& h : handoffs) {
      print_contention_table(h.title.c_str(), h.dblock_name, h.dblock, h.raw_name, h.raw);
      std::printf("\n");
    }
    if (lease_handoff) {
      print_contention_table(("hand-off (leases; raw floors in the scale figures): " +
                              format("%d processes x %d acquire(\"%s\", wait=10s) -> 20 us -> release", kProcesses,
                                     config.iterations, kHotKey))
                                 .c_str(),
                             "dblock lease", *lease_handoff, "", ContentionResult{});
      std::printf("\n");
    }
  }

  if (!config.json_only) {
    for (const ScaleFigure& f : scales) print_scale_table(f);
    if (!scales.empty()) std::printf("\n");
  }
  std::printf("BENCH_JSON %s\n", JsonLine()
                                      .add("figure", "run")
                                      .add("date", date)
                                      .add("dblock_version", dblock::version())
                                      .add("server_version", server_version)
                                      .add("connector_version", connector_version)
                                      .add("innodb_flush_log_at_trx_commit", flush_setting)
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
                                      .add("quick", config.quick)
                                      .str()
                                      .c_str());
  print_rows_json(rows, handoffs, config.iterations, false);
  if (lease_handoff) {
    JsonLine line = handoff_json_head("handoff_lease", config.iterations);
    add_contention_json(line, "dblock", *lease_handoff);
    line.add("target_p50_us_below", kTargetHandoffLeaseP50Us, "%.0f").add("pass", lease_handoff_pass);
    std::printf("BENCH_JSON %s\n", line.str().c_str());
  }
  for (const ScaleFigure& f : scales) print_scale_json(f, config.iterations);
  return 0;
}

}  // namespace
}  // namespace dblock_bench

int main(int argc, char** argv) {
  const dblock_bench::Config config = dblock_bench::parse_args(argc, argv);
  return dblock_bench::run_reporting_errors("mysql_bench", [&] {
    try {
      return dblock_bench::run(config);
    } catch (const ::sql::SQLException& e) {
      throw std::runtime_error(dblock_bench::format("MySQL error %d (%s): %s", e.getErrorCode(), e.getSQLStateCStr(),
                                                    e.what()));
    }
  });
}
