// The MySQL/MariaDB backend (MySQL Connector/C++ 1.1, the JDBC-style API).
//
// Connections: a pool for lease statements (each used by one thread at a time), one "beacon"
// connection owned by the beacon thread, and one dedicated connection per held session lock.
// Connector/C++'s automatic reconnect (OPT_RECONNECT) is off everywhere: a reconnect would drop the
// session's GET_LOCKs and open transaction without a word, and for leases dblock decides itself
// what may be retried. Only the cppconn/ headers are used; mysql_driver.h and mysql_connection.h
// would pull Boost into the build for nothing.
//
// Round trips (all statements are server-side prepared once per connection; see sql.h for why each
// operation fits in one):
//   exclusive acquire 1 (+1 to join the queue on a contended first attempt of a waiting acquire;
//   every queued re-attempt is 1), shared acquire 1, renew 1, release 1 (+1 on the beacon
//   connection when the lease was held long enough to have a beacon), peek 1, list 1,
//   force-release 1, reap 3 (one per table), wait_for_turn 1, queue_status 1;
//   session lock 1 / verify 1 / release 1; transaction lock 2 + the body; guard 2 + the body;
//   row lock 2 (+1 to prepare a new statement shape) + the body; compare-and-set 1.
//
// Retry policy. Deadlocks (1213) and lock wait timeouts (1205) roll the statement back, so every
// statement is retried on them, up to kMaxAttempts with jittered, doubling pauses. On a broken
// connection (which is then discarded, never reused): statements that are idempotent for the same
// owner secret (acquire re-takes a row this secret holds live, renew, reads, reaping) are retried
// once on a fresh connection; a release whose reply was lost is retried once and reported in doubt
// when the retry finds nothing to delete; a compare-and-set whose reply was lost is reported in
// doubt (a retry could not tell "applied" from "lost the race").
//
// Beacons: see mysql.h. The backend itself knows which leases it holds (try_acquire succeeded,
// release/refused renewal ended them), so the beacon bookkeeping lives here, not in the core.
#include <cppconn/connection.h>
#include <cppconn/datatype.h>
#include <cppconn/driver.h>
#include <cppconn/exception.h>
#include <cppconn/prepared_statement.h>
#include <cppconn/resultset.h>
#include <cppconn/resultset_metadata.h>
#include <cppconn/statement.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <condition_variable>
#include <cstdio>
#include <list>
#include <map>
#include <mutex>
#include <thread>

#include "dblock/capabilities.h"
#include "dblock/errors.h"
#include "dblock/mysql/mysql.h"
#include "dblock/url.h"
#include "connection_pool.h"
#include "error_map.h"
#include "internal.h"
#include "migration.h"
#include "sql.h"
#include "statements.h"

namespace dblock::mysql {

extern const std::vector<detail::Migration> kMigrations;

namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr const char* kBackendName = "mysql";
constexpr int kMaxAttempts = 4;                 // per statement, for deadlocks and lock wait timeouts
constexpr std::size_t kAppStatementCache = 32;  // prepared application statements per connection
constexpr double kForeverSeconds = 365.0 * 24 * 3600;  // GET_LOCK's "forever" (negative is refused)
constexpr int kFenceSequenceMigration = 2;        // migrations/mysql/0002_fence_sequence.sql

// ---- SHA-1 (FIPS 180-4), for GET_LOCK keys only (not for security) ----------------------------

std::string sha1_hex(std::string_view data) {
  auto rotl = [](std::uint32_t x, int n) { return (x << n) | (x >> (32 - n)); };
  std::uint32_t h[5] = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  std::string msg(data);
  const std::uint64_t bits = static_cast<std::uint64_t>(data.size()) * 8;
  msg += static_cast<char>(0x80);
  while (msg.size() % 64 != 56) msg += '\0';
  for (int i = 7; i >= 0; --i) msg += static_cast<char>((bits >> (i * 8)) & 0xff);
  for (std::size_t chunk = 0; chunk < msg.size(); chunk += 64) {
    std::uint32_t w[80];
    for (int i = 0; i < 16; ++i) {
      const auto* p = reinterpret_cast<const unsigned char*>(msg.data() + chunk + 4 * i);
      w[i] = (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | p[3];
    }
    for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
    for (int i = 0; i < 80; ++i) {
      std::uint32_t f, k;
      if (i < 20) {
        f = (b & c) | (~b & d);
        k = 0x5A827999u;
      } else if (i < 40) {
        f = b ^ c ^ d;
        k = 0x6ED9EBA1u;
      } else if (i < 60) {
        f = (b & c) | (b & d) | (c & d);
        k = 0x8F1BBCDCu;
      } else {
        f = b ^ c ^ d;
        k = 0xCA62C1D6u;
      }
      std::uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d;
      d = c;
      c = rotl(b, 30);
      b = a;
      a = t;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
  }
  char out[41];
  for (int i = 0; i < 5; ++i) std::snprintf(out + 8 * i, 9, "%08x", h[i]);
  return std::string(out, 40);
}

std::size_t utf8_chars(std::string_view s) {
  return static_cast<std::size_t>(
      std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

// The longest prefix of `s` of at most `bytes` bytes that does not split a UTF-8 sequence.
std::string utf8_cut(std::string_view s, std::size_t bytes) {
  if (s.size() <= bytes) return std::string(s);
  while (bytes > 0 && (static_cast<unsigned char>(s[bytes]) & 0xC0) == 0x80) --bytes;
  return std::string(s.substr(0, bytes));
}

// GET_LOCK keys of dblock's own locks (beacons, the migration lock). Always hashed, over input
// that contains NUL bytes, which no lock name can: they never coincide with lock_key() of a name.
std::string internal_key(std::string_view database, std::string_view prefix, std::string_view kind,
                         std::string_view name) {
  std::string input(database);
  for (std::string_view part : {std::string_view("dblock"), prefix, kind, name}) {
    input += '\0';
    input += part;
  }
  return utf8_cut(database, 22) + ":" + sha1_hex(input);
}

// `identifier` (REQUIRES: validated by detail::validate_identifier) in backticks, each
// dot-separated part on its own.
std::string quote(std::string_view identifier) {
  std::string out = "`";
  for (char c : identifier) out += c == '.' ? std::string("`.`") : std::string(1, c);
  return out + "`";
}

void check_name(std::string_view name) {
  // The core never passes an empty name, a direct caller might (the table refuses it too).
  if (name.empty()) throw UsageError("mysql: lock name is empty", kBackendName);
}

// ---- statements ------------------------------------------------------------------------------

enum Stmt : std::size_t {
  kAcquireExclusive,
  kAcquireExclusiveQueued,
  kAcquireShared,
  kQueue,
  kRemaining,
  kLeaveQueue,
  kRenewExclusive,
  kRenewReader,
  kReleaseExclusiveUnqueued,
  kReleaseExclusive,
  kReleaseReader,
  kForceRelease,
  kListAll,
  kListOne,
  kReapLeases,
  kReapReaders,
  kReapWaiters,
  kGuardBegin,
  kTakeBeacon,
  kDropBeacon,
  kWaitTurn,
  kSessionLock,
  kSessionVerify,
  kSessionUnlock,
  kXactBegin,
  kXactCommit,
  kXactRollback,
  kMigrationLock,
  kMigrationUnlock,
  kTableExists,
  kSchemaVersion,
  kRecordMigration,
  kQueueStatus,
  kStmtCount,
};

constexpr std::array<const char*, kStmtCount> kTemplates = {
    sql::kAcquireExclusive, sql::kAcquireExclusiveQueued, sql::kAcquireShared, sql::kQueue,
    sql::kRemaining,        sql::kLeaveQueue,             sql::kRenewExclusive, sql::kRenewReader,
    sql::kReleaseExclusiveUnqueued,
    sql::kReleaseExclusive, sql::kReleaseReader,          sql::kForceRelease,   sql::kListAll,
    sql::kListOne,          sql::kReapLeases,             sql::kReapReaders,    sql::kReapWaiters,
    sql::kGuardBegin,       sql::kTakeBeacon,             sql::kDropBeacon,     sql::kWaitTurn,
    sql::kSessionLock,      sql::kSessionVerify,          sql::kSessionUnlock,  sql::kXactBegin,
    sql::kXactCommit,       sql::kXactRollback,           sql::kMigrationLock,  sql::kMigrationUnlock,
    sql::kTableExists,      sql::kSchemaVersion,          sql::kRecordMigration,  sql::kQueueStatus,
};

// A template with its tables filled in and its ":name" parameters turned into `?`.
struct Rendered {
  std::string text;
  std::vector<std::string> params;  // parameter name per `?`, in order
};

struct Arg {
  const char* name;
  Value value;
};
using Args = std::vector<Arg>;
using Row = std::vector<Value>;
using Rows = std::vector<Row>;

std::int64_t as_int(const Value& v) {
  if (auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (auto* d = std::get_if<double>(&v)) return static_cast<std::int64_t>(*d);
  if (auto* s = std::get_if<std::string>(&v)) return std::stoll(*s);
  return 0;
}
bool is_null(const Value& v) { return std::holds_alternative<std::monostate>(v); }
std::string as_string(const Value& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return {};
}

milliseconds ceil_ms(std::int64_t us) { return milliseconds((std::max<std::int64_t>(us, 0) + 999) / 1000); }

void bind_value(::sql::PreparedStatement& ps, unsigned index, const Value& value) {
  if (auto* i = std::get_if<std::int64_t>(&value)) {
    ps.setInt64(index, *i);
  } else if (auto* d = std::get_if<double>(&value)) {
    ps.setDouble(index, *d);
  } else if (auto* s = std::get_if<std::string>(&value)) {
    ps.setString(index, ::sql::SQLString(*s));
  } else {
    ps.setNull(index, ::sql::DataType::SQLNULL);
  }
}

Rows fetch_all(::sql::ResultSet& rs) {
  ::sql::ResultSetMetaData* meta = rs.getMetaData();  // owned by the result set
  const unsigned n = meta->getColumnCount();
  std::vector<int> types(n + 1);
  std::vector<bool> is_signed(n + 1);
  for (unsigned i = 1; i <= n; ++i) {
    types[i] = meta->getColumnType(i);
    is_signed[i] = meta->isSigned(i);
  }
  Rows rows;
  while (rs.next()) {
    Row row;
    row.reserve(n);
    for (unsigned i = 1; i <= n; ++i) {
      if (rs.isNull(i)) {
        row.emplace_back(std::monostate{});
        continue;
      }
      switch (types[i]) {
        case ::sql::DataType::BIT:
        case ::sql::DataType::TINYINT:
        case ::sql::DataType::SMALLINT:
        case ::sql::DataType::MEDIUMINT:
        case ::sql::DataType::INTEGER:
        case ::sql::DataType::BIGINT:
        case ::sql::DataType::YEAR:
          if (is_signed[i]) {
            row.emplace_back(static_cast<std::int64_t>(rs.getInt64(i)));
          } else {
            std::uint64_t u = rs.getUInt64(i);
            if (u <= static_cast<std::uint64_t>(INT64_MAX)) {
              row.emplace_back(static_cast<std::int64_t>(u));
            } else {
              row.emplace_back(std::to_string(u));
            }
          }
          break;
        case ::sql::DataType::REAL:
        case ::sql::DataType::DOUBLE:
          row.emplace_back(static_cast<double>(rs.getDouble(i)));
          break;
        default:  // DECIMAL (exact, as text like PostgreSQL's numeric), strings, binary, dates
          row.emplace_back(std::string(rs.getString(i).asStdString()));
          break;
      }
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

// Splits a migration script into statements at ';' outside quotes and comments.
std::vector<std::string> split_statements(std::string_view script) {
  std::vector<std::string> out;
  std::string current;
  bool has_code = false;
  for (std::size_t i = 0; i < script.size(); ++i) {
    char c = script[i];
    if (c == '-' && i + 1 < script.size() && script[i + 1] == '-') {
      while (i < script.size() && script[i] != '\n') ++i;
      current += '\n';
      continue;
    }
    if (c == '\'' || c == '"' || c == '`') {
      std::size_t end = i + 1;
      while (end < script.size() && script[end] != c) end += script[end] == '\\' ? 2 : 1;
      current.append(script.substr(i, end - i + 1));
      i = end;
      has_code = true;
      continue;
    }
    if (c == ';') {
      if (has_code) out.push_back(current);
      current.clear();
      has_code = false;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) has_code = true;
    current += c;
  }
  if (has_code) out.push_back(current);
  return out;
}

struct Connection {
  // Declared first, destroyed last: statements are closed before their connection.
  std::unique_ptr<::sql::Connection> conn;
  std::int64_t id = 0;  // CONNECTION_ID() at connect
  std::unique_ptr<::sql::Statement> plain;
  std::array<std::unique_ptr<::sql::PreparedStatement>, kStmtCount> prepared;
  // Application statements (Transaction, row locks, compare-and-set), most recently used first.
  std::list<std::pair<std::string, std::unique_ptr<::sql::PreparedStatement>>> app;

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    app.clear();
    for (auto& p : prepared) p.reset();
    plain.reset();
    conn.reset();
  }
};

bool is_broken(Connection& c, const std::exception& e) noexcept {
  if (is_connection_failure(e) || dynamic_cast<const ConnectionError*>(&e) ||
      dynamic_cast<const InDoubtError*>(&e)) {
    return true;
  }
  try {
    return !c.conn || c.conn->isClosed();
  } catch (...) {
    return true;
  }
}

class MysqlBackend;

class MyTransaction final : public Transaction {
 public:
  MyTransaction(MysqlBackend& backend, Connection& c) : backend_(backend), c_(c) {}
  std::int64_t execute(std::string_view sql, const std::vector<Value>& params) override;
  std::vector<std::vector<Value>> query(std::string_view sql, const std::vector<Value>& params) override;

 private:
  MysqlBackend& backend_;
  Connection& c_;
};

class MySessionLock final : public SessionLockHandle {
 public:
  MySessionLock(MysqlBackend& backend, std::unique_ptr<Connection> c, std::string key)
      : backend_(backend), c_(std::move(c)), key_(std::move(key)) {}
  ~MySessionLock() override {
    // Not released explicitly: closing the connection makes the server drop every lock of the
    // session, which is the most reliable release there is.
    c_.reset();
  }
  bool verify() noexcept override;
  bool release() override;
  std::int64_t key() const override { return 0; }

 private:
  MysqlBackend& backend_;
  std::unique_ptr<Connection> c_;  // null once released
  const std::string key_;
};

::sql::Driver* driver() {
  // get_driver_instance() fills a static map without a lock: call it once, thread-safely.
  static ::sql::Driver* instance = get_driver_instance();
  return instance;
}

// AcquireResult::tag bit: the lease was taken as a queued waiter; waiters are probably queued
// again, so its release marks the row free first instead of trying the uncontended delete.
constexpr std::uint32_t kViaQueue = 1;

class MysqlBackend final : public LeaseService,
                           public FairQueue,
                           public NativeWait,
                           public HolderProbe,
                           public Maintenance,
                           public SessionLocks,
                           public SqlFeatures,
                           public RowLocks {
 public:
  explicit MysqlBackend(Options options) : options_(std::move(options)) {
    detail::validate_table_prefix(options_.table_prefix);
    if (options_.database.empty()) throw UsageError("mysql: no database given (mysql://host/database)", kBackendName);
    if (options_.port < 1 || options_.port > 65535) throw UsageError("mysql: port out of range", kBackendName);
    if (options_.beacon_delay.count() < 0) throw UsageError("mysql: beacon_delay must not be negative", kBackendName);
    const std::string& p = options_.table_prefix;
    leases_ = quote(p + "leases");
    readers_ = quote(p + "readers");
    waiters_ = quote(p + "waiters");
    version_ = quote(p + "schema_version");
    fence_ = quote(p + "fence");
    for (std::size_t i = 0; i < kStmtCount; ++i) rendered_[i] = render(kTemplates[i]);
    connect_options_["hostName"] = ::sql::SQLString(options_.socket.empty() ? options_.host : "localhost");
    connect_options_["port"] = options_.port;
    if (!options_.socket.empty()) connect_options_["socket"] = ::sql::SQLString(options_.socket);
    connect_options_["userName"] = ::sql::SQLString(options_.user);
    connect_options_["password"] = ::sql::SQLString(options_.password);
    connect_options_["schema"] = ::sql::SQLString(options_.database);
    connect_options_["OPT_RECONNECT"] = false;
    connect_options_["OPT_CHARSET_NAME"] = ::sql::SQLString("utf8mb4");
    connect_options_["CLIENT_MULTI_STATEMENTS"] = false;
    connect_options_["CLIENT_FOUND_ROWS"] = false;  // affected rows = changed rows (the default, made explicit)
    connect_options_["OPT_CONNECT_TIMEOUT"] = options_.connect_timeout_s;
    if (options_.read_timeout_s > 0) connect_options_["OPT_READ_TIMEOUT"] = options_.read_timeout_s;
    if (options_.write_timeout_s > 0) connect_options_["OPT_WRITE_TIMEOUT"] = options_.write_timeout_s;
    if (!options_.ssl_ca.empty()) connect_options_["sslCA"] = ::sql::SQLString(options_.ssl_ca);
    if (!options_.ssl_cert.empty()) connect_options_["sslCert"] = ::sql::SQLString(options_.ssl_cert);
    if (!options_.ssl_key.empty()) connect_options_["sslKey"] = ::sql::SQLString(options_.ssl_key);
    if (options_.ssl_verify) connect_options_["sslVerify"] = true;
    give_back(connect());  // fail at open(), not at first use
  }

  ~MysqlBackend() override {
    {
      std::lock_guard<std::mutex> lock(beacon_mutex_);
      beacon_stop_ = true;
    }
    beacon_cv_.notify_all();
    if (beacon_thread_.joinable()) beacon_thread_.join();
  }

  std::string_view name() const override { return kBackendName; }

  ServiceTraits traits() const override {
    ServiceTraits traits;
    traits.shared_leases = true;
    return traits;
  }
  FairQueue* fair_queue() noexcept override { return this; }
  // No push: waiters block server-side on the holder's beacon instead (none with beacon=0).
  NativeWait* native_wait() noexcept override { return options_.beacon ? this : nullptr; }
  HolderProbe* holder_probe() noexcept override { return this; }
  Maintenance* maintenance() noexcept override { return this; }
  SessionLocks* session_locks() noexcept override { return this; }
  SqlFeatures* sql_features() noexcept override { return this; }
  RowLocks* row_locks() noexcept override { return this; }

  // ---- schema ----

  void migrate(bool create) override {
    auto c = borrow();
    const std::string key = internal_key(options_.database, options_.table_prefix, "migrate", "");
    bool locked = false;
    try {
      auto got = query(*c, kMigrationLock, {{"key", key}});
      if (got.empty() || as_int(got[0][0]) != 1) {
        throw TimeoutError("mysql: another process held the migration lock for 60 s", kBackendName, "", true);
      }
      locked = true;
      int current = current_version(*c);
      const int latest = detail::latest_migration(kMigrations);
      detail::check_schema_version(kBackendName, "dblock tables are", current, latest, create);
      // DDL commits implicitly; every migration statement is idempotent (IF NOT EXISTS, INSERT
      // IGNORE, SETVAL), so one interrupted half-way is completed by the next run.
      const auto apply = [&](const detail::Migration& m) {
        for (const std::string& statement : split_statements(detail::render_migration(m.sql, options_.table_prefix))) {
          c->plain->execute(::sql::SQLString(statement));
        }
      };
      for (const auto& m : kMigrations) {
        if (m.number <= current) continue;
        apply(m);
        update(*c, kRecordMigration, {{"version", std::int64_t{m.number}}, {"name", std::string(m.name)}});
      }
      // The fence sequence dropped by hand: re-applying its migration recreates it above every
      // fence still in the tables and at least at the server time in microseconds.
      if (create && latest >= kFenceSequenceMigration &&
          as_int(query(*c, kTableExists, {{"table", options_.table_prefix + "fence"}}).at(0).at(0)) == 0) {
        for (const auto& m : kMigrations) {
          if (m.number == kFenceSequenceMigration) apply(m);
        }
      }
      query(*c, kMigrationUnlock, {{"key", key}});
    } catch (const std::exception& e) {
      // Closing the connection also frees the migration lock.
      if (locked || is_broken(*c, e)) c.get_deleter().discard = true;
      rethrow_translated("migration");
    }
  }

  int schema_version() override {
    return with_retry([&](Connection& c) { return current_version(c); });
  }

  // ---- leases ----

  AcquireResult try_acquire(const AcquireRequest& request) override {
    return attempt(request, false, Place{}).result;
  }

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override {
    return attempt(request, true, place);
  }

  // One attempt, joining or refreshing the queue when `queue` and refused.
  Attempt attempt(const AcquireRequest& request, bool queue, const Place& place) {
    check_name(request.name);
    const std::int64_t ticket = queue ? place.ticket : 0;
    const SteadyClock::time_point sent_at = SteadyClock::now();
    const std::string name(request.name);
    const std::string secret = request.secret->hex();
    const std::string holder = utf8_cut(request.holder, 255);
    const std::int64_t ttl_us = request.ttl.count() * 1000;
    const std::int64_t queue_us = queue ? place.hold_for.count() * 1000 : 0;
    Attempt out = with_retry([&](Connection& c) {
      Attempt a;
      AcquireResult& r = a.result;
      if (request.mode == LockMode::kShared || ticket != 0) {
        Args args = {{"name", name}, {"secret", secret}, {"holder", holder}, {"ttl_us", ttl_us}, {"queue_us", queue_us}};
        if (ticket != 0) {
          args.push_back({"ticket", ticket});
        } else {
          args.push_back({"ticket", std::monostate{}});
        }
        Rows rows = query(c, request.mode == LockMode::kShared ? kAcquireShared : kAcquireExclusiveQueued, args);
        const Row& row = rows.at(0);
        r.acquired = as_int(row.at(0)) == 1;
        if (r.acquired) {
          r.fence = as_int(row[1]);
          r.expires_at_us = as_int(row[2]);
          if (ticket != 0) r.tag = kViaQueue;
        } else {
          r.holder_remaining = ceil_ms(as_int(row[3]));
          a.ticket = as_int(row[4]);
          a.position = static_cast<int>(as_int(row[5]));
        }
        return a;
      }
      Rows rows = query(c, kAcquireExclusive, {{"name", name}, {"secret", secret}, {"holder", holder}, {"ttl_us", ttl_us}});
      const Row& row = rows.at(0);
      r.acquired = !is_null(row.at(0)) && as_int(row[0]) == 1;
      if (r.acquired) {
        r.fence = as_int(row[1]);
        r.expires_at_us = as_int(row[2]);
      } else {
        r.holder_remaining = ceil_ms(as_int(row[3]));
      }
      if (!r.acquired && queue) {
        Rows q = query(c, kQueue, {{"name", name}, {"secret", secret}, {"queue_us", queue_us}});
        a.ticket = as_int(q.at(0).at(0));
        a.position = static_cast<int>(as_int(q[0][1]));
        if (!is_null(q[0][2])) r.holder_remaining = ceil_ms(as_int(q[0][2]));
      }
      return a;
    });
    if (out.result.acquired) beacon_hold(name, secret, sent_at + request.ttl);
    return out;
  }

  milliseconds holder_remaining(std::string_view name) override {
    check_name(name);
    return with_retry([&](Connection& c) {
      Rows rows = query(c, kRemaining, {{"name", std::string(name)}});
      if (rows.empty()) return milliseconds(0);
      return std::chrono::duration_cast<milliseconds>(microseconds(as_int(rows[0][0])));
    });
  }

  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override {
    check_name(name);
    return with_retry([&](Connection& c) {
      Rows rows = query(c, kQueueStatus, {{"name", std::string(name)}, {"secret", secret.hex()}, {"ticket", ticket}});
      Position status;
      status.waiters_ahead = static_cast<int>(as_int(rows.at(0).at(0)));
      status.holder_remaining = is_null(rows[0][1]) ? milliseconds(0) : ceil_ms(as_int(rows[0][1]));
      return status;
    });
  }

  Outcome wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                        milliseconds max_wait) override {
    if (!options_.beacon || max_wait <= milliseconds::zero()) return Outcome::kUnavailable;
    try {
      Rows rows = with_connection([&](Connection& c) {
        // The holder is assumed to use this backend's beacon delay; the margin covers its beacon
        // thread's wake-up and round trip on a busy machine. Against a holder without beacons this
        // costs a waiter at most that long before it falls back to polling.
        const std::int64_t grace_us = options_.beacon_delay.count() + 20'000;
        return query(c, kWaitTurn,
                     {{"key", beacon_key(name)}, {"name", std::string(name)}, {"secret", secret.hex()},
                      {"ticket", ticket}, {"grace_us", grace_us},
                      {"timeout_us", static_cast<std::int64_t>(max_wait.count()) * 1000}});
      });
      // -1: held with no beacon to block on; NULL: GET_LOCK failed. The core polls then.
      if (rows.empty() || is_null(rows[0][0]) || as_int(rows[0][0]) < 0) return Outcome::kUnavailable;
      return Outcome::kWoken;
    } catch (const Error&) {
      // Waiting is an optimisation: the next attempt reports real trouble.
      return Outcome::kUnavailable;
    }
  }

  RenewResult renew(const LeaseKey& lease, milliseconds ttl) override {
    const std::string_view name = lease.name;
    const LockMode mode = lease.mode;
    check_name(name);
    const SteadyClock::time_point sent_at = SteadyClock::now();
    const std::string hex = lease.secret->hex();
    RenewResult result = with_retry([&](Connection& c) {
      RenewResult r;
      Rows rows = query(c, mode == LockMode::kExclusive ? kRenewExclusive : kRenewReader,
                        {{"name", std::string(name)}, {"secret", hex}, {"ttl_us", std::int64_t{ttl.count() * 1000}}});
      r.renewed = as_int(rows.at(0).at(0)) == 1;
      if (r.renewed) r.expires_at_us = as_int(rows[0][1]);
      return r;
    });
    if (result.renewed) {
      beacon_refresh(std::string(name), hex, sent_at + ttl);
    } else {
      beacon_drop(std::string(name), hex, false);
    }
    return result;
  }

  bool release(const LeaseKey& lease) override {
    const std::string_view name = lease.name;
    const LockMode mode = lease.mode;
    check_name(name);
    const std::string key(name);
    const std::string hex = lease.secret->hex();
    // Whatever the outcome, this backend stops advertising the lease to waiters.
    struct DropBeacon {
      MysqlBackend* backend;
      const std::string& name;
      const std::string& secret;
      ~DropBeacon() { backend->beacon_drop(name, secret, true); }
    } drop{this, key, hex};
    // Which release statement goes first is a guess (both orders are correct; a wrong guess costs
    // a round trip): a lease acquired after queueing probably has waiters again, so its row is
    // marked free at once instead of first trying the uncontended delete.
    const bool contended = (lease.tag & kViaQueue) != 0;
    // nullopt: nothing of this owner's found (already released, or never held).
    auto attempt = [&](Connection& c) -> std::optional<bool> {
      if (mode == LockMode::kExclusive) {
        if (!contended && update(c, kReleaseExclusiveUnqueued, {{"name", key}, {"secret", hex}}) == 1) return true;
        if (update(c, kReleaseExclusive, {{"name", key}, {"secret", hex}}) == 1) return true;
        return std::nullopt;  // includes this owner's expired row: "not held" either way
      }
      Rows rows = query(c, kReleaseReader, {{"name", key}, {"secret", hex}});
      if (rows.empty() || is_null(rows[0][0])) return std::nullopt;
      return as_int(rows[0][0]) == 1;
    };
    std::optional<bool> outcome;
    bool retried = false;
    try {
      outcome = with_retry_on_conflict([&] { return with_connection(attempt); });
    } catch (const ConnectionError&) {
      // The reply was lost: the delete may have committed. Ask again on a fresh connection.
      retried = true;
      outcome = with_retry_on_conflict([&] { return with_connection(attempt); });
    }
    if (!outcome) {
      if (retried) {
        throw InDoubtError("mysql: release of '" + key +
                               "' is in doubt: the connection broke and the retry found nothing to release",
                           kBackendName);
      }
      return false;
    }
    return *outcome;
  }

  // The row expires on the server's clock within the drift margin of the engine's safe-until;
  // the beacon that advertises the lease to waiters goes now.
  void lease_lost(const LeaseKey& lease) noexcept override {
    try {
      beacon_drop(std::string(lease.name), lease.secret->hex(), false);
    } catch (...) {
    }
  }

  void leave(std::string_view name, const OwnerSecret& secret) override {
    check_name(name);
    with_retry([&](Connection& c) { return update(c, kLeaveQueue, {{"name", std::string(name)}, {"secret", secret.hex()}}); });
  }

  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override {
    return with_retry([&](Connection& c) {
      Rows rows = name ? query(c, kListOne, {{"name", std::string(*name)}}) : query(c, kListAll, {});
      std::vector<LeaseInfo> out;
      for (const Row& row : rows) {
        LeaseInfo info;
        info.name = as_string(row.at(0));
        info.mode = as_string(row[1]) == "shared" ? LockMode::kShared : LockMode::kExclusive;
        info.holder = info.mode == LockMode::kShared ? as_string(row[9]) : as_string(row[2]);
        info.fence = as_int(row[3]);
        info.acquired_at_us = as_int(row[4]);
        info.expires_at_us = as_int(row[5]);
        info.expires_in_us = as_int(row[6]);
        info.renewals = as_int(row[7]);
        info.holders = info.mode == LockMode::kShared ? static_cast<int>(as_int(row[8])) : 1;
        out.push_back(std::move(info));
      }
      return out;
    });
  }

  bool force_release(std::string_view name) override {
    check_name(name);
    return with_retry([&](Connection& c) {
      return as_int(query(c, kForceRelease, {{"name", std::string(name)}}).at(0).at(0)) > 0;
    });
  }

  std::size_t reap(std::size_t batch) override {
    const auto limit = static_cast<std::int64_t>(std::min<std::size_t>(batch, 1'000'000));
    return with_retry([&](Connection& c) {
      std::size_t n = 0;
      for (Stmt s : {kReapLeases, kReapReaders, kReapWaiters}) {
        n += static_cast<std::size_t>(update(c, s, {{"batch", limit}}));
      }
      return n;
    });
  }

  // ---- session, transaction and row locks ----

  std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                          milliseconds wait) override {
    check_name(name);
    if (mode == LockMode::kShared) {
      throw UnsupportedError(
          "mysql: shared session locks do not exist in MySQL/MariaDB (GET_LOCK is exclusive); use a shared lease",
          kBackendName);
    }
    std::unique_ptr<Connection> c = session_connection();
    std::string key = lock_key(options_.database, name);
    Rows rows;
    try {
      rows = query(*c, kSessionLock, {{"key", key}, {"timeout_s", seconds(wait)}});
    } catch (...) {
      c.reset();  // state unknown: the lock may be held by this session; closing frees it
      rethrow_translated("session lock");
    }
    const Row& row = rows.at(0);
    if (as_int(row.at(1)) != c->id) {
      throw ConnectionError("mysql: the connection changed underneath a session lock (a silent reconnect?)",
                            kBackendName);
    }
    if (is_null(row[0])) throw Error("mysql: GET_LOCK failed for '" + std::string(name) + "'", kBackendName);
    if (as_int(row[0]) != 1) {
      give_back_session(std::move(c));
      return nullptr;
    }
    return std::make_unique<MySessionLock>(*this, std::move(c), std::move(key));
  }

  bool run_in_transaction_lock(std::string_view name, milliseconds wait,
                               const std::function<void(Transaction&)>& body) override {
    check_name(name);
    const std::string key = lock_key(options_.database, name);
    auto c = borrow();
    try {
      Rows rows = query(*c, kXactBegin, {{"key", key}, {"timeout_s", seconds(wait)}});
      const Value& got = rows.at(0).at(0);
      if (is_null(got)) {
        c.get_deleter().discard = true;
        throw Error("mysql: GET_LOCK failed for '" + std::string(name) + "'", kBackendName);
      }
      if (as_int(got) != 1) return false;
    } catch (const std::exception& e) {
      if (is_broken(*c, e)) c.get_deleter().discard = true;
      rethrow_translated("transaction lock");
    }
    finish_transaction(c, body, kXactCommit, kXactRollback, {{"key", key}});
    return true;
  }

  void run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                   const std::function<void(Transaction&)>& body) override {
    check_name(name);
    auto c = borrow();
    bool held = false;
    try {
      Rows rows = query(*c, kGuardBegin, {{"name", std::string(name)}, {"secret", secret.hex()}, {"fence", fence}});
      held = as_int(rows.at(0).at(0)) == 1;
      if (!held) c->plain->execute("ROLLBACK");
    } catch (const std::exception& e) {
      // The transaction may be open: never hand this connection to anyone else.
      c.get_deleter().discard = true;
      rethrow_translated("guard");
    }
    if (!held) {
      throw LeaseLostError("mysql: lease '" + std::string(name) + "' with fence " + std::to_string(fence) +
                               " is no longer held; guarded write rolled back",
                           kBackendName);
    }
    finish_transaction(c, body, std::nullopt, std::nullopt, {});
  }

  bool run_with_locked_rows(
      const RowLockRequest& request,
      const std::function<void(Transaction&, const std::vector<std::vector<Value>>&)>& body) override {
    std::string statement;
    if (request.wait == RowLockWait::kWait && request.wait_timeout > milliseconds::zero()) {
      // innodb_lock_wait_timeout counts whole seconds (MariaDB's FOR UPDATE WAIT n too), so the
      // millisecond bound comes from max_statement_time, which also interrupts a lock wait; the
      // rounded-up lock wait timeout is the backstop. Literals: SET STATEMENT takes no parameters.
      const auto ms = request.wait_timeout.count();
      char prefix[128];
      std::snprintf(prefix, sizeof(prefix), "SET STATEMENT max_statement_time = %lld.%03lld, innodb_lock_wait_timeout = %lld FOR ",
                    static_cast<long long>(ms / 1000), static_cast<long long>(ms % 1000),
                    static_cast<long long>((ms + 999) / 1000));
      statement = prefix;
    }
    statement += detail::row_lock_query(request, &quote, "LOCK IN SHARE MODE", kBackendName);

    auto c = borrow();
    Rows rows;
    try {
      c->plain->execute("START TRANSACTION");
      MyTransaction t(*this, *c);
      rows = t.query(statement, request.keys);
    } catch (const std::exception& e) {
      if (is_broken(*c, e)) {
        c.get_deleter().discard = true;
      } else {
        try {
          c->plain->execute("ROLLBACK");
        } catch (...) {
          c.get_deleter().discard = true;
        }
      }
      // NOWAIT met a locked row, or the wait ran out: 1205 (lock wait), 1969 (max_statement_time).
      if (auto* timeout = dynamic_cast<const TimeoutError*>(&e); timeout && !c.get_deleter().discard) return false;
      rethrow_translated("row lock");
    }
    finish_transaction(c, [&](Transaction& t) { body(t, rows); }, std::nullopt, std::nullopt, {});
    return true;
  }

  bool compare_and_set(const VersionedUpdate& update) override {
    const detail::Statement statement = detail::versioned_update(update, &quote, kBackendName);
    try {
      // Not retried on a fresh connection: if the reply was lost, a retry could not tell "applied"
      // from "lost the race", and reporting false would make the caller apply its change twice.
      return with_retry_on_conflict([&] {
        return with_connection([&](Connection& c) {
          MyTransaction t(*this, c);
          return t.execute(statement.sql, statement.params) == 1;
        });
      });
    } catch (const ConnectionError& e) {
      throw InDoubtError(std::string("mysql: compare-and-set outcome unknown: ") + e.what(), kBackendName);
    }
  }

  std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column, const Value& id,
                                           std::string_view version_column) override {
    const std::string statement = detail::read_version_query(table, id_column, version_column, &quote);
    return with_retry([&](Connection& c) -> std::optional<std::int64_t> {
      MyTransaction t(*this, c);
      auto rows = t.query(statement, {id});
      if (rows.empty()) return std::nullopt;
      if (auto* v = std::get_if<std::int64_t>(&rows[0][0])) return *v;
      throw UsageError("read_version: version column is not an integer", kBackendName);
    });
  }

  // ---- used by MyTransaction and MySessionLock ----

  // The application statement `text`, prepared on `c` (cached, most recently used first).
  ::sql::PreparedStatement& app_statement(Connection& c, std::string_view text) {
    for (auto it = c.app.begin(); it != c.app.end(); ++it) {
      if (it->first == text) {
        if (it != c.app.begin()) c.app.splice(c.app.begin(), c.app, it);
        return *c.app.front().second;
      }
    }
    std::unique_ptr<::sql::PreparedStatement> ps(c.conn->prepareStatement(::sql::SQLString(std::string(text))));
    c.app.emplace_front(std::string(text), std::move(ps));
    if (c.app.size() > kAppStatementCache) c.app.pop_back();
    return *c.app.front().second;
  }

  Rows query(Connection& c, Stmt s, const Args& args) {
    ::sql::PreparedStatement& ps = bound(c, s, args);
    std::unique_ptr<::sql::ResultSet> rs(ps.executeQuery());
    Rows rows = fetch_all(*rs);
    rs.reset();
    drain(ps);
    return rows;
  }

  std::int64_t update(Connection& c, Stmt s, const Args& args) {
    ::sql::PreparedStatement& ps = bound(c, s, args);
    std::int64_t n = ps.executeUpdate();
    drain(ps);
    return n;
  }

  void give_back_session(std::unique_ptr<Connection> c) {
    session_idle_.put(std::move(c));
  }

 private:
  struct Returner {
    MysqlBackend* backend;
    bool discard = false;
    void operator()(Connection* c) {
      std::unique_ptr<Connection> owned(c);
      if (!discard && owned->conn) backend->give_back(std::move(owned));
    }
  };
  using Borrowed = std::unique_ptr<Connection, Returner>;

  // One beacon per lock name this backend holds a lease on. Protected by beacon_mutex_.
  struct Beacon {
    std::map<std::string, SteadyClock::time_point> leases;  // owner secret -> conservative local expiry
    SteadyClock::time_point take_at{};
    bool held = false;  // on the beacon connection
    bool busy = false;  // a statement for it is in flight (claimed by the thread or a release)
    int failures = 0;   // consecutive GET_LOCK(key, 0) refusals
  };

  static double seconds(milliseconds wait) {
    if (wait <= milliseconds::zero()) return 0.0;
    const double s = static_cast<double>(wait.count()) / 1000.0;
    return s >= kForeverSeconds ? kForeverSeconds : s;
  }

  Rendered render(const char* tmpl) const {
    Rendered out;
    char quote_char = 0;
    for (const char* p = tmpl; *p; ++p) {
      char ch = *p;
      if (quote_char) {
        if (ch == quote_char) quote_char = 0;
        out.text += ch;
        continue;
      }
      if (ch == '\'' || ch == '"') {
        quote_char = ch;
        out.text += ch;
        continue;
      }
      if (ch == '{' && p[1] && p[2] == '}') {
        const std::string* table = nullptr;
        switch (p[1]) {
          case 'L': table = &leases_; break;
          case 'R': table = &readers_; break;
          case 'W': table = &waiters_; break;
          case 'V': table = &version_; break;
          case 'F': table = &fence_; break;
          default: break;
        }
        if (table) {
          out.text += *table;
          p += 2;
          continue;
        }
      }
      if (ch == ':' && (std::isalpha(static_cast<unsigned char>(p[1])) || p[1] == '_')) {
        std::string param;
        while (std::isalnum(static_cast<unsigned char>(p[1])) || p[1] == '_') param += *++p;
        out.params.push_back(std::move(param));
        out.text += '?';
        continue;
      }
      out.text += ch;
    }
    return out;
  }

  ::sql::PreparedStatement& bound(Connection& c, Stmt s, const Args& args) {
    auto& slot = c.prepared[s];
    if (!slot) slot.reset(c.conn->prepareStatement(::sql::SQLString(rendered_[s].text)));
    const auto& params = rendered_[s].params;
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto it = std::find_if(args.begin(), args.end(), [&](const Arg& a) { return params[i] == a.name; });
      if (it == args.end()) throw std::logic_error("mysql: statement parameter :" + params[i] + " not bound");
      bind_value(*slot, static_cast<unsigned>(i + 1), it->value);
    }
    return *slot;
  }

  // A compound statement ends with an OK packet after its result set; consume it so that the
  // connection is ready for the next command.
  static void drain(::sql::PreparedStatement& ps) {
    for (int i = 0; i < 8 && ps.getMoreResults(); ++i) {
    }
  }

  int current_version(Connection& c) {
    Rows exists = query(c, kTableExists, {{"table", options_.table_prefix + "schema_version"}});
    if (as_int(exists.at(0).at(0)) == 0) return 0;
    return static_cast<int>(as_int(query(c, kSchemaVersion, {}).at(0).at(0)));
  }

  std::string beacon_key(std::string_view name) const {
    return internal_key(options_.database, options_.table_prefix, "beacon", name);
  }

  std::unique_ptr<Connection> connect() {
    auto c = std::make_unique<Connection>();
    try {
      ::sql::ConnectOptionsMap options = connect_options_;
      c->conn.reset(driver()->connect(options));
      c->plain.reset(c->conn->createStatement());
      std::string version;
      bool read_only = false;
      {
        std::unique_ptr<::sql::ResultSet> rs(c->plain->executeQuery(sql::kHello));
        Rows rows = fetch_all(*rs);
        const Row& row = rows.at(0);
        version = as_string(row.at(0));
        c->id = as_int(row[1]);
        read_only = as_int(row[3]) != 0;
      }
      int major = 0, minor = 0;
      std::sscanf(version.c_str(), "%d.%d", &major, &minor);
      if (version.find("MariaDB") == std::string::npos || major < 10 || (major == 10 && minor < 6)) {
        throw UnsupportedError("mysql: the server is " + version +
                                   "; this backend needs MariaDB >= 10.6 (it relies on INSERT/DELETE ... RETURNING, "
                                   "prepared compound statements and SKIP LOCKED)",
                               kBackendName);
      }
      if (read_only) {
        throw ConnectionError("mysql: the server is read-only (a replica?); dblock acquires only on the primary",
                              kBackendName);
      }
      c->plain->execute(sql::kSessionSetup);
    } catch (...) {
      rethrow_translated("connect");
    }
    return c;
  }

  Borrowed borrow() {
    std::unique_ptr<Connection> c = idle_.take();
    if (!c) c = connect();
    return Borrowed(c.release(), Returner{this});
  }

  void give_back(std::unique_ptr<Connection> c) { idle_.put(std::move(c)); }

  std::unique_ptr<Connection> session_connection() {
    if (std::unique_ptr<Connection> c = session_idle_.take()) return c;
    return connect();
  }

  // Runs `fn` on a pooled connection, translating errors; a broken connection is discarded.
  template <class F>
  auto with_connection(F&& fn) -> decltype(fn(std::declval<Connection&>())) {
    auto c = borrow();
    try {
      return fn(*c);
    } catch (const std::exception& e) {
      if (is_broken(*c, e)) c.get_deleter().discard = true;
      rethrow_translated("statement failed");
    }
  }

  // Repeats `fn` on deadlocks and lock wait timeouts (retryable errors: the statement was rolled
  // back), with jittered, doubling pauses.
  template <class F>
  auto with_retry_on_conflict(F&& fn) -> decltype(fn()) {
    microseconds pause(1'000);
    for (int attempt = 1;; ++attempt) {
      try {
        return fn();
      } catch (const ConnectionError&) {
        throw;
      } catch (const Error& e) {
        if (!e.retryable() || attempt >= kMaxAttempts) throw;
      }
      std::this_thread::sleep_for(detail::jittered(pause));
      pause *= 4;
    }
  }

  // with_connection, repeated on conflicts and retried once on a fresh connection when the first
  // one was broken. REQUIRES: `fn` is idempotent (see the file comment).
  template <class F>
  auto with_retry(F&& fn) -> decltype(fn(std::declval<Connection&>())) {
    try {
      return with_retry_on_conflict([&] { return with_connection(fn); });
    } catch (const ConnectionError&) {
      return with_retry_on_conflict([&] { return with_connection(fn); });
    }
  }

  // Runs `body` inside the transaction open on `c`, then commits (rolls back if body throws).
  // `commit`/`rollback`: a prepared statement ending the transaction (with `args`), or nullopt for
  // plain COMMIT/ROLLBACK. A COMMIT whose reply was lost is reported in doubt.
  template <class Body>
  void finish_transaction(Borrowed& c, Body&& body, std::optional<Stmt> commit, std::optional<Stmt> rollback,
                          const Args& args) {
    bool committing = false;
    try {
      MyTransaction t(*this, *c);
      body(t);
      committing = true;
      if (commit) {
        update(*c, *commit, args);
      } else {
        c->plain->execute("COMMIT");
      }
    } catch (const std::exception& e) {
      const bool broken = is_broken(*c, e);
      if (broken) {
        c.get_deleter().discard = true;  // the server rolls back (and frees GET_LOCKs) when it notices
      } else {
        try {
          if (rollback) {
            update(*c, *rollback, args);
          } else {
            c->plain->execute("ROLLBACK");
          }
        } catch (...) {
          c.get_deleter().discard = true;
        }
      }
      if (committing && broken) {
        throw InDoubtError(std::string("mysql: the connection broke during COMMIT; outcome unknown: ") + e.what(),
                           kBackendName);
      }
      if (dynamic_cast<const ::sql::SQLException*>(&e)) rethrow_translated("transaction");
      throw;
    } catch (...) {
      c.get_deleter().discard = true;  // a transaction may be open: never reuse the connection
      throw;
    }
  }

  // ---- beacons ----
  //
  // State (beacons_) is under beacon_mutex_; the beacon connection under beacon_conn_mutex_, never
  // acquired while holding beacon_mutex_. Whoever runs a statement for a beacon first claims it
  // (Beacon::busy) under beacon_mutex_, so a beacon is never taken and dropped at the same time.

  void beacon_hold(const std::string& name, const std::string& secret, SteadyClock::time_point valid_until) {
    if (!options_.beacon) return;
    std::lock_guard<std::mutex> lock(beacon_mutex_);
    if (beacon_stop_) return;
    Beacon& b = beacons_[name];
    if (b.leases.empty() && !b.held) {
      b.take_at = SteadyClock::now() + options_.beacon_delay;
      b.failures = 0;
    }
    b.leases[secret] = valid_until;
    if (!beacon_thread_.joinable()) beacon_thread_ = std::thread([this] { beacon_loop(); });
    // Wake the thread only if it would sleep past this beacon's time: a wake per acquire would cost
    // two context switches on every short acquire/release pair.
    if (b.take_at < beacon_wake_at_) beacon_cv_.notify_all();
  }

  void beacon_refresh(const std::string& name, const std::string& secret, SteadyClock::time_point valid_until) {
    if (!options_.beacon) return;
    std::lock_guard<std::mutex> lock(beacon_mutex_);
    auto it = beacons_.find(name);
    if (it == beacons_.end()) return;
    auto lease = it->second.leases.find(secret);
    if (lease != it->second.leases.end()) lease->second = std::max(lease->second, valid_until);
  }

  // The lease (name, secret) ended. With `now` (a release), the caller lets go of the beacon itself
  // if it can do so without waiting: one round trip on the beacon connection saves a thread wake-up
  // on the hand-off path. Otherwise the beacon thread does it.
  void beacon_drop(const std::string& name, const std::string& secret, bool now) noexcept {
    if (!options_.beacon) return;
    {
      std::lock_guard<std::mutex> lock(beacon_mutex_);
      auto it = beacons_.find(name);
      if (it == beacons_.end()) return;
      Beacon& b = it->second;
      b.leases.erase(secret);
      if (!b.leases.empty()) return;
      if (!b.held) {
        if (!b.busy) beacons_.erase(it);  // a take in flight is undone by the thread
        return;
      }
      if (!now || b.busy) {
        beacon_cv_.notify_all();  // let go soon: a waiter is likely blocked on it
        return;
      }
      b.busy = true;
    }
    bool dropped = false, broken = false;
    {
      std::unique_lock<std::mutex> conn(beacon_conn_mutex_, std::try_to_lock);
      if (conn.owns_lock() && beacon_conn_) {
        try {
          query(*beacon_conn_, kDropBeacon, {{"key", beacon_key(name)}});
          dropped = true;
        } catch (...) {
          beacon_conn_.reset();  // the server frees whatever it held; the thread reconnects
          broken = true;
        }
      }
    }
    std::lock_guard<std::mutex> lock(beacon_mutex_);
    if (broken) {
      for (auto& [other, b] : beacons_) {
        if (!b.busy) b.held = false;
      }
    }
    auto it = beacons_.find(name);
    if (it != beacons_.end()) {
      it->second.busy = false;
      if (dropped || broken) it->second.held = false;
    }
    beacon_cv_.notify_all();  // the thread takes it from here (drop if not done, re-take if re-held)
  }

  // The beacon thread: takes a beacon once its lease has been held for beacon_delay, drops it when
  // the last lease on the name ends (or its conservative local expiry passes without a renewal,
  // e.g. after the core gave the lease up at safe-until). Drops go first: they are what a waiter
  // is blocked on. Failures only cost waiters their fast wake-up: they fall back to polling.
  void beacon_loop() {
    SteadyClock::time_point reconnect_at{};
    int connect_failures = 0;
    {
      // Connect now rather than when the first beacon is due: a connection takes several round
      // trips, and the first waiter gives the beacon only a short grace period to appear.
      std::lock_guard<std::mutex> conn(beacon_conn_mutex_);
      try {
        beacon_conn_ = connect();
      } catch (...) {
        // Retried when a beacon is due.
      }
    }
    std::unique_lock<std::mutex> lock(beacon_mutex_);
    while (!beacon_stop_) {
      const auto now = SteadyClock::now();
      std::vector<std::string> to_drop, to_take;
      auto wake = SteadyClock::time_point::max();
      for (auto it = beacons_.begin(); it != beacons_.end();) {
        Beacon& b = it->second;
        for (auto l = b.leases.begin(); l != b.leases.end();) l = l->second <= now ? b.leases.erase(l) : std::next(l);
        if (b.busy) {
          ++it;
          continue;
        }
        if (b.leases.empty()) {
          if (!b.held) {
            it = beacons_.erase(it);
            continue;
          }
          to_drop.push_back(it->first);
          b.busy = true;
        } else {
          for (const auto& [secret, until] : b.leases) wake = std::min(wake, until);
          if (!b.held) {
            const SteadyClock::time_point due = std::max(b.take_at, reconnect_at);
            if (due <= now) {
              to_take.push_back(it->first);
              b.busy = true;
            } else {
              wake = std::min(wake, due);
            }
          }
        }
        ++it;
      }
      if (to_drop.empty() && to_take.empty()) {
        beacon_wake_at_ = wake;
        if (wake == SteadyClock::time_point::max()) {
          beacon_cv_.wait(lock);
        } else {
          beacon_cv_.wait_until(lock, wake);
        }
        beacon_wake_at_ = SteadyClock::time_point::min();  // awake: holders need not notify
        continue;
      }
      lock.unlock();
      std::vector<std::string> dropped;
      std::vector<std::pair<std::string, bool>> taken;
      bool broken = false;
      {
        std::lock_guard<std::mutex> conn(beacon_conn_mutex_);
        try {
          if (!beacon_conn_) {
            beacon_conn_ = connect();
            connect_failures = 0;
          }
          for (const auto& name : to_drop) {
            query(*beacon_conn_, kDropBeacon, {{"key", beacon_key(name)}});
            dropped.push_back(name);
          }
          for (const auto& name : to_take) {
            Rows rows = query(*beacon_conn_, kTakeBeacon, {{"key", beacon_key(name)}});
            taken.emplace_back(name, !rows.empty() && !is_null(rows[0][0]) && as_int(rows[0][0]) == 1);
          }
        } catch (...) {
          // Whatever the beacon connection held, the server frees with the session.
          broken = true;
          beacon_conn_.reset();
          reconnect_at = SteadyClock::now() + milliseconds(std::min(2000, 10 << std::min(connect_failures++, 8)));
        }
      }
      lock.lock();
      for (const auto& name : to_drop) {
        auto it = beacons_.find(name);
        if (it != beacons_.end()) it->second.busy = false;
      }
      for (const auto& name : to_take) {
        auto it = beacons_.find(name);
        if (it != beacons_.end()) it->second.busy = false;
      }
      for (const auto& name : dropped) {
        auto it = beacons_.find(name);
        if (it != beacons_.end()) it->second.held = false;
      }
      for (const auto& [name, got] : taken) {
        auto it = beacons_.find(name);
        if (it == beacons_.end()) continue;
        Beacon& b = it->second;
        if (got) {
          b.held = true;
          b.failures = 0;
        } else {
          // Someone else has it: another reader of a shared lease, a waiter giving it back, or a
          // stale holder whose lease expired. Try again later, less and less often.
          b.take_at = SteadyClock::now() + milliseconds(std::min(200, 2 << std::min(b.failures++, 7)));
        }
      }
      if (broken) {
        for (auto& [name, b] : beacons_) {
          if (!b.busy) b.held = false;
        }
      }
    }
    lock.unlock();
    std::lock_guard<std::mutex> conn(beacon_conn_mutex_);
    beacon_conn_.reset();  // closing the connection frees every beacon at once
  }

  // Constant after construction.
  const Options options_;
  std::string leases_, readers_, waiters_, version_, fence_;
  std::array<Rendered, kStmtCount> rendered_;
  ::sql::ConnectOptionsMap connect_options_;

  detail::IdlePool<Connection> idle_;          // lease statements
  detail::IdlePool<Connection> session_idle_;  // session-lock connections

  std::mutex beacon_mutex_;
  std::condition_variable beacon_cv_;
  std::map<std::string, Beacon> beacons_;                                    // GUARDED_BY(beacon_mutex_)
  SteadyClock::time_point beacon_wake_at_ = SteadyClock::time_point::max();  // GUARDED_BY(beacon_mutex_)
  bool beacon_stop_ = false;                                                 // GUARDED_BY(beacon_mutex_)
  std::thread beacon_thread_;  // started by the first beacon_hold(), under beacon_mutex_

  std::mutex beacon_conn_mutex_;
  std::unique_ptr<Connection> beacon_conn_;  // GUARDED_BY(beacon_conn_mutex_); null until needed
};

std::int64_t MyTransaction::execute(std::string_view sql, const std::vector<Value>& params) {
  try {
    ::sql::PreparedStatement& ps = backend_.app_statement(c_, sql);
    for (std::size_t i = 0; i < params.size(); ++i) bind_value(ps, static_cast<unsigned>(i + 1), params[i]);
    return ps.executeUpdate();
  } catch (...) {
    rethrow_translated("statement failed");
  }
}

std::vector<std::vector<Value>> MyTransaction::query(std::string_view sql, const std::vector<Value>& params) {
  try {
    ::sql::PreparedStatement& ps = backend_.app_statement(c_, sql);
    for (std::size_t i = 0; i < params.size(); ++i) bind_value(ps, static_cast<unsigned>(i + 1), params[i]);
    std::unique_ptr<::sql::ResultSet> rs(ps.executeQuery());
    return fetch_all(*rs);
  } catch (...) {
    rethrow_translated("statement failed");
  }
}

bool MySessionLock::verify() noexcept {
  if (!c_) return false;
  try {
    Rows rows = backend_.query(*c_, kSessionVerify, {{"key", key_}});
    return !rows.empty() && !is_null(rows[0][0]) && as_int(rows[0][0]) == 1 && as_int(rows[0][1]) == c_->id;
  } catch (...) {
    return false;
  }
}

bool MySessionLock::release() {
  if (!c_) return false;
  try {
    Rows rows = backend_.query(*c_, kSessionUnlock, {{"key", key_}});
    // 1: released; 0: held by another session; NULL: nobody held it. Both of the latter mean this
    // session had lost it.
    bool released = !is_null(rows.at(0).at(0)) && as_int(rows[0][0]) == 1;
    bool same_session = as_int(rows[0][1]) == c_->id;
    if (released && same_session) {
      backend_.give_back_session(std::move(c_));
    } else {
      c_.reset();  // something is off with this session: never reuse it
    }
    return released && same_session;
  } catch (const std::exception& e) {
    const bool broken = is_connection_failure(e);
    c_.reset();
    if (broken) throw InDoubtError(std::string("mysql: session lock release in doubt: ") + e.what(), kBackendName);
    rethrow_translated("session unlock");
  }
}

bool parse_bool(const std::string& key, const std::string& value) {
  if (value == "1" || value == "true" || value == "on") return true;
  if (value == "0" || value == "false" || value == "off") return false;
  throw UsageError("mysql URL: " + key + " must be 0 or 1", kBackendName);
}

int parse_int(const std::string& key, const std::string& value, int min, int max) {
  int out = 0;
  bool ok = !value.empty() && value.size() <= 9 &&
            std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  if (ok) out = std::stoi(value);
  if (!ok || out < min || out > max) {
    throw UsageError("mysql URL: " + key + " must be an integer in [" + std::to_string(min) + ", " +
                         std::to_string(max) + "]",
                     kBackendName);
  }
  return out;
}

}  // namespace

std::string lock_key(std::string_view database, std::string_view name) {
  std::string full = std::string(database) + ":" + std::string(name);
  if (utf8_chars(full) <= 64 && full.size() <= 192) return full;
  return utf8_cut(database, 22) + ":" + sha1_hex(full);
}

std::unique_ptr<LeaseService> make_service(const Options& options) { return std::make_unique<MysqlBackend>(options); }

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  Options options;
  options.table_prefix = table_prefix;
  if (url.hosts.size() > 1) throw UsageError("mysql URL: one host only", kBackendName);
  if (!url.hosts.empty()) {
    options.host = url.hosts[0].host;
    if (url.hosts[0].port) options.port = url.hosts[0].port;
  }
  options.user = url.user;
  options.password = url.password;
  options.database = url.path;
  if (options.database.empty() || options.database.find('/') != std::string::npos) {
    throw UsageError("mysql URL: expected mysql://[user[:password]@]host[:port]/database", kBackendName);
  }
  for (const auto& [key, value] : url.params) {
    if (key == "socket") {
      options.socket = value;
    } else if (key == "connect_timeout") {
      options.connect_timeout_s = parse_int(key, value, 1, 3600);
    } else if (key == "read_timeout") {
      options.read_timeout_s = parse_int(key, value, 0, 86400);
    } else if (key == "write_timeout") {
      options.write_timeout_s = parse_int(key, value, 0, 86400);
    } else if (key == "ssl_ca") {
      options.ssl_ca = value;
    } else if (key == "ssl_cert") {
      options.ssl_cert = value;
    } else if (key == "ssl_key") {
      options.ssl_key = value;
    } else if (key == "ssl_verify") {
      options.ssl_verify = parse_bool(key, value);
    } else if (key == "beacon") {
      options.beacon = parse_bool(key, value);
    } else if (key == "beacon_delay_us") {
      options.beacon_delay = microseconds(parse_int(key, value, 0, 60'000'000));
    } else {
      throw UsageError("mysql URL: unknown parameter '" + key.substr(0, 64) + "'", kBackendName);
    }
  }
  return make_service(options);
}

}  // namespace dblock::mysql
