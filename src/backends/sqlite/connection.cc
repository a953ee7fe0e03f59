#include "connection.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <tuple>

#include "dblock/errors.h"
#include "dblock/service/backoff.h"
#include "dblock/service/identifiers.h"
#include "error_map.h"
#include "lock_file/file_clock.h"
#include "lock_file/file_trust.h"
#include "lock_file/owner_digest.h"
#include "sql.h"

namespace dblock::sqlite {

namespace {

using std::chrono::microseconds;

// SQLite's default busy handler sleeps up to 100 ms at a time; our statements hold the write lock
// for microseconds, so short jittered sleeps hand the lock over much faster.
int busy_handler(void* arg, int count) {
  auto* connection = static_cast<Connection*>(arg);
  auto now = SteadyClock::now();
  if (now >= connection->busy_deadline) return 0;
  microseconds step = std::min<microseconds>(microseconds(20LL << std::min(count, 7)), microseconds(2000));
  step = service::jittered(step);
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

// dblock_wall_now(): the system clock (CLOCK_REALTIME) in microseconds since the Unix epoch
// (SQLite's own 'now' has millisecond resolution), as this process reads it: the time people read
// (list, inspect, the force-release record).
void wall_now(sqlite3_context* ctx, int, sqlite3_value**) {
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  sqlite3_result_int64(ctx, std::chrono::duration_cast<std::chrono::microseconds>(now).count());
}

// dblock_fence_floor(): the kernel's CLOCK_REALTIME in microseconds (file_clock.h), so that a
// process whose C library's clock is faked an hour behind issues fences on a fresh file above
// those its neighbours issued on the file it replaced.
void fence_floor(sqlite3_context* ctx, int, sqlite3_value**) { sqlite3_result_int64(ctx, kernel_wall_time_us()); }

// dblock_now(): the lock file's clock (file_clock.h), on which every expiry is. Read at each use:
// the uses in one statement are microseconds apart, which no statement depends on.
void file_now(sqlite3_context* ctx, int, sqlite3_value**) {
  const auto* c = static_cast<const Connection*>(sqlite3_user_data(ctx));
  if (!c->clock_known) {
    return sqlite3_result_error(ctx, "dblock: the lock file's clock is not set up (its schema is not migrated)", -1);
  }
  sqlite3_result_int64(ctx, c->clock_base_us + boot_time_us());
}

// dblock_owner_digest(secret): what the tables store for an owner secret (owner_digest.h); the
// migration that replaced stored secrets by their digests uses it. NULL stays NULL.
void owner_digest_of(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) return sqlite3_result_null(ctx);
  const auto* bytes = static_cast<const std::uint8_t*>(sqlite3_value_blob(argv[0]));
  try {
    const OwnerDigest digest = owner_digest(bytes, static_cast<std::size_t>(sqlite3_value_bytes(argv[0])));
    sqlite3_result_blob(ctx, digest.data(), static_cast<int>(digest.size()), SQLITE_TRANSIENT);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  }
}

void register_functions(Connection& c) {
  // Deterministic: usable where SQLite folds or indexes expressions; DIRECTONLY as below.
  int digest_rc = sqlite3_create_function_v2(c.db, "dblock_owner_digest", 1,
                                             SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_DETERMINISTIC, nullptr,
                                             &owner_digest_of, nullptr, nullptr, nullptr);
  if (digest_rc != SQLITE_OK) throw_error(digest_rc, c.db, "registering SQL function");
  for (auto [name, args, fn] : {std::tuple{"dblock_issued_fence", 1, &issued_fence},
                                std::tuple{"dblock_issued_expiry", 1, &issued_expiry},
                                std::tuple{"dblock_fence_floor", 0, &fence_floor},
                                std::tuple{"dblock_wall_now", 0, &wall_now},
                                std::tuple{"dblock_now", 0, &file_now}}) {
    // DIRECTONLY: callable from our statements only, never from triggers or views.
    int rc = sqlite3_create_function_v2(c.db, name, args, SQLITE_UTF8 | SQLITE_DIRECTONLY, &c, fn, nullptr, nullptr,
                                        nullptr);
    if (rc != SQLITE_OK) throw_error(rc, c.db, "registering SQL function");
  }
}

// WAL is a property of the file and persists, so this is a read except on first use. Switching
// a brand-new file needs an exclusive lock, and SQLite does not call the busy handler for it:
// several processes creating the file at once get SQLITE_BUSY, so retry until busy_deadline.
void enable_wal(Connection& c) {
  for (int attempt = 0;; ++attempt) {
    sqlite3_stmt* stmt = nullptr;
    int rc = sqlite3_prepare_v2(c.db, sql::kJournalWal.text, -1, &stmt, nullptr);
    if (rc == SQLITE_OK) {
      rc = sqlite3_step(stmt);
      sqlite3_finalize(stmt);
      if (rc == SQLITE_ROW || rc == SQLITE_DONE) return;
    }
    rc = sqlite3_extended_errcode(c.db);
    if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) throw_error(rc, c.db, sql::kJournalWal.text);
    if (SteadyClock::now() >= c.busy_deadline) throw_error(rc, c.db, sql::kJournalWal.text);
    busy_handler(&c, attempt);
  }
}

// Another application's database (tables, but no dblock schema under any prefix) is refused before
// dblock writes anything to it: no tables, no WAL switch.
void refuse_foreign(Connection& c, const std::string& path) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(c.db, sql::kFileTables.text, -1, &stmt, nullptr);
  if (rc != SQLITE_OK) throw_error(sqlite3_extended_errcode(c.db), c.db, "reading the schema of " + path);
  std::int64_t tables = 0;
  std::int64_t ours = 0;
  try {
    Query q(c, stmt, sql::kFileTables.name, nullptr, nullptr);
    const std::optional<dblock::sql::Row> row = q.fetch();
    if (row) {
      tables = row->get<std::int64_t>("table_count");
      ours = row->get<std::int64_t>("schema_tables");
    }
  } catch (...) {
    sqlite3_finalize(stmt);
    throw;
  }
  sqlite3_finalize(stmt);
  if (tables > 0 && ours == 0) {
    throw SchemaError("sqlite: " + path + " is a database of another application (" + std::to_string(tables) +
                          " tables, no dblock schema); dblock will not add its tables to it or switch it to WAL "
                          "(use a file of its own, or ?adopt=yes to share this one on purpose)",
                      "sqlite");
  }
}

}  // namespace

Connection::~Connection() {
  for (sqlite3_stmt* stmt : prepared) sqlite3_finalize(stmt);  // null is a no-op
  if (db) sqlite3_close_v2(db);
}

std::unique_ptr<Connection> open_connection(const std::string& path, std::chrono::milliseconds busy_timeout,
                                            std::size_t statements, bool adopt_existing) {
  auto c = std::make_unique<Connection>();
  c->prepared.assign(statements, nullptr);
  c->columns.resize(statements);
  int rc = sqlite3_open_v2(path.c_str(), &c->db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_NOFOLLOW, nullptr);
  if (rc != SQLITE_OK) {
    if (c->db != nullptr && sqlite3_extended_errcode(c->db) == SQLITE_CANTOPEN_SYMLINK) refuse_symlink(path);
    const std::string msg = c->db ? sqlite3_errmsg(c->db) : sqlite3_errstr(rc);
    throw ConnectionError("sqlite: cannot open " + path + ": " + msg, "sqlite", std::to_string(rc));
  }
  sqlite3_extended_result_codes(c->db, 1);
  sqlite3_busy_handler(c->db, &busy_handler, c.get());
  register_functions(*c);
  c->busy_deadline = SteadyClock::now() + busy_timeout;
  if (!adopt_existing) refuse_foreign(*c, path);
  enable_wal(*c);
  exec(*c, sql::kSyncNormal);
  exec(*c, sql::kForeignKeys);
  return c;
}

void exec(Connection& c, const dblock::sql::Statement& statement) {
  int rc = sqlite3_exec(c.db, statement.text, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) throw_error(sqlite3_extended_errcode(c.db), c.db, statement.text);
}

bool in_transaction(const Connection& c) { return !sqlite3_get_autocommit(c.db); }

void rollback(Connection& c) noexcept {
  if (in_transaction(c)) sqlite3_exec(c.db, sql::kRollback.text, nullptr, nullptr, nullptr);
}

// ---- Query ----

Query::~Query() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

void Query::check(int rc) {
  if (rc != SQLITE_OK) throw_error(rc, c_.db, std::string("bind failed: ") + name_);
}

void Query::bind(int index, const dblock::sql::ArgValue& value) {
  if (const auto* i = std::get_if<std::int64_t>(&value)) {
    check(sqlite3_bind_int64(stmt_, index, *i));
  } else if (const auto* text = std::get_if<std::string>(&value)) {
    check(sqlite3_bind_text(stmt_, index, text->data(), static_cast<int>(text->size()), SQLITE_TRANSIENT));
  } else if (const auto* secret = std::get_if<OwnerSecret>(&value)) {
    // What the tables store: the secret's digest (owner_digest.h).
    const OwnerDigest digest = owner_digest(secret->bytes.data(), secret->bytes.size());
    check(sqlite3_bind_blob(stmt_, index, digest.data(), static_cast<int>(digest.size()), SQLITE_TRANSIENT));
  } else if (const auto* d = std::get_if<double>(&value)) {
    check(sqlite3_bind_double(stmt_, index, *d));
  } else {
    check(sqlite3_bind_null(stmt_, index));
  }
}

Query& Query::bind(const dblock::sql::Args& args) {
  static const std::vector<std::string> kNone;
  const std::vector<const dblock::sql::ArgValue*> ordered = args.in_order(params_ ? *params_ : kNone, name_);
  for (std::size_t i = 0; i < ordered.size(); ++i) bind(static_cast<int>(i + 1), *ordered[i]);
  return *this;
}

Query& Query::bind_positional(int index, const Value& value) {
  bind(index, dblock::sql::Arg("", value).value);
  return *this;
}

bool Query::step() {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_error(sqlite3_extended_errcode(c_.db), c_.db, std::string("statement failed: ") + name_);
}

void Query::run() {
  while (step()) {
  }
}

dblock::sql::Row Query::row() {
  dblock::sql::Columns& names = columns_ ? *columns_ : own_columns_;
  const int n = sqlite3_column_count(stmt_);
  if (!names) {
    auto made = std::make_shared<std::vector<std::string>>();
    for (int i = 0; i < n; ++i) made->emplace_back(sqlite3_column_name(stmt_, i));
    names = std::move(made);
  }
  std::vector<Value> values;
  values.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) values.push_back(value(i));
  return dblock::sql::Row(names, std::move(values));
}

std::optional<dblock::sql::Row> Query::fetch() {
  if (!step()) return std::nullopt;
  dblock::sql::Row first = row();
  run();
  return first;
}

dblock::sql::Rows Query::rows() {
  dblock::sql::Rows out;
  while (step()) out.push_back(row());
  return out;
}

std::vector<std::vector<Value>> Query::values() {
  std::vector<std::vector<Value>> out;
  while (step()) {
    std::vector<Value> row;
    for (int i = 0; i < sqlite3_column_count(stmt_); ++i) row.push_back(value(i));
    out.push_back(std::move(row));
  }
  return out;
}

Value Query::value(int column) const {
  switch (sqlite3_column_type(stmt_, column)) {
    case SQLITE_INTEGER: return sqlite3_column_int64(stmt_, column);
    case SQLITE_FLOAT: return sqlite3_column_double(stmt_, column);
    case SQLITE_NULL: return std::monostate{};
    default: {
      const unsigned char* p = sqlite3_column_text(stmt_, column);
      return std::string(reinterpret_cast<const char*>(p), static_cast<std::size_t>(sqlite3_column_bytes(stmt_, column)));
    }
  }
}

namespace {

// Registry entry `i` prepared on `c` (once per connection).
sqlite3_stmt* prepared(Connection& c, const dblock::sql::Registry& registry, std::size_t i) {
  if (c.prepared[i] == nullptr) {
    const std::string& text = registry.text(i);
    int rc = sqlite3_prepare_v3(c.db, text.c_str(), static_cast<int>(text.size()), SQLITE_PREPARE_PERSISTENT,
                                &c.prepared[i], nullptr);
    if (rc != SQLITE_OK) throw_error(rc, c.db, std::string("prepare failed: ") + registry.at(i).name);
  }
  return c.prepared[i];
}

}  // namespace

Query query(Connection& c, const dblock::sql::Registry& registry, const dblock::sql::Statement& statement) {
  const std::size_t i = registry.index(statement);
  sqlite3_stmt* stmt = prepared(c, registry, i);
  return Query(c, stmt, statement.name, &registry.params(i), &c.columns.at(i));
}

Query query(Connection& c, const dblock::sql::Registry& registry, const dblock::sql::Statement& statement,
            const dblock::sql::Args& args) {
  const std::size_t i = registry.index(statement);
  sqlite3_stmt* stmt = prepared(c, registry, i);
  return Query(c, stmt, statement.name, &registry.params(i), &c.columns.at(i), &args);
}

// ---- WriteTxn ----

WriteTxn::WriteTxn(Connection& c) : c_(c) { exec(c_, sql::kBeginImmediate); }

WriteTxn::~WriteTxn() {
  if (!done_) rollback(c_);
}

void WriteTxn::commit() {
  exec(c_, sql::kCommit);
  done_ = true;
}

}  // namespace dblock::sqlite
