// The PostgreSQL backend (libpqxx).
//
// Connections: a pool for lease statements (each used by one thread at a time), one listener
// connection for LISTEN/NOTIFY owned by its thread, and one dedicated connection per held session
// lock. libpqxx's silent reconnection ("reactivation") is disabled everywhere: a reconnect must
// never hide a lost session lock, and for leases dblock decides itself what may be retried.
//
// Retry policy on a broken connection: statements that are idempotent for the same owner secret
// (acquire re-takes a row this secret holds, renew, reads) are retried once on a fresh
// connection; a release whose reply was lost is retried once and reported in doubt when the retry
// finds nothing to delete.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pqxx/pqxx>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

#include "dblock/capabilities.h"
#include "dblock/errors.h"
#include "dblock/postgresql/postgresql.h"
#include "dblock/url.h"
#include "error_map.h"
#include "internal.h"
#include "connection_pool.h"
#include "migration.h"
#include "params.h"
#include "sql.h"
#include "statements.h"

// libpqxx 6 marks inhibit_reactivation deprecated (7.x removed reactivation altogether); on 6 it
// is the only way to turn the silent reconnect off.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace dblock::postgresql {

extern const std::vector<detail::Migration> kMigrations;

namespace {

using SteadyClock = std::chrono::steady_clock;
using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr const char* kBackendName = "postgresql";

Value to_value(const pqxx::field& f) {
  if (f.is_null()) return std::monostate{};
  switch (f.type()) {
    case 20: case 21: case 23: return f.as<std::int64_t>();     // int8, int2, int4
    case 700: case 701: return f.as<double>();                  // float4, float8
    case 16: return std::int64_t{f.as<bool>() ? 1 : 0};         // bool
    default: return f.as<std::string>();
  }
}

class PgTransaction final : public Transaction {
 public:
  explicit PgTransaction(pqxx::transaction_base& tx) : tx_(tx) {}
  std::int64_t execute(std::string_view sql, const std::vector<Value>& params) override {
    return run(sql, params).affected_rows();
  }
  std::vector<std::vector<Value>> query(std::string_view sql, const std::vector<Value>& params) override {
    pqxx::result r = run(sql, params);
    std::vector<std::vector<Value>> rows;
    for (const auto& row : r) {
      std::vector<Value> out;
      for (const auto& f : row) out.push_back(to_value(f));
      rows.push_back(std::move(out));
    }
    return rows;
  }

 private:
  pqxx::result run(std::string_view sql, const std::vector<Value>& params) {
    Params p;
    for (const auto& v : params) p.add_value(v);
    auto ptrs = p.pointers();
    try {
      return tx_.exec_params(number_placeholders(sql), pqxx::prepare::make_dynamic_params(ptrs));
    } catch (...) {
      rethrow_translated("statement failed");
    }
  }
  pqxx::transaction_base& tx_;
};

struct Connection {
  std::unique_ptr<pqxx::connection> conn;
  int backend_pid = 0;
};

class PostgresBackend;

class PgSessionLock final : public SessionLockHandle {
 public:
  PgSessionLock(PostgresBackend& backend, std::unique_ptr<Connection> c, std::int64_t key, LockMode mode)
      : backend_(backend), c_(std::move(c)), key_(key), mode_(mode) {}
  ~PgSessionLock() override;
  bool verify() noexcept override;
  bool release() override;
  std::int64_t key() const override { return key_; }

 private:
  PostgresBackend& backend_;
  std::unique_ptr<Connection> c_;  // null once released
  const std::int64_t key_;
  const LockMode mode_;
};

// AcquireResult::tag bit: the lease was taken (or granted) as a queued waiter, whose queue entry
// its release deletes (kReleaseExclusiveInPlace).
constexpr std::uint32_t kViaQueue = 1;

class PostgresBackend final : public LeaseService,
                              public FairQueue,
                              public WakeEvents,
                              public HolderProbe,
                              public Maintenance,
                              public SessionLocks,
                              public SqlFeatures,
                              public RowLocks {
 public:
  explicit PostgresBackend(Options options) : options_(std::move(options)) {
    detail::validate_table_prefix(options_.table_prefix);
    if (options_.conninfo.empty()) throw UsageError("postgresql: empty connection string", kBackendName);
    const std::string& p = options_.table_prefix;
    leases_ = detail::quote_identifier(p + "leases");
    readers_ = detail::quote_identifier(p + "readers");
    waiters_ = detail::quote_identifier(p + "waiters");
    version_ = detail::quote_identifier(p + "schema_version");
    sequence_literal_ = "'" + detail::quote_identifier(p + "fence_seq") + "'";
    channel_ = p + "release";
    wake_slot_ = static_cast<int>(std::random_device{}() % 1024);
    wake_channel_ = channel_ + "_" + std::to_string(wake_slot_);
    for (const auto& [name, tmpl] : statements()) rendered_.emplace(name, render(tmpl));
    give_back(connect());  // fail at open(), not at first use
  }

  ~PostgresBackend() override {
    {
      std::lock_guard<std::mutex> lock(listener_mutex_);
      listener_stop_ = true;
    }
    listener_cv_.notify_all();
    if (listener_.joinable()) listener_.join();
  }

  std::string_view name() const override { return kBackendName; }

  ServiceTraits traits() const override {
    ServiceTraits traits;
    traits.shared_leases = true;
    return traits;
  }
  FairQueue* fair_queue() noexcept override { return this; }
  WakeEvents* wake_events() noexcept override { return this; }
  HolderProbe* holder_probe() noexcept override { return this; }
  Maintenance* maintenance() noexcept override { return this; }
  SessionLocks* session_locks() noexcept override { return this; }
  SqlFeatures* sql_features() noexcept override { return this; }
  RowLocks* row_locks() noexcept override { return this; }

  void migrate(bool create) override {
    auto c = borrow();
    try {
      pqxx::work tx(*c->conn);
      tx.exec_params(sql::kMigrationLock, advisory_key(options_.table_prefix + ":migrate"));
      int current = 0;
      if (tx.exec_params1(sql::kSchemaVersionExists, version_)[0].as<bool>()) {
        current = tx.exec1(render(sql::kSchemaVersion))[0].as<int>();
      }
      detail::check_schema_version(kBackendName, "dblock tables are", current, detail::latest_migration(kMigrations),
                                   create);
      for (const auto& m : kMigrations) {
        if (m.number <= current) continue;
        tx.exec(detail::render_migration(m.sql, options_.table_prefix));
        tx.exec_params(render(sql::kRecordMigration), m.number, std::string(m.name));
      }
      if (options_.unlogged) {
        for (const std::string& table : {leases_, readers_}) {  // waiters are always UNLOGGED
          bool unlogged = tx.exec_params1(sql::kIsUnlogged, table)[0].as<bool>();
          if (unlogged != *options_.unlogged) {
            tx.exec(std::string(sql::kSetUnlogged) + table +
                    (*options_.unlogged ? sql::kSetUnloggedSuffix : sql::kSetLoggedSuffix));
          }
        }
      }
      tx.commit();
    } catch (...) {
      c.get_deleter().discard = true;
      rethrow_translated("migration");
    }
  }

  int schema_version() override {
    return with_retry("schema version", [&](Connection& c) {
      pqxx::nontransaction tx(*c.conn);
      if (!tx.exec_params1(sql::kSchemaVersionExists, version_)[0].as<bool>()) return 0;
      return tx.exec1(render(sql::kSchemaVersion))[0].as<int>();
    });
  }

  AcquireResult try_acquire(const AcquireRequest& request) override {
    return attempt(request, false, Place{}).result;
  }

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override {
    return attempt(request, true, place);
  }

  // One attempt, joining or refreshing the queue when `queue` and refused.
  Attempt attempt(const AcquireRequest& request, bool queue, const Place& place) {
    const std::int64_t ttl_us = request.ttl.count() * 1000;
    const std::int64_t ticket = queue ? place.ticket : 0;
    // A waiter's first attempt right after this backend's own release of the name woke a queued
    // waiter would be refused (the queue marker stands), so it only joins the queue (see
    // released_to_queue_).
    const bool skip_attempt = request.mode == LockMode::kExclusive && queue && ticket == 0 &&
                              take_released_to_queue(request.name);
    return with_retry("acquire", [&](Connection& c) {
      Attempt out;
      AcquireResult& result = out.result;
      Params p;
      p.add(request.name).add(*request.secret).add(request.holder).add(ttl_us);
      const char* stmt = request.mode == LockMode::kShared ? "shared" : (ticket != 0 ? "exclusive_queued" : "exclusive");
      // The unqueued exclusive statement has no ticket parameter (it reads no queue).
      if (ticket != 0) {
        p.add(ticket);
      } else if (request.mode == LockMode::kShared) {
        p.add_null();
      }
      pqxx::result r;
      if (!skip_attempt) r = exec(c, stmt, p);
      if (!r.empty()) {
        result.acquired = true;
        result.fence = r[0][0].as<std::int64_t>();
        result.expires_at_us = r[0][1].as<std::int64_t>();
        if (ticket != 0) result.tag = kViaQueue;
        return out;
      }
      std::int64_t remaining_us = 0;
      if (queue) {
        Params q;
        q.add(request.name).add(*request.secret).add(std::int64_t{place.hold_for.count() * 1000});
        if (ticket != 0) q.add(ticket); else q.add_null();
        // An exclusive waiter may be granted the lease by the release (kReleaseExclusiveInPlace).
        q.add(request.holder);
        if (request.mode == LockMode::kExclusive) q.add(ttl_us); else q.add_null();
        q.add(std::int64_t{wake_slot_});
        pqxx::result qr;
        for (int collisions = 0;; ++collisions) {
          try {
            qr = exec(c, "queue", q);
            break;
          } catch (const pqxx::unique_violation&) {
            // A new ticket equal to another waiter's of the name (joined in the same microsecond):
            // nothing was written; joining again draws a later one.
            if (collisions >= 3 || ticket != 0) throw;
          }
        }
        out.ticket = qr[0][0].as<std::int64_t>();
        out.position = static_cast<int>(qr[0][1].as<std::int64_t>());
        remaining_us = qr[0][2].is_null() ? 0 : qr[0][2].as<std::int64_t>();
      }
      result.holder_remaining = std::chrono::duration_cast<milliseconds>(microseconds(std::max<std::int64_t>(remaining_us, 0)));
      return out;
    });
  }

  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override {
    return with_retry("queue status", [&](Connection& c) {
      Params p;
      p.add(name).add(secret).add(ticket);
      pqxx::result r = exec(c, "queue_status", p);
      Position status;
      status.waiters_ahead = static_cast<int>(r[0][0].as<std::int64_t>());
      std::int64_t remaining_us = r[0][1].is_null() ? 0 : r[0][1].as<std::int64_t>();
      status.holder_remaining = std::chrono::duration_cast<milliseconds>(microseconds(std::max<std::int64_t>(remaining_us, 0)));
      return status;
    });
  }

  milliseconds holder_remaining(std::string_view name) override {
    return with_retry("peek", [&](Connection& c) {
      Params p;
      p.add(name);
      pqxx::result r = exec(c, "remaining", p);
      if (r.empty()) return milliseconds(0);  // no row: free
      return std::chrono::duration_cast<milliseconds>(microseconds(r[0][0].as<std::int64_t>()));
    });
  }

  RenewResult renew(const LeaseKey& lease, milliseconds ttl) override {
    return with_retry("renew", [&](Connection& c) {
      RenewResult result;
      Params p;
      p.add(lease.name).add(*lease.secret).add(std::int64_t{ttl.count() * 1000});
      pqxx::result r = exec(c, lease.mode == LockMode::kExclusive ? "renew" : "renew_reader", p);
      if (!r.empty()) {
        result.renewed = true;
        result.expires_at_us = r[0][0].as<std::int64_t>();
      }
      return result;
    });
  }

  bool release(const LeaseKey& lease) override {
    const std::string_view name = lease.name;
    const LockMode mode = lease.mode;
    Params p;
    p.add(name).add(*lease.secret).add(channel_);
    const char* stmt = mode == LockMode::kExclusive ? "release" : "release_reader";
    // Taken as a queued waiter: free the row in place, keeping its marker and deleting our queue
    // entry (kReleaseExclusiveInPlace); when that finds no live lease of ours, the plain release
    // below reports what it finds.
    const bool in_place = mode == LockMode::kExclusive && (lease.tag & kViaQueue) != 0;
    bool queued = false;  // exclusive: waiters were queued, the marked row must be re-created
    bool woke_waiter = false;  // exclusive: the release notified a queued waiter
    auto attempt = [&](Connection& c) {
      if (in_place) {
        pqxx::result r = exec(c, "release_in_place", p);
        if (!r.empty()) {
          woke_waiter = r[0][0].as<bool>();  // woken, or granted the lease (r[0][1])
          return std::optional<bool>(true);
        }
      }
      pqxx::result r = exec(c, stmt, p);
      if (r.empty()) return std::optional<bool>();
      queued = mode == LockMode::kExclusive && r[0][1].as<bool>();
      woke_waiter = queued;
      return std::optional<bool>(r[0][0].as<bool>());
    };
    std::optional<bool> outcome;
    bool retried = false;
    try {
      outcome = with_connection(attempt);
    } catch (const ConnectionError&) {
      // The reply was lost: the delete may have committed. Ask again on a fresh connection.
      retried = true;
      outcome = with_connection(attempt);
    }
    if (outcome && woke_waiter) note_released_to_queue(name);
    if (outcome && queued) {
      // Before this call returns (so before this manager could try the name again): waiters keep
      // their place. Best effort: if it fails, their next queue refresh marks the row again.
      try {
        Params q;
        q.add(name);
        with_connection([&](Connection& c) { return exec(c, "remark_released", q).size(); });
      } catch (const Error&) {
      }
    }
    if (!outcome) {
      if (retried) {
        throw InDoubtError("postgresql: release of '" + std::string(name) +
                               "' is in doubt: the connection broke and the retry found nothing to release",
                           kBackendName);
      }
      return false;
    }
    return *outcome;
  }

  // The row expires on the server's clock within the drift margin of the engine's safe-until:
  // nothing to drop early.
  void lease_lost(const LeaseKey&) noexcept override {}

  void leave(std::string_view name, const OwnerSecret& secret) override {
    const bool granted = with_retry("leave queue", [&](Connection& c) {
      Params p;
      p.add(name).add(secret);
      pqxx::result r = exec(c, "leave_queue", p);
      return !r.empty() && r[0][0].as<bool>();
    });
    // A release granted this waiter the lease after it gave up (its notification came too late,
    // or never): hand it on, as its holder would.
    if (granted) release(LeaseKey{name, LockMode::kExclusive, &secret, kViaQueue});
  }

  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override {
    return with_retry("list", [&](Connection& c) {
      Params p;
      if (name) p.add(*name); else p.add_null();
      std::vector<LeaseInfo> out;
      for (const auto& row : exec(c, "list", p)) {
        LeaseInfo info;
        info.name = row[0].as<std::string>();
        info.mode = row[1].as<std::string>() == "shared" ? LockMode::kShared : LockMode::kExclusive;
        info.holder = info.mode == LockMode::kShared ? (row[9].is_null() ? "" : row[9].as<std::string>())
                                                     : (row[2].is_null() ? "" : row[2].as<std::string>());
        info.fence = row[3].as<std::int64_t>();
        info.acquired_at_us = row[4].as<std::int64_t>();
        info.expires_at_us = row[5].as<std::int64_t>();
        info.expires_in_us = row[6].as<std::int64_t>();
        info.renewals = row[7].as<std::int64_t>();
        info.holders = info.mode == LockMode::kShared ? static_cast<int>(row[8].as<std::int64_t>()) : 1;
        out.push_back(std::move(info));
      }
      return out;
    });
  }

  bool force_release(std::string_view name) override {
    return with_retry("force release", [&](Connection& c) {
      Params p;
      p.add(name).add(channel_);
      return exec(c, "force_release", p)[0][0].as<std::int64_t>() > 0;
    });
  }

  // A pass is a run of calls that each reap a full batch of leases; the next call after a short
  // batch starts a new pass from the oldest expiry (see kReapLeases).
  std::size_t reap(std::size_t batch) override {
    std::lock_guard<std::mutex> lock(reap_mutex_);
    return with_retry("reap", [&](Connection& c) {
      Params p;
      p.add(static_cast<std::int64_t>(batch));
      if (reap_after_expiry_us_) p.add(*reap_after_expiry_us_); else p.add_null();
      p.add(reap_after_name_);
      pqxx::result leases = exec(c, "reap_leases", p);
      std::size_t n = leases.empty() ? 0 : leases[0][0].as<std::size_t>();
      if (n < batch) {
        reap_after_expiry_us_.reset();
        reap_after_name_.clear();
      } else {
        reap_after_expiry_us_ = leases[0][1].is_null() ? std::nullopt
                                                       : std::optional<std::int64_t>(leases[0][1].as<std::int64_t>());
        reap_after_name_ = leases[0][2].as<std::string>();
      }
      Params q;
      q.add(static_cast<std::int64_t>(batch));
      n += exec(c, "reap_readers", q)[0][0].as<std::size_t>();
      n += exec(c, "reap_waiters", q)[0][0].as<std::size_t>();
      return n;
    });
  }

  // ---- notifications ----

  // nullptr waits for a listener call in flight (dispatch_mutex_), so none runs after it returns.
  void set_listener(Listener listener) override {
    {
      std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
      std::lock_guard<std::mutex> lock(listener_mutex_);
      on_event_ = std::move(listener);
      if (!on_event_ || listener_.joinable()) return;
    }
    listener_ = std::thread([this] { listen_loop(); });
  }

  void subscribe(std::string_view name) override {
    std::lock_guard<std::mutex> lock(listener_mutex_);
    ++subscribed_[std::string(name)];
  }

  void unsubscribe(std::string_view name) override {
    std::lock_guard<std::mutex> lock(listener_mutex_);
    auto it = subscribed_.find(std::string(name));
    if (it != subscribed_.end() && --it->second == 0) subscribed_.erase(it);
  }

  // ---- session, transaction and row locks ----

  std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                          milliseconds wait) override {
    std::unique_ptr<Connection> c = session_connection();
    const std::int64_t key = advisory_key(name);
    try {
      bool granted;
      int pid;
      const bool exclusive = mode == LockMode::kExclusive;
      Params p;
      p.add(key).add(std::int64_t{c->backend_pid});
      if (wait <= milliseconds::zero()) {
        pqxx::result r = exec(*c, exclusive ? "session_try_x" : "session_try_s", p);
        pid = r[0][1].as<int>();
        granted = !r[0][0].is_null() && r[0][0].as<bool>();
      } else {
        // lock_timeout is a session setting on this dedicated connection; '0' waits forever.
        p.add(lock_timeout_text(wait));
        pqxx::result r = exec(*c, exclusive ? "session_wait_x" : "session_wait_s", p);
        pid = r[0][3].as<int>();
        granted = r[0][2].as<bool>();
      }
      if (pid != c->backend_pid) {
        // The server session changed under us: a transaction pooler. The lock (if any) sits on
        // a server session we no longer control; close ours and refuse loudly.
        throw UsageError(pooler_message(), kBackendName);
      }
      if (!granted) {
        give_back_session(std::move(c));
        return nullptr;
      }
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() == "55P03") {  // lock_timeout: not acquired within wait
        give_back_session(std::move(c));
        return nullptr;
      }
      rethrow_translated("session lock");
    } catch (const UsageError&) {
      throw;
    } catch (...) {
      rethrow_translated("session lock");
    }
    return std::make_unique<PgSessionLock>(*this, std::move(c), key, mode);
  }

  bool run_in_transaction_lock(std::string_view name, milliseconds wait,
                               const std::function<void(Transaction&)>& body) override {
    auto c = borrow();
    const std::int64_t key = advisory_key(name);
    std::optional<pqxx::work> tx;
    try {
      tx.emplace(*c->conn);
      bool granted;
      if (wait <= milliseconds::zero()) {
        granted = tx->exec_params1(sql::kXactTry, key)[0].as<bool>();
      } else {
        granted = tx->exec_params1(sql::kXactWait, key, lock_timeout_text(wait))[2].as<bool>();
      }
      if (!granted) {
        tx->abort();
        return false;
      }
    } catch (const pqxx::sql_error& e) {
      if (e.sqlstate() == "55P03") return false;  // the transaction aborts and releases nothing
      discard_if_broken(c, e);
      rethrow_translated("transaction lock");
    } catch (const std::exception& e) {
      discard_if_broken(c, e);
      rethrow_translated("transaction lock");
    }
    run_body_and_commit(c, *tx, [&](PgTransaction& t) { body(t); });
    return true;
  }

  void run_guarded(std::string_view name, std::int64_t fence, const OwnerSecret& secret,
                   const std::function<void(Transaction&)>& body) override {
    auto c = borrow();
    std::optional<pqxx::work> tx;
    bool held = false;
    try {
      tx.emplace(*c->conn);
      Params p;
      p.add(name).add(secret).add(fence);
      auto ptrs = p.pointers();
      for (const char* check : {sql::kGuardExclusive, sql::kGuardReader}) {
        if (!tx->exec_params(render(check), pqxx::prepare::make_dynamic_params(ptrs)).empty()) held = true;
      }
    } catch (const std::exception& e) {
      discard_if_broken(c, e);
      rethrow_translated("guard");
    }
    if (!held) {
      tx->abort();
      throw LeaseLostError("postgresql: lease '" + std::string(name) + "' with fence " + std::to_string(fence) +
                               " is no longer held; guarded write rolled back",
                           kBackendName);
    }
    run_body_and_commit(c, *tx, [&](PgTransaction& t) { body(t); });
  }

  bool run_with_locked_rows(
      const RowLockRequest& request,
      const std::function<void(Transaction&, const std::vector<std::vector<Value>>&)>& body) override {
    const std::string statement = detail::row_lock_query(request, &detail::quote_identifier, "FOR SHARE", kBackendName);

    auto c = borrow();
    std::optional<pqxx::work> tx;
    std::vector<std::vector<Value>> rows;
    try {
      tx.emplace(*c->conn);
      if (request.wait == RowLockWait::kWait && request.wait_timeout > milliseconds::zero()) {
        tx->exec_params(sql::kSetLocalLockTimeout, lock_timeout_text(request.wait_timeout));
      }
      PgTransaction t(*tx);
      rows = t.query(statement, request.keys);
    } catch (const TimeoutError&) {
      return false;  // 55P03: NOWAIT met a locked row, or lock_timeout ran out
    } catch (const std::exception& e) {
      discard_if_broken(c, e);
      rethrow_translated("row lock");
    }
    run_body_and_commit(c, *tx, [&](PgTransaction& t) { body(t, rows); });
    return true;
  }

  bool compare_and_set(const VersionedUpdate& update) override {
    const detail::Statement statement = detail::versioned_update(update, &detail::quote_identifier, kBackendName);
    // Not retried: an UPDATE whose reply was lost may have been applied, and repeating it would
    // report a conflict for our own write. The caller learns "in doubt" instead.
    try {
      return with_connection([&](Connection& c) {
        pqxx::nontransaction tx(*c.conn);
        PgTransaction t(tx);
        return t.execute(statement.sql, statement.params) == 1;
      });
    } catch (const ConnectionError& e) {
      throw InDoubtError(std::string("postgresql: compare-and-set in doubt: ") + e.what(), kBackendName,
                         e.sqlstate());
    }
  }

  std::optional<std::int64_t> read_version(std::string_view table, std::string_view id_column, const Value& id,
                                           std::string_view version_column) override {
    const std::string statement =
        detail::read_version_query(table, id_column, version_column, &detail::quote_identifier);
    return with_retry("read version", [&](Connection& c) -> std::optional<std::int64_t> {
      pqxx::nontransaction tx(*c.conn);
      PgTransaction t(tx);
      auto rows = t.query(statement, {id});
      if (rows.empty()) return std::nullopt;
      if (auto* v = std::get_if<std::int64_t>(&rows[0][0])) return *v;
      throw UsageError("read_version: version column is not an integer", kBackendName);
    });
  }

  // ---- used by PgSessionLock ----

  void give_back_session(std::unique_ptr<Connection> c) { session_idle_.put(std::move(c)); }

  std::string pooler_message() const {
    return "postgresql: this URL goes through a proxy or connection pooler (the server does not see this "
           "client's socket, or the server session changed between statements). Behind a transaction "
           "pooler (e.g. pgbouncer pool_mode=transaction) a session lock would be lost silently, so "
           "session locks are refused; connect them directly to PostgreSQL, or use leases, which work "
           "through poolers. For a trusted session-mode pool or a NAT, add detect_pooler=0 to the URL.";
  }

 private:
  struct Returner {
    PostgresBackend* backend;
    bool discard = false;
    void operator()(Connection* c) {
      std::unique_ptr<Connection> owned(c);
      if (!discard && owned->conn && owned->conn->is_open()) backend->give_back(std::move(owned));
    }
  };
  using Borrowed = std::unique_ptr<Connection, Returner>;

  static const std::vector<std::pair<std::string, const char*>>& statements() {
    static const std::vector<std::pair<std::string, const char*>> list = {
        {"exclusive", sql::kAcquireExclusive},
        {"exclusive_queued", sql::kAcquireExclusiveQueued},
        {"shared", sql::kAcquireShared},
        {"queue", sql::kQueue},
        {"remaining", sql::kRemaining},
        {"leave_queue", sql::kLeaveQueue},
        {"renew", sql::kRenewExclusive},
        {"renew_reader", sql::kRenewReader},
        {"release", sql::kReleaseExclusive},
        {"remark_released", sql::kRemarkReleased},
        {"release_in_place", sql::kReleaseExclusiveInPlace},
        {"release_reader", sql::kReleaseReader},
        {"force_release", sql::kForceRelease},
        {"list", sql::kList},
        {"reap_leases", sql::kReapLeases},
        {"reap_readers", sql::kReapReaders},
        {"reap_waiters", sql::kReapWaiters},
        {"queue_status", sql::kQueueStatus},
        // Session and transaction locks: prepared like everything else (parsing and planning them
        // on every call cost a third of an advisory lock/unlock pair).
        {"session_try_x", sql::kTrySessionExclusive},
        {"session_try_s", sql::kTrySessionShared},
        {"session_wait_x", sql::kWaitSessionExclusive},
        {"session_wait_s", sql::kWaitSessionShared},
        {"session_unlock_x", sql::kUnlockSessionExclusive},
        {"session_unlock_s", sql::kUnlockSessionShared},
        {"session_verify", sql::kVerifySession},
    };
    return list;
  }

  std::string render(const char* tmpl) const {
    std::string out;
    for (const char* p = tmpl; *p; ++p) {
      if (*p == '{' && p[1] && p[2] == '}') {
        switch (p[1]) {
          case 'L': out += leases_; p += 2; continue;
          case 'R': out += readers_; p += 2; continue;
          case 'W': out += waiters_; p += 2; continue;
          case 'V': out += version_; p += 2; continue;
          case 'S': out += sequence_literal_; p += 2; continue;
          default: break;
        }
      }
      out += *p;
    }
    return out;
  }

  std::unique_ptr<Connection> connect() {
    auto c = std::make_unique<Connection>();
    try {
      c->conn = std::make_unique<pqxx::connection>(options_.conninfo);
      c->conn->inhibit_reactivation(true);
      pqxx::nontransaction tx(*c->conn);
      pqxx::row hello = tx.exec1(sql::kHello);
      if (hello[0].as<bool>()) {
        throw ConnectionError("postgresql: the server is in recovery (a standby); dblock acquires only on the primary",
                              kBackendName);
      }
      c->backend_pid = hello[1].as<int>();
    } catch (...) {
      rethrow_translated("connect");
    }
    for (const auto& [name, text] : rendered_) c->conn->prepare(name, text);
    return c;
  }

  Borrowed borrow() {
    std::unique_ptr<Connection> c = idle_.take();
    if (!c) c = connect();
    return Borrowed(c.release(), Returner{this});
  }

  void give_back(std::unique_ptr<Connection> c) { idle_.put(std::move(c)); }

  static void discard_if_broken(Borrowed& c, const std::exception& e) {
    if (is_connection_failure(e) || !c->conn->is_open()) c.get_deleter().discard = true;
  }

 public:
  // Runs a registered statement (prepared unless Options::prepared is false) in autocommit.
  pqxx::result exec(Connection& c, const std::string& statement, const Params& p) {
    pqxx::nontransaction tx(*c.conn);
    auto ptrs = p.pointers();
    if (options_.prepared) return tx.exec_prepared(statement, pqxx::prepare::make_dynamic_params(ptrs));
    return tx.exec_params(rendered_.at(statement), pqxx::prepare::make_dynamic_params(ptrs));
  }

 private:

  // Runs `fn` on a pooled connection, translating errors; a broken connection is discarded.
  template <class F>
  auto with_connection(F&& fn) -> decltype(fn(std::declval<Connection&>())) {
    auto c = borrow();
    try {
      return fn(*c);
    } catch (const std::exception& e) {
      discard_if_broken(c, e);
      rethrow_translated("statement failed");
    }
  }

  // with_connection, retried once on a fresh connection when the first one was broken. REQUIRES:
  // `fn` is idempotent (see the file comment).
  template <class F>
  auto with_retry(const char* what, F&& fn) -> decltype(fn(std::declval<Connection&>())) {
    try {
      return with_connection(fn);
    } catch (const ConnectionError&) {
      (void)what;
      return with_connection(fn);
    }
  }

  template <class F>
  void run_body_and_commit(Borrowed& c, pqxx::work& tx, F&& body) {
    try {
      PgTransaction t(tx);
      body(t);
      tx.commit();
    } catch (const std::exception& e) {
      discard_if_broken(c, e);
      try {
        tx.abort();
      } catch (...) {
      }
      if (dynamic_cast<const pqxx::failure*>(&e) || dynamic_cast<const pqxx::sql_error*>(&e)) {
        rethrow_translated("transaction");
      }
      throw;
    }
  }

  std::unique_ptr<Connection> session_connection() {
    if (std::unique_ptr<Connection> c = session_idle_.take()) return c;
    auto c = connect();
    if (options_.detect_pooler) probe_pooler(*c);
    return c;
  }

  // Under transaction pooling a server session is lent out per transaction. While a second client
  // connection keeps a transaction open (and so keeps the server session our last statement used,
  // the pooler's most recently freed one), our next statement must run on a different server
  // session: the backend pid changes. Directly connected, or through a session-mode pool, it cannot.
  // The helper transaction ends itself after 2 s idle, so a pool of one cannot deadlock the probe.
  void probe_pooler(Connection& c) {
    // First, deterministically: the server must see this very socket. Any proxy in between
    // (a pooler, in any mode) shows up as a different client port, or as a TCP client where we are
    // on a Unix socket and vice versa. (A NAT that rewrites ports looks the same; detect_pooler=0
    // turns the check off for such trusted paths.) The pid probe below remains as a second check.
    try {
      sockaddr_storage local{};
      socklen_t length = sizeof(local);
      int fd = c.conn->sock();
      if (fd >= 0 && getsockname(fd, reinterpret_cast<sockaddr*>(&local), &length) == 0) {
        int local_port = -1;  // -1: a Unix socket
        if (local.ss_family == AF_INET) local_port = ntohs(reinterpret_cast<sockaddr_in*>(&local)->sin_port);
        if (local.ss_family == AF_INET6) local_port = ntohs(reinterpret_cast<sockaddr_in6*>(&local)->sin6_port);
        pqxx::nontransaction tx(*c.conn);
        pqxx::row seen = tx.exec1("SELECT inet_client_port()");
        int server_port = seen[0].is_null() ? -1 : seen[0].as<int>();
        if (server_port != local_port) throw UsageError(pooler_message(), kBackendName);
      }
    } catch (const UsageError&) {
      throw;
    } catch (...) {
      rethrow_translated("pooler probe");
    }
    try {
      pqxx::connection other(options_.conninfo);
      pqxx::work hold(other);
      hold.exec("SET LOCAL idle_in_transaction_session_timeout = '2s'");
      hold.exec1("SELECT pg_backend_pid()");
      pqxx::nontransaction tx(*c.conn);
      int pid = tx.exec1("SELECT pg_backend_pid()")[0].as<int>();
      hold.abort();
      if (pid != c.backend_pid) throw UsageError(pooler_message(), kBackendName);
    } catch (const UsageError&) {
      throw;
    } catch (...) {
      rethrow_translated("pooler probe");
    }
  }

  void listen_loop() {
    struct Receiver final : pqxx::notification_receiver {
      Receiver(pqxx::connection& c, const std::string& channel, PostgresBackend& b)
          : pqxx::notification_receiver(c, channel), backend(b) {}
      void operator()(const std::string& payload, int) override { backend.dispatch(payload); }
      PostgresBackend& backend;
    };
    int failures = 0;
    while (true) {
      {
        std::lock_guard<std::mutex> lock(listener_mutex_);
        if (listener_stop_) return;
      }
      try {
        pqxx::connection c(options_.conninfo);
        c.inhibit_reactivation(true);
        Receiver receiver(c, channel_, *this);            // "whoever is first", old versions, force-releases
        Receiver own_receiver(c, wake_channel_, *this);   // releases that name this instance's waiters
        failures = 0;
        dispatch_all();  // notifications may have been missed while (re)connecting
        while (true) {
          {
            std::lock_guard<std::mutex> lock(listener_mutex_);
            if (listener_stop_) return;
          }
          c.await_notification(0, 100'000);  // bounded, so shutdown is noticed within 100 ms
        }
      } catch (const std::exception&) {
        // Waiters fall back to polling meanwhile; reconnect with a growing pause.
        std::unique_lock<std::mutex> lock(listener_mutex_);
        auto pause = milliseconds(std::min(2000, 100 << std::min(failures++, 4)));
        if (listener_cv_.wait_for(lock, pause, [this] { return listener_stop_; })) return;
      }
    }
  }

  // Payload (fields separated by \x1f; lock names never contain control characters): "<name>"
  // (anyone may look), "<name>|<ticket of the waiter whose turn it is>", or, when the release
  // granted that waiter the lease, "<name>|<ticket>|<fence>|<granted us>|<expiry us>"
  // (kReleaseExclusiveInPlace). Anything else wakes every waiter of the name without naming one.
  void dispatch(const std::string& payload) {
    std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
    Listener listener;
    {
      std::lock_guard<std::mutex> lock(listener_mutex_);
      listener = on_event_;
    }
    if (!listener) return;
    const std::size_t sep = payload.find('\x1f');
    Event event;
    event.name = std::string_view(payload).substr(0, sep);
    if (sep != std::string::npos) {
      std::vector<std::int64_t> fields;
      try {
        for (std::size_t at = sep + 1; at <= payload.size();) {
          std::size_t end = std::min(payload.find('\x1f', at), payload.size());
          fields.push_back(std::stoll(payload.substr(at, end - at)));
          at = end + 1;
        }
      } catch (const std::exception&) {
        fields.clear();
      }
      if (fields.size() == 1 || fields.size() == 4) event.next_ticket = fields[0];
      if (fields.size() == 4 && fields[0] != 0 && fields[2] > 0) {
        event.kind = Kind::kGranted;
        event.grant = Grant{fields[0], fields[1], microseconds(fields[2]), fields[3], kViaQueue};
      }
    }
    listener(event);
  }

  void dispatch_all() {
    std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
    std::vector<std::string> names;
    Listener listener;
    {
      std::lock_guard<std::mutex> lock(listener_mutex_);
      listener = on_event_;
      for (const auto& [name, count] : subscribed_) names.push_back(name);
    }
    if (listener) {
      for (const auto& name : names) {
        Event event;
        event.name = name;
        listener(event);
      }
    }
  }

  // Names whose release by this backend just woke a queued waiter, and when. For a while afterwards
  // the name's queue marker stands (the woken waiter's entry lives at least a second), so an
  // unqueued exclusive attempt on it (typically the releasing thread taking the name again) would
  // be refused: a waiting acquire joins the queue at once instead, one statement fewer on the
  // server at the moment the woken waiter needs it (measured in bench/postgresql_bench's hand-off).
  // Never a question of correctness: joining the queue grants nothing, and a waiter that finds the
  // name free after joining attempts again at once (holder_remaining 0), which is all a stale entry
  // costs. An entry is used once. Thread-safe (released_mutex_).
  static constexpr milliseconds kReleasedToQueueWindow{250};
  void note_released_to_queue(std::string_view name) {
    std::lock_guard<std::mutex> lock(released_mutex_);
    if (released_to_queue_.size() >= 64) released_to_queue_.clear();  // bounded; only a hint
    released_to_queue_.insert_or_assign(std::string(name), SteadyClock::now());
  }
  bool take_released_to_queue(std::string_view name) {
    std::lock_guard<std::mutex> lock(released_mutex_);
    auto it = released_to_queue_.find(name);
    if (it == released_to_queue_.end()) return false;
    const bool fresh = SteadyClock::now() - it->second < kReleasedToQueueWindow;
    released_to_queue_.erase(it);
    return fresh;
  }

  // Constant after construction.
  const Options options_;
  std::string leases_, readers_, waiters_, version_, sequence_literal_, channel_;
  // This instance's slot in its waiters' queue tickets, and the channel a release that names one
  // of them notifies (DBLOCK_PG_WAKE_CHANNEL in sql.h). Random, so that instances rarely share one.
  int wake_slot_ = 0;
  std::string wake_channel_;
  std::map<std::string, std::string> rendered_;

  detail::IdlePool<Connection> idle_;          // lease statements
  detail::IdlePool<Connection> session_idle_;  // session-lock connections (already probed)

  // The reaper's cursor: the last lease row (in expiry index order) of the current pass; no
  // expiry means '-infinity' (and, with an empty name, the start of a pass). reap_mutex_ is held
  // for a whole reap() call, so the reaper thread and LockManager::reap() take turns on the cursor.
  std::mutex reap_mutex_;
  std::optional<std::int64_t> reap_after_expiry_us_;  // GUARDED_BY(reap_mutex_)
  std::string reap_after_name_;                       // GUARDED_BY(reap_mutex_)

  std::mutex released_mutex_;
  std::map<std::string, SteadyClock::time_point, std::less<>> released_to_queue_;  // GUARDED_BY(released_mutex_)

  std::mutex dispatch_mutex_;  // held while the listener runs; taken before listener_mutex_
  std::mutex listener_mutex_;
  std::condition_variable listener_cv_;
  Listener on_event_;                                 // GUARDED_BY(listener_mutex_)
  std::map<std::string, int> subscribed_;             // GUARDED_BY(listener_mutex_)
  bool listener_stop_ = false;                        // GUARDED_BY(listener_mutex_)
  std::thread listener_;
};

PgSessionLock::~PgSessionLock() {
  // Not released explicitly: closing the connection makes the server drop every lock of the
  // session, which is the most reliable release there is.
  c_.reset();
}

bool PgSessionLock::verify() noexcept {
  if (!c_) return false;
  try {
    Params p;
    p.add(key_).add(std::string_view(mode_ == LockMode::kExclusive ? "ExclusiveLock" : "ShareLock"));
    return backend_.exec(*c_, "session_verify", p)[0][0].as<bool>();
  } catch (...) {
    return false;
  }
}

bool PgSessionLock::release() {
  if (!c_) return false;
  try {
    Params p;
    p.add(key_).add(std::int64_t{c_->backend_pid});
    pqxx::result r = backend_.exec(*c_, mode_ == LockMode::kExclusive ? "session_unlock_x" : "session_unlock_s", p);
    bool released = !r[0][0].is_null() && r[0][0].as<bool>();
    bool same_session = r[0][1].as<int>() == c_->backend_pid;
    if (released && same_session) {
      backend_.give_back_session(std::move(c_));
    } else {
      c_.reset();  // something is off with this session: never reuse it
    }
    return released && same_session;
  } catch (const pqxx::broken_connection& e) {
    c_.reset();
    throw InDoubtError(std::string("postgresql: session lock release in doubt: ") + e.what(), kBackendName);
  } catch (...) {
    c_.reset();
    rethrow_translated("session unlock");
  }
}

std::string conninfo_quote(const std::string& value) {
  std::string out = "'";
  for (char ch : value) {
    if (ch == '\'' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "'";
}

}  // namespace

std::int64_t advisory_key(std::string_view name) noexcept {
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a 64 offset basis
  for (unsigned char c : name) {
    hash ^= c;
    hash *= 1099511628211ULL;  // FNV-1a 64 prime
  }
  return static_cast<std::int64_t>(hash);
}

std::unique_ptr<LeaseService> make_service(const Options& options) { return std::make_unique<PostgresBackend>(options); }

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  Options options;
  options.table_prefix = table_prefix;
  std::string conninfo;
  auto add = [&](const std::string& key, const std::string& value) { conninfo += key + "=" + conninfo_quote(value) + " "; };
  if (!url.hosts.empty()) {
    std::string hosts, ports;
    for (std::size_t i = 0; i < url.hosts.size(); ++i) {
      hosts += (i ? "," : "") + url.hosts[i].host;
      ports += (i ? "," : "") + (url.hosts[i].port ? std::to_string(url.hosts[i].port) : std::string("5432"));
    }
    add("host", hosts);
    add("port", ports);
  }
  if (!url.user.empty()) add("user", url.user);
  if (!url.password.empty()) add("password", url.password);
  if (!url.path.empty()) add("dbname", url.path);
  bool timeout_given = false;
  for (const auto& [key, value] : url.params) {
    if (key == "unlogged") {
      options.unlogged = value == "1" || value == "true";
    } else if (key == "detect_pooler") {
      options.detect_pooler = !(value == "0" || value == "false");
    } else if (key == "prepared") {
      options.prepared = !(value == "0" || value == "false");
    } else {
      if (key == "connect_timeout") timeout_given = true;
      add(key, value);  // libpq parameters pass through
    }
  }
  if (!timeout_given) add("connect_timeout", "5");
  if (url.param("application_name") == std::nullopt) add("application_name", "dblock");
  options.conninfo = conninfo;
  return make_service(options);
}

}  // namespace dblock::postgresql
