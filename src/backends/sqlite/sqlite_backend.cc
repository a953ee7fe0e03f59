// The embedded SQLite backend.
//
// Concurrency: a pool of connections, each used by one thread at a time (SQLite connections are
// not shared between threads here even though the library is serialized-capable: separate
// connections let the renewal thread proceed while another thread waits on the write lock).
// Cross-process exclusion comes from SQLite's own file locking in WAL mode; every state change is
// one statement or one BEGIN IMMEDIATE transaction, so it is atomic against other processes.
#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "dblock/capabilities.h"
#include "dblock/errors.h"
#include "dblock/sqlite/sqlite.h"
#include "dblock/url.h"
#include "error_map.h"
#include "internal.h"
#include "connection_pool.h"
#include "migration.h"
#include "sql.h"
#include "statements.h"

namespace dblock::sqlite {

extern const std::vector<detail::Migration> kMigrations;

namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

struct Connection {
  sqlite3* db = nullptr;
  // The busy handler gives up at this steady_clock instant. Set before every operation.
  SteadyClock::time_point busy_deadline;
  // Prepared statements keyed by their SQL template (the address of a constant in sql.h).
  std::unordered_map<const void*, sqlite3_stmt*> statements;
  // Written by the dblock_issued_* SQL functions during kAcquireExclusive.
  std::int64_t issued_fence = 0;
  std::int64_t issued_expiry = 0;

  Connection() = default;
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;
  ~Connection() {
    for (auto& [key, stmt] : statements) sqlite3_finalize(stmt);
    if (db) sqlite3_close_v2(db);
  }
};

// SQLite's default busy handler sleeps up to 100 ms at a time; our statements hold the write lock
// for microseconds, so short jittered sleeps hand the lock over much faster.
int busy_handler(void* arg, int count) {
  auto* connection = static_cast<Connection*>(arg);
  auto now = SteadyClock::now();
  if (now >= connection->busy_deadline) return 0;
  microseconds step = std::min<microseconds>(microseconds(20LL << std::min(count, 7)), microseconds(2000));
  step = detail::jittered(step);
  std::this_thread::sleep_for(std::min<SteadyClock::duration>(step, connection->busy_deadline - now));
  return 1;
}

// dblock_issued_fence(x) / dblock_issued_expiry(x): return x and remember it on the connection, so
// that an INSERT can report what it wrote without RETURNING (see sql::kAcquireExclusive).
void issued_fence(sqlite3_context* ctx, int, sqlite3_value** argv) {
  static_cast<Connection*>(sqlite3_user_data(ctx))->issued_fence = sqlite3_value_int64(argv[0]);
  sqlite3_result_value(ctx, argv[0]);
}
void issued_expiry(sqlite3_context* ctx, int, sqlite3_value** argv) {
  static_cast<Connection*>(sqlite3_user_data(ctx))->issued_expiry = sqlite3_value_int64(argv[0]);
  sqlite3_result_value(ctx, argv[0]);
}

// A reset-on-destruction cursor over one prepared statement.
class Query {
 public:
  Query(Connection& c, sqlite3_stmt* stmt) : c_(c), stmt_(stmt) {}
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;
  ~Query() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  Query& bind(int index, std::string_view text) {
    check(sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT));
    return *this;
  }
  Query& bind(int index, const OwnerSecret& secret) {
    check(sqlite3_bind_blob(stmt_, index, secret.bytes.data(), static_cast<int>(secret.bytes.size()),
                            SQLITE_TRANSIENT));
    return *this;
  }
  Query& bind(int index, std::int64_t value) {
    check(sqlite3_bind_int64(stmt_, index, value));
    return *this;
  }
  Query& bind_null(int index) {
    check(sqlite3_bind_null(stmt_, index));
    return *this;
  }
  Query& bind(int index, const Value& value) {
    if (std::holds_alternative<std::monostate>(value)) return bind_null(index);
    if (auto* i = std::get_if<std::int64_t>(&value)) return bind(index, *i);
    if (auto* d = std::get_if<double>(&value)) {
      check(sqlite3_bind_double(stmt_, index, *d));
      return *this;
    }
    return bind(index, std::string_view(std::get<std::string>(value)));
  }

  // True when a row is available. Throws on error.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_error(sqlite3_extended_errcode(c_.db), c_.db, "statement failed");
  }
  // Runs to completion, discarding rows.
  void run() {
    while (step()) {
    }
  }
  // For single-row statements (RETURNING, scalar SELECT): steps once, copies the first row's
  // integer columns into `out`, then runs the statement to SQLITE_DONE. Finishing matters: an
  // autocommit write commits (and its error surfaces) there, and the WAL auto-checkpoint hook
  // only runs on SQLITE_DONE. Returns whether there was a row. NULL columns read as 0.
  bool fetch(std::initializer_list<std::int64_t*> out) {
    bool row = step();
    if (row) {
      int i = 0;
      for (std::int64_t* p : out) *p = sqlite3_column_int64(stmt_, i++);
      while (step()) {
      }
    }
    return row;
  }
  bool column_is_null(int column) const { return sqlite3_column_type(stmt_, column) == SQLITE_NULL; }
  std::int64_t integer(int column) const { return sqlite3_column_int64(stmt_, column); }
  std::string text(int column) const {
    const unsigned char* p = sqlite3_column_text(stmt_, column);
    return p ? std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)))
             : std::string();
  }
  Value value(int column) const {
    switch (sqlite3_column_type(stmt_, column)) {
      case SQLITE_INTEGER: return sqlite3_column_int64(stmt_, column);
      case SQLITE_FLOAT: return sqlite3_column_double(stmt_, column);
      case SQLITE_NULL: return std::monostate{};
      default: return text(column);
    }
  }
  int columns() const { return sqlite3_column_count(stmt_); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw_error(rc, c_.db, "bind failed");
  }
  Connection& c_;
  sqlite3_stmt* stmt_;
};

class SqliteTransaction final : public Transaction {
 public:
  explicit SqliteTransaction(Connection& c) : c_(c) {}
  std::int64_t execute(std::string_view sql, const std::vector<Value>& params) override {
    Owned stmt(prepare(sql));
    Query q(c_, stmt.get());
    bind_all(q, params);
    q.run();
    return sqlite3_changes64(c_.db);
  }
  std::vector<std::vector<Value>> query(std::string_view sql, const std::vector<Value>& params) override {
    Owned stmt(prepare(sql));
    Query q(c_, stmt.get());
    bind_all(q, params);
    std::vector<std::vector<Value>> rows;
    while (q.step()) {
      std::vector<Value> row;
      for (int i = 0; i < q.columns(); ++i) row.push_back(q.value(i));
      rows.push_back(std::move(row));
    }
    return rows;
  }

 private:
  struct Finalizer {
    void operator()(sqlite3_stmt* s) const { sqlite3_finalize(s); }
  };
  using Owned = std::unique_ptr<sqlite3_stmt, Finalizer>;
  sqlite3_stmt* prepare(std::string_view sql) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sqlite3_prepare_v2(c_.db, sql.data(), static_cast<int>(sql.size()), &stmt, &tail);
    if (rc != SQLITE_OK) throw_error(rc, c_.db, "prepare failed");
    if (!stmt) throw UsageError("Transaction::execute: empty statement", "sqlite");
    if (tail && std::string_view(tail).find_first_not_of(" \t\r\n;") != std::string_view::npos) {
      sqlite3_finalize(stmt);
      throw UsageError("Transaction::execute takes one statement at a time", "sqlite");
    }
    return stmt;
  }
  static void bind_all(Query& q, const std::vector<Value>& params) {
    for (std::size_t i = 0; i < params.size(); ++i) q.bind(static_cast<int>(i + 1), params[i]);
  }
  Connection& c_;
};

class SqliteBackend final : public LeaseService,
                            public FairQueue,
                            public HolderProbe,
                            public Maintenance,
                            public SqlFeatures {
 public:
  explicit SqliteBackend(Options options) : options_(std::move(options)) {
    detail::validate_table_prefix(options_.table_prefix);
    if (options_.path.empty()) throw UsageError("sqlite: empty database path", "sqlite");
    if (options_.busy_timeout <= milliseconds::zero()) throw UsageError("sqlite: busy_timeout must be positive", "sqlite");
    const std::string& p = options_.table_prefix;
    leases_ = detail::quote_identifier(p + "leases");
    readers_ = detail::quote_identifier(p + "readers");
    fence_ = detail::quote_identifier(p + "fence_counter");
    waiters_ = detail::quote_identifier(p + "waiters");
    version_ = detail::quote_identifier(p + "schema_version");
    if (options_.create_directories) {
      std::filesystem::path parent = std::filesystem::path(options_.path).parent_path();
      std::error_code ec;
      if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    }
    // Open one connection now so that a bad path fails at open(), not at first use.
    auto c = connect();
    give_back(std::move(c));
  }

  std::string_view name() const override { return "sqlite"; }

  ServiceTraits traits() const override {
    ServiceTraits traits;
    traits.shared_leases = true;
    return traits;
  }
  FairQueue* fair_queue() noexcept override { return this; }
  HolderProbe* holder_probe() noexcept override { return this; }
  Maintenance* maintenance() noexcept override { return this; }
  SqlFeatures* sql_features() noexcept override { return this; }

  void migrate(bool create) override {
    auto c = borrow();
    const int latest = detail::latest_migration(kMigrations);
    // Fast path without the write lock: every open checks the schema, and most find it current.
    if (read_schema_version(*c) == latest) return;
    exec(*c, "BEGIN IMMEDIATE");  // the migration lock: SQLite's database write lock
    try {
      int current = read_schema_version(*c);
      detail::check_schema_version("sqlite", "dblock tables in " + options_.path + " are", current, latest, create);
      for (const auto& m : kMigrations) {
        if (m.number <= current) continue;
        std::string script = detail::render_migration(m.sql, options_.table_prefix);
        char* error = nullptr;
        int rc = sqlite3_exec(c->db, script.c_str(), nullptr, nullptr, &error);
        if (rc != SQLITE_OK) {
          std::string what = error ? error : "";
          sqlite3_free(error);
          throw SchemaError("sqlite: migration " + std::string(m.name) + " failed: " + what, "sqlite");
        }
        Query q = query(*c, sql::kRecordMigration);
        q.bind(1, static_cast<std::int64_t>(m.number)).bind(2, std::string_view(m.name)).run();
      }
      exec(*c, "COMMIT");
    } catch (...) {
      rollback(*c);
      throw;
    }
  }

  int schema_version() override {
    auto c = borrow();
    return read_schema_version(*c);
  }

  AcquireResult try_acquire(const AcquireRequest& request) override {
    auto c = borrow();
    AcquireResult result = take(*c, request, 0);
    if (result.acquired) return result;
    std::int64_t remaining_us = 0;
    Query q = query(*c, sql::kRemaining);
    q.bind(1, request.name);
    q.fetch({&remaining_us});
    result.holder_remaining = std::chrono::duration_cast<milliseconds>(microseconds(std::max<std::int64_t>(remaining_us, 0)));
    return result;
  }

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override {
    auto c = borrow();
    Attempt out;
    out.result = take(*c, request, place.ticket);
    if (out.result.acquired) {
      if (place.ticket != 0) query(*c, sql::kLeaveQueue).bind(1, request.name).bind(2, *request.secret).run();
      return out;
    }
    {
      Query q = query(*c, sql::kQueue);
      q.bind(1, request.name).bind(2, *request.secret).bind(3, to_us(place.hold_for));
      if (place.ticket != 0) q.bind(4, place.ticket); else q.bind_null(4);
      if (!q.fetch({&out.ticket})) throw Error("sqlite: queue entry not written", "sqlite");
    }
    Position p = position_on(*c, request.name, *request.secret, out.ticket);
    out.position = p.waiters_ahead;
    out.result.holder_remaining = std::max(p.holder_remaining, milliseconds::zero());
    return out;
  }

  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override {
    auto c = borrow();
    return position_on(*c, name, secret, ticket);
  }

  milliseconds holder_remaining(std::string_view name) override {
    auto c = borrow();
    Query q = query(*c, sql::kRemaining);
    q.bind(1, name);
    std::int64_t remaining_us = 0;
    if (!q.fetch({&remaining_us})) return milliseconds(0);  // no row: free
    return std::chrono::duration_cast<milliseconds>(microseconds(remaining_us));
  }

  RenewResult renew(const LeaseKey& lease, milliseconds ttl) override {
    const std::string_view name = lease.name;
    const OwnerSecret& secret = *lease.secret;
    const LockMode mode = lease.mode;
    auto c = borrow();
    RenewResult result;
    if (mode == LockMode::kExclusive) {
      Query q = query(*c, sql::kRenewExclusive);
      q.bind(1, name).bind(2, secret).bind(3, to_us(ttl));
      result.renewed = q.fetch({&result.expires_at_us});
      return result;
    }
    WriteTxn tx(*this, *c);
    {
      Query q = query(*c, sql::kRenewReader);
      q.bind(1, name).bind(2, secret).bind(3, to_us(ttl));
      result.renewed = q.fetch({&result.expires_at_us});
    }
    if (result.renewed) query(*c, sql::kExtendSharedRow).bind(1, name).bind(2, result.expires_at_us).run();
    tx.commit();
    return result;
  }

  bool release(const LeaseKey& lease) override {
    const std::string_view name = lease.name;
    const OwnerSecret& secret = *lease.secret;
    auto c = borrow();
    std::int64_t was_live = 0;
    if (lease.mode == LockMode::kExclusive) {
      query(*c, sql::kReleaseExclusive).bind(1, name).bind(2, secret).run();
      if (sqlite3_changes(c->db) == 1) return true;
      query(*c, sql::kReleaseExpired).bind(1, name).bind(2, secret).run();
      return false;
    }
    WriteTxn tx(*this, *c);
    bool held = false;
    {
      Query q = query(*c, sql::kReleaseReader);
      q.bind(1, name).bind(2, secret);
      held = q.fetch({&was_live}) && was_live != 0;
    }
    query(*c, sql::kShrinkSharedRow).bind(1, name).run();
    tx.commit();
    return held;
  }

  // The row expires on the service's clock within the drift margin of the engine's safe-until:
  // nothing to drop early.
  void lease_lost(const LeaseKey&) noexcept override {}

  void leave(std::string_view name, const OwnerSecret& secret) override {
    auto c = borrow();
    query(*c, sql::kLeaveQueue).bind(1, name).bind(2, secret).run();
  }

  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override {
    auto c = borrow();
    Query q = query(*c, sql::kList);
    if (name) q.bind(1, *name); else q.bind_null(1);
    std::vector<LeaseInfo> out;
    while (q.step()) {
      LeaseInfo info;
      info.name = q.text(0);
      info.mode = q.text(1) == "shared" ? LockMode::kShared : LockMode::kExclusive;
      info.holder = info.mode == LockMode::kShared ? q.text(9) : q.text(2);
      info.fence = q.integer(3);
      info.acquired_at_us = q.integer(4);
      info.expires_at_us = q.integer(5);
      info.expires_in_us = q.integer(6);
      info.renewals = q.integer(7);
      info.holders = info.mode == LockMode::kShared ? static_cast<int>(q.integer(8)) : 1;
      out.push_back(std::move(info));
    }
    return out;
  }

  bool force_release(std::string_view name) override {
    auto c = borrow();
    WriteTxn tx(*this, *c);
    query(*c, sql::kForceRelease).bind(1, name).run();
    bool evicted = sqlite3_changes(c->db) > 0;
    query(*c, sql::kForceReleaseReaders).bind(1, name).run();
    tx.commit();
    return evicted;
  }

  std::size_t reap(std::size_t batch) override {
    auto c = borrow();
    query(*c, sql::kReapLeases).bind(1, static_cast<std::int64_t>(batch)).run();
    std::size_t n = static_cast<std::size_t>(sqlite3_changes(c->db));
    query(*c, sql::kReapReaders).bind(1, static_cast<std::int64_t>(batch)).run();
    n += static_cast<std::size_t>(sqlite3_changes(c->db));
    query(*c, sql::kReapWaiters).bind(1, static_cast<std::int64_t>(batch)).run();
    return n + static_cast<std::size_t>(sqlite3_changes(c->db));
  }

  bool run_in_transaction_lock(std::string_view, milliseconds wait,
                               const std::function<void(Transaction&)>& body) override {
    auto c = borrow();
    // BEGIN IMMEDIATE takes SQLite's database-wide write lock: it excludes every other writer of
    // the file, which is a (coarser) superset of a named transaction lock.
    c->busy_deadline = SteadyClock::now() + std::max(wait, milliseconds::zero());
    int rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr);
    if ((rc & 0xff) == SQLITE_BUSY) return false;
    if (rc != SQLITE_OK) throw_error(rc, c->db, "BEGIN IMMEDIATE");
    run_body_and_commit(*c, body);
    return true;
  }

  void run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                   const std::function<void(Transaction&)>& body) override {
    auto c = borrow();
    // Holding the write lock from the check to the commit means no other process can take the
    // lease over in between: a takeover is itself a write.
    exec(*c, "BEGIN IMMEDIATE");
    bool held = false;
    try {
      for (const char* check : {sql::kGuardExclusive, sql::kGuardReader}) {
        Query q = query(*c, check);
        q.bind(1, name).bind(2, secret).bind(3, fence);
        if (q.step()) held = true;
      }
    } catch (...) {
      rollback(*c);
      throw;
    }
    if (!held) {
      rollback(*c);
      throw LeaseLostError("sqlite: lease '" + std::string(name) + "' with fence " + std::to_string(fence) +
                               " is no longer held; guarded write rolled back",
                           "sqlite");
    }
    run_body_and_commit(*c, body);
  }

  bool compare_and_set(const VersionedUpdate& update) override {
    detail::Statement statement = detail::versioned_update(update, &detail::quote_identifier, "sqlite");
    auto c = borrow();
    SqliteTransaction tx(*c);
    return tx.execute(statement.sql, statement.params) == 1;
  }

  std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column, const Value& id,
                                           std::string_view version_column) override {
    const std::string query = detail::read_version_query(table, id_column, version_column, &detail::quote_identifier);
    auto c = borrow();
    SqliteTransaction tx(*c);
    auto rows = tx.query(query, {id});
    if (rows.empty()) return std::nullopt;
    if (auto* v = std::get_if<std::int64_t>(&rows[0][0])) return *v;
    throw UsageError("read_version: version column is not an integer", "sqlite");
  }

 private:
  // One acquire statement (or transaction, for shared leases); `ticket` 0: not queued.
  AcquireResult take(Connection& c, const AcquireRequest& request, std::int64_t ticket) {
    const std::int64_t ttl_us = to_us(request.ttl);
    AcquireResult result;
    auto bind_ticket = [&](Query& q) {
      if (ticket != 0) q.bind(5, ticket); else q.bind_null(5);
    };
    if (request.mode == LockMode::kExclusive) {
      Query q = query(c, sql::kAcquireExclusive);
      q.bind(1, request.name).bind(2, *request.secret).bind(3, request.holder).bind(4, ttl_us);
      bind_ticket(q);
      q.run();
      result.acquired = sqlite3_changes(c.db) == 1;
      result.fence = c.issued_fence;
      result.expires_at_us = c.issued_expiry;
      return result;
    }
    WriteTxn tx(*this, c);
    {
      Query row = query(c, sql::kAcquireSharedRow);
      row.bind(1, request.name).bind(2, *request.secret).bind(4, ttl_us);
      bind_ticket(row);
      std::int64_t ignored = 0;
      result.acquired = row.fetch({&result.fence, &ignored});
    }
    if (result.acquired) {
      Query reader = query(c, sql::kInsertReader);
      reader.bind(1, request.name).bind(2, *request.secret).bind(3, request.holder).bind(4, ttl_us).bind(5, result.fence);
      if (!reader.fetch({&result.expires_at_us})) throw Error("sqlite: reader row not written", "sqlite");
    }  // statements are finished before COMMIT
    tx.commit();
    return result;
  }

  Position position_on(Connection& c, std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
    Query q = query(c, sql::kQueuePosition);
    q.bind(1, name).bind(2, secret).bind(3, ticket);
    std::int64_t ahead = 0, remaining_us = 0;
    q.fetch({&ahead, &remaining_us});
    return Position{static_cast<int>(ahead),
                    std::chrono::duration_cast<milliseconds>(microseconds(remaining_us))};
  }

  struct Returner {
    SqliteBackend* backend;
    void operator()(Connection* c) const { backend->give_back(std::unique_ptr<Connection>(c)); }
  };
  using Borrowed = std::unique_ptr<Connection, Returner>;

  // Commits on commit(); rolls back when destroyed without it.
  class WriteTxn {
   public:
    WriteTxn(SqliteBackend& b, Connection& c) : b_(b), c_(c) { b_.exec(c_, "BEGIN IMMEDIATE"); }
    ~WriteTxn() {
      if (!done_) b_.rollback(c_);
    }
    void commit() {
      b_.exec(c_, "COMMIT");
      done_ = true;
    }

   private:
    SqliteBackend& b_;
    Connection& c_;
    bool done_ = false;
  };

  static std::int64_t to_us(milliseconds d) { return d.count() * 1000; }

  std::unique_ptr<Connection> connect() {
    auto c = std::make_unique<Connection>();
    int rc = sqlite3_open_v2(options_.path.c_str(), &c->db,
                             SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      std::string msg = c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
      throw ConnectionError("sqlite: cannot open " + options_.path + ": " + msg, "sqlite", std::to_string(rc));
    }
    sqlite3_extended_result_codes(c->db, 1);
    sqlite3_busy_handler(c->db, &busy_handler, c.get());
    for (auto [fn_name, fn] : {std::pair{"dblock_issued_fence", &issued_fence}, std::pair{"dblock_issued_expiry", &issued_expiry}}) {
      // DIRECTONLY: callable from our statements only, never from triggers or views.
      int frc = sqlite3_create_function_v2(c->db, fn_name, 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, c.get(), fn, nullptr,
                                           nullptr, nullptr);
      if (frc != SQLITE_OK) throw_error(frc, c->db, "registering SQL function");
    }
    c->busy_deadline = SteadyClock::now() + options_.busy_timeout;
    // WAL lets readers (list, inspect) proceed during writes; NORMAL sync is durable against
    // process crashes (the failure a lock must survive); see README for power loss.
    enable_wal(*c);
    exec(*c, "PRAGMA synchronous=NORMAL");
    exec(*c, "PRAGMA foreign_keys=ON");
    return c;
  }

  // WAL is a property of the file and persists, so this is a read except on first use. Switching
  // a brand-new file needs an exclusive lock, and SQLite does not call the busy handler for it:
  // several processes creating the file at once get SQLITE_BUSY, so retry until busy_deadline.
  void enable_wal(Connection& c) {
    for (int attempt = 0;; ++attempt) {
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v2(c.db, "PRAGMA journal_mode=WAL", -1, &stmt, nullptr);
      if (rc == SQLITE_OK) {
        rc = sqlite3_step(stmt);
        sqlite3_finalize(stmt);
        if (rc == SQLITE_ROW || rc == SQLITE_DONE) return;
      }
      rc = sqlite3_extended_errcode(c.db);
      if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) throw_error(rc, c.db, "PRAGMA journal_mode=WAL");
      if (SteadyClock::now() >= c.busy_deadline) throw_error(rc, c.db, "PRAGMA journal_mode=WAL");
      busy_handler(&c, attempt);
    }
  }

  Borrowed borrow() {
    std::unique_ptr<Connection> c = idle_.take();
    if (!c) c = connect();
    c->busy_deadline = SteadyClock::now() + options_.busy_timeout;
    return Borrowed(c.release(), Returner{this});
  }

  void give_back(std::unique_ptr<Connection> c) {
    if (!sqlite3_get_autocommit(c->db)) rollback(*c);  // never pool a connection inside a transaction
    idle_.put(std::move(c));
  }

  std::string render(const char* tmpl) const {
    std::string out;
    for (const char* p = tmpl; *p; ++p) {
      if (*p == '{' && p[1] && p[2] == '}') {
        switch (p[1]) {
          case 'L': out += leases_; p += 2; continue;
          case 'R': out += readers_; p += 2; continue;
          case 'W': out += waiters_; p += 2; continue;
          case 'F': out += fence_; p += 2; continue;
          case 'V': out += version_; p += 2; continue;
          case 'N': out += sql::kNow; p += 2; continue;
          default: break;
        }
      }
      out += *p;
    }
    return out;
  }

  Query query(Connection& c, const char* tmpl) {
    auto it = c.statements.find(tmpl);
    if (it == c.statements.end()) {
      std::string text = render(tmpl);
      sqlite3_stmt* stmt = nullptr;
      int rc = sqlite3_prepare_v3(c.db, text.c_str(), static_cast<int>(text.size()), SQLITE_PREPARE_PERSISTENT,
                                  &stmt, nullptr);
      if (rc != SQLITE_OK) throw_error(rc, c.db, "prepare failed");
      it = c.statements.emplace(tmpl, stmt).first;
    }
    return Query(c, it->second);
  }

  void exec(Connection& c, const char* statement) {
    int rc = sqlite3_exec(c.db, statement, nullptr, nullptr, nullptr);
    if (rc != SQLITE_OK) throw_error(sqlite3_extended_errcode(c.db), c.db, statement);
  }

  void rollback(Connection& c) noexcept {
    if (!sqlite3_get_autocommit(c.db)) sqlite3_exec(c.db, "ROLLBACK", nullptr, nullptr, nullptr);
  }

  int read_schema_version(Connection& c) {
    {
      Query q = query(c, sql::kSchemaVersionTableExists);
      q.bind(1, std::string_view(options_.table_prefix + "schema_version"));
      if (!q.step() || q.integer(0) == 0) return 0;
    }
    // Not cached: the table may not have existed when the connection was opened.
    std::string text = render(sql::kSchemaVersion);
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(c.db, text.c_str(), -1, &stmt, nullptr);
    if (rc != SQLITE_OK) throw_error(rc, c.db, "prepare failed");
    int version = 0;
    if (sqlite3_step(stmt) == SQLITE_ROW) version = sqlite3_column_int(stmt, 0);
    sqlite3_finalize(stmt);
    return version;
  }

  void run_body_and_commit(Connection& c, const std::function<void(Transaction&)>& body) {
    try {
      SqliteTransaction tx(c);
      body(tx);
      exec(c, "COMMIT");
    } catch (...) {
      rollback(c);
      throw;
    }
  }

  // Constant after construction.
  const Options options_;
  std::string leases_, readers_, waiters_, fence_, version_;

  detail::IdlePool<Connection> idle_;
};

}  // namespace

std::unique_ptr<LeaseService> make_service(const Options& options) { return std::make_unique<SqliteBackend>(options); }

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  Options options;
  options.path = url.path;
  options.table_prefix = table_prefix;
  for (const auto& [key, value] : url.params) {
    if (key == "busy_timeout") {
      try {
        std::size_t used = 0;
        long long ms = std::stoll(value, &used);
        if (used != value.size() || ms <= 0) throw std::invalid_argument("");
        options.busy_timeout = milliseconds(ms);
      } catch (const std::exception&) {
        throw UsageError("sqlite URL: busy_timeout must be a positive number of milliseconds", "sqlite");
      }
    } else {
      throw UsageError("sqlite URL: unknown parameter '" + key + "' (known: busy_timeout)", "sqlite");
    }
  }
  return make_service(options);
}

}  // namespace dblock::sqlite
