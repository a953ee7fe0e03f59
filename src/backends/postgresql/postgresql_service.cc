#include "postgresql_service.h"

#include <algorithm>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/sql/migration.h"
#include "dblock/service/sql/rows.h"
#include "error_map.h"
#include "sql.h"

namespace dblock::postgresql {

extern const std::vector<dblock::sql::Migration> kMigrations;

namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

// AcquireResult::tag bit: the lease was taken (or granted) as a queued waiter, whose queue entry
// its release deletes (sql::kReleaseExclusiveInPlace).
constexpr std::uint32_t kViaQueue = 1;
// How long after a release that woke a waiter the releasing side skips its unqueued attempt.
constexpr milliseconds kReleasedToQueueWindow{250};
// How long an open that must migrate waits for the migration lock.
using dblock::sql::Args;
using dblock::sql::printable;
using dblock::sql::remaining_ms;
using dblock::sql::Row;
using dblock::sql::Rows;

// The acquire statement of one attempt (`ticket` 0: not queued) and its parameters. The unqueued
// exclusive statement has no ticket parameter (it reads no queue).
// Commits an acquiring transaction. A connection that broke during COMMIT is a lost reply, which a
// repetition with the same secrets resolves (it finds what was taken its own): ConnectionError.
void commit_acquire(pqxx::work& tx, const char* what) {
  try {
    tx.commit();
  } catch (const pqxx::in_doubt_error& e) {
    throw ConnectionError(std::string("postgresql: ") + what + ": the connection broke during COMMIT: " + e.what(),
                          kServiceName, "08006");
  }
}

const dblock::sql::Statement& acquire_statement(const AcquireRequest& request, std::int64_t ticket) {
  if (request.mode == LockMode::kShared) return sql::kAcquireShared;
  return ticket != 0 ? sql::kAcquireExclusiveQueued : sql::kAcquireExclusive;
}

// The arguments of acquire_statement(request, ticket).
Args acquire_args(const AcquireRequest& request, std::int64_t ticket) {
  Args args{{"name", request.name}, {"secret", *request.secret}, {"holder", request.holder},
            {"ttl_us", request.ttl.count() * std::int64_t{1000}}};
  if (ticket != 0 || request.mode == LockMode::kShared) args.add({"ticket", dblock::sql::unless_zero(ticket)});
  if (request.mode == LockMode::kShared) args.add({"permits", dblock::sql::unless_zero(request.permits)});
  return args;
}

// What an acquire statement returned: a row (fence, expiry in µs) when acquired, none when refused.
// The fence is recorded in `carried`.
AcquireResult acquire_result(const Rows& rows, std::int64_t ticket, dblock::sql::CarriedFence& carried) {
  AcquireResult result;
  if (rows.empty()) {
    result.holder_remaining = milliseconds(0);
    return result;
  }
  result.acquired = true;
  result.fence = rows.front().get<std::int64_t>("fence");
  carried.saw(result.fence);
  result.expires_at_us = rows.front().get<std::int64_t>("expires_at_us");
  if (ticket != 0) result.tag = kViaQueue;
  return result;
}

}  // namespace

PostgresService::PostgresService(Options options)
    : context_(std::move(options)),
      listener_(context_.options().conninfo, context_.options().table_prefix + "release", kViaQueue,
                context_.deadlines()),
      session_locks_(context_),
      sql_features_(context_) {}

ServiceTraits PostgresService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = true;
  traits.permits = true;
  traits.hold_at_least = true;
  return traits;
}

// ---- leases ----

AcquireResult PostgresService::try_acquire(const AcquireRequest& request) {
  return attempt(request, false, Place{}).result;
}

FairQueue::Attempt PostgresService::attempt_in_line(const AcquireRequest& request, const Place& place) {
  return attempt(request, true, place);
}

FairQueue::Attempt PostgresService::attempt(const AcquireRequest& request, bool queue, const Place& place) {
  const std::int64_t ticket = queue ? place.ticket : 0;
  // A waiter's first attempt right after this service's own release of the name woke a queued
  // waiter would be refused (the queue marker stands), so it only joins the queue.
  const bool skip_attempt =
      request.mode == LockMode::kExclusive && queue && ticket == 0 && take_released_to_queue(request.name);
  return context_.connections().idempotent([&](Connection& c) {
    Attempt out;
    Rows r;
    if (request.permits != 0) {
      r = take_permit(c, request, ticket);
    } else if (!skip_attempt) {
      r = exec(c, acquire_statement(request, ticket), acquire_args(request, ticket));
    }
    out.result = acquire_result(r, ticket, context_.carried());
    if (!out.result.acquired && request.mode == LockMode::kShared) check_permits(c, request);
    if (!out.result.acquired && queue) join_queue(c, request, ticket, place, out);
    return out;
  });
}

Rows PostgresService::take_permit(Connection& c, const AcquireRequest& request, std::int64_t ticket) {
  return dblock::service::call_within(context_.deadlines(), c.conn->sock(), call_deadline(),
                                  {kServiceName, sql::kAcquireShared.name, "08006"}, [&] {
    pqxx::work tx(*c.conn);  // aborted by its destructor unless committed
    bound_lock_waits(tx);
    context_.exec(tx, sql::kLockPermitRow, {{"name", request.name}});
    Rows r = context_.exec(tx, sql::kAcquireShared, acquire_args(request, ticket));
    commit_acquire(tx, "acquire");
    return r;
  });
}

void PostgresService::check_permits(Connection& c, const AcquireRequest& request) {
  const Rows r = exec(c, sql::kSharedPermits, {{"name", request.name}});
  if (r.empty()) return;
  const std::int64_t held = r.front().get<std::int64_t>("permits");  // NULL: plain readers, 0
  if (held != request.permits) throw service::permits_mismatch(kServiceName, request.name, held, request.permits);
}

std::vector<AcquireResult> PostgresService::try_acquire_all(const std::vector<AcquireRequest>& requests) {
  // Idempotent as a whole: a repetition re-takes what this call's secrets took (a re-take draws a
  // new fence), so a lost reply or a commit in doubt is repeated once on a fresh connection.
  return context_.connections().idempotent([&](Connection& c) {
    return dblock::service::call_within(context_.deadlines(), c.conn->sock(), call_deadline(),
                                    {kServiceName, "acquire_all", "08006"}, [&] { return take_all(c, requests); });
  });
}

std::vector<AcquireResult> PostgresService::take_all(Connection& c, const std::vector<AcquireRequest>& requests) {
  std::vector<AcquireResult> results;
  pqxx::work tx(*c.conn);  // aborted by its destructor unless committed
  bound_lock_waits(tx);
  for (const AcquireRequest& request : requests) {
    results.push_back(
        acquire_result(context_.exec(tx, acquire_statement(request, 0), acquire_args(request, 0)), 0, context_.carried()));
    if (!results.back().acquired) {
      tx.abort();  // frees the rows locked so far; the fences drawn stay unused
      return {};
    }
  }
  commit_acquire(tx, "acquire_all");
  return results;
}

// The transaction holds the rows of the names it has written while it waits for the next one's,
// so its lock waits end on the server by the call's deadline (55P03, a retryable TimeoutError),
// not only at the client when the watch cuts the socket: a backend left waiting after the cut
// would keep those rows locked until its wait ended.
void PostgresService::bound_lock_waits(pqxx::work& tx) {
  const SteadyClock::time_point deadline = call_deadline();
  if (deadline == SteadyClock::time_point::max()) return;
  constexpr milliseconds kReplyMargin{50};  // the error's way back, before the watch cuts
  const auto left = std::chrono::duration_cast<milliseconds>(deadline - SteadyClock::now()) - kReplyMargin;
  context_.exec(tx, sql::kSetLocalLockTimeout, {{"lock_timeout", lock_timeout_text(std::max(left, milliseconds(1)))}});
}

void PostgresService::join_queue(Connection& c, const AcquireRequest& request, std::int64_t ticket,
                                 const Place& place, Attempt& out) {
  // An exclusive waiter may be granted the lease by the release (kReleaseExclusiveInPlace).
  const std::optional<std::int64_t> grant_ttl_us =
      request.mode == LockMode::kExclusive ? std::optional<std::int64_t>(request.ttl.count() * 1000) : std::nullopt;
  const Args q{{"name", request.name},
               {"secret", *request.secret},
               {"queue_us", place.hold_for.count() * std::int64_t{1000}},
               {"ticket", dblock::sql::unless_zero(ticket)},
               {"holder", request.holder},
               {"grant_ttl_us", grant_ttl_us},
               {"wake_slot", listener_.wake_slot()}};
  Rows r;
  for (int collisions = 0;; ++collisions) {
    try {
      r = exec(c, sql::kQueue, q);
      break;
    } catch (const pqxx::unique_violation&) {
      // A new ticket equal to another waiter's of the name (joined in the same microsecond):
      // nothing was written; joining again draws a later one.
      if (collisions >= 3 || ticket != 0) throw;
    }
  }
  const Row& queued = r.at(0);
  out.ticket = queued.get<std::int64_t>("ticket");
  listener_.remember_ticket(out.ticket, request.name);
  out.position = queued.get<int>("ahead");
  out.result.holder_remaining = remaining_ms(queued.get<std::int64_t>("remaining_us"));
}

RenewResult PostgresService::renew(const LeaseKey& lease, milliseconds ttl) {
  return context_.connections().idempotent([&](Connection& c) {
    RenewResult result;
    const Rows r = exec(c, lease.mode == LockMode::kExclusive ? sql::kRenewExclusive : sql::kRenewReader,
                        {{"name", lease.name}, {"secret", *lease.secret}, {"ttl_us", ttl.count() * std::int64_t{1000}}});
    if (!r.empty()) {
      result.renewed = true;
      result.expires_at_us = r.front().get<std::int64_t>("expires_at_us");
    }
    return result;
  });
}

bool PostgresService::release(const LeaseKey& lease) {
  const bool exclusive = lease.mode == LockMode::kExclusive;
  const Args p{{"name", lease.name}, {"secret", *lease.secret}, {"channel", listener_.channel()}};
  // Taken as a queued waiter: free the row in place, keeping its marker and deleting our queue
  // entry (kReleaseExclusiveInPlace); when that finds no live lease of ours, the plain release
  // below reports what it finds.
  const bool in_place = exclusive && (lease.tag & kViaQueue) != 0;
  bool queued = false;       // exclusive: waiters were queued, the marked row must be re-created
  bool woke_waiter = false;  // exclusive: the release notified a queued waiter
  const std::optional<bool> outcome = context_.connections().release(
      [&](Connection& c) -> std::optional<bool> {
        if (exclusive && lease.hold_at_least.count() > 0) {
          const Args h{{"name", lease.name},
                       {"secret", *lease.secret},
                       {"hold_us", lease.hold_at_least.count() * std::int64_t{1000}}};
          if (!exec(c, sql::kReleaseHolding, h).empty()) return true;
        }
        if (in_place) {
          const Rows r = exec(c, sql::kReleaseExclusiveInPlace, p);
          if (!r.empty()) {
            woke_waiter = r.front().get<bool>("woke");  // woken, or granted the lease
            return true;
          }
        }
        const Rows r = exec(c, exclusive ? sql::kReleaseExclusive : sql::kReleaseReader, p);
        if (r.empty()) return std::nullopt;
        queued = exclusive && r.front().get<bool>("woke");
        woke_waiter = queued;
        return r.front().get<bool>("was_live");
      },
      lease.name);
  if (outcome && woke_waiter) note_released_to_queue(lease.name);
  if (outcome && queued) {
    // Before this call returns (so before this manager could try the name again): waiters keep
    // their place. Best effort: if it fails, their next queue refresh marks the row again.
    try {
      context_.connections().run([&](Connection& c) { return exec(c, sql::kRemarkReleased, {{"name", lease.name}}).size(); });
    } catch (const Error&) {
    }
  }
  return outcome.value_or(false);
}

bool PostgresService::force_release(std::string_view name, std::string_view by) {
  return context_.connections().idempotent([&](Connection& c) {
    const Rows r = exec(c, sql::kForceRelease, {{"name", name}, {"channel", listener_.channel()}, {"by", by}});
    return r.at(0).get<std::int64_t>("evicted") > 0;
  });
}

std::vector<ForceReleaseRecord> PostgresService::force_releases(std::optional<std::string_view> name,
                                                                std::size_t limit) {
  return context_.connections().idempotent([&](Connection& c) {
    return dblock::sql::parse_rows(exec(c, sql::kForceReleaseHistory, {{"name", name}, {"limit", limit}}),
                                   &dblock::sql::force_release_record);
  });
}

std::vector<LeaseInfo> PostgresService::list(std::optional<std::string_view> name) {
  const Args p{{"name", name}};
  std::vector<LeaseInfo> out = context_.connections().idempotent([&](Connection& c) {
    return dblock::sql::parse_rows(exec(c, sql::kList, p), &dblock::sql::lease_info);
  });
  dblock::sql::set_waiters_if_readable(out, [&] {
    return context_.connections().idempotent([&](Connection& c) { return exec(c, sql::kListWaiters, p); });
  });
  return out;
}

std::optional<std::chrono::microseconds> PostgresService::oldest_unreaped() {
  return dblock::sql::optional_us(
      context_.connections().idempotent([&](Connection& c) { return exec(c, sql::kOldestUnreaped); }));
}

std::optional<LeaseGrant> PostgresService::confirm_grant(std::string_view name, const OwnerSecret& secret,
                                                         const LeaseGrant& claimed) {
  return context_.connections().idempotent([&](Connection& c) -> std::optional<LeaseGrant> {
    const Rows r = exec(c, sql::kConfirmGrant, {{"name", name}, {"secret", secret}});
    if (r.empty()) return std::nullopt;
    const Row& row = r.front();
    LeaseGrant grant = claimed;
    grant.fence = row.get<std::int64_t>("fence");
    context_.carried().saw(grant.fence);
    grant.expires_at_us = row.get<std::int64_t>("expires_at_us");
    grant.granted_for = std::chrono::microseconds(row.get<std::int64_t>("granted_for_us"));
    grant.tag = kViaQueue;
    return grant;
  });
}

// ---- the queue and the probe ----

void PostgresService::leave(std::string_view name, const OwnerSecret& secret) {
  const bool granted = context_.connections().idempotent([&](Connection& c) {
    const Rows r = exec(c, sql::kLeaveQueue, {{"name", name}, {"secret", secret}});
    return !r.empty() && r.front().get<bool>("mine");
  });
  // A release granted this waiter the lease after it gave up (its notification came too late, or
  // never): hand it on, as its holder would.
  if (granted) release(LeaseKey{name, LockMode::kExclusive, &secret, kViaQueue});
}

FairQueue::Position PostgresService::position(std::string_view name, const OwnerSecret& secret,
                                              std::int64_t ticket) {
  return context_.connections().idempotent([&](Connection& c) {
    const Rows r = exec(c, sql::kQueueStatus, {{"name", name}, {"secret", secret}, {"ticket", ticket}});
    const Row& row = r.at(0);
    return Position{row.get<int>("ahead"), remaining_ms(row.get<std::int64_t>("remaining_us"))};
  });
}

void PostgresService::note_released_to_queue(std::string_view name) {
  service::MutexLock lock(released_mutex_);
  if (released_to_queue_.size() >= 64) released_to_queue_.clear();  // bounded; only a hint
  released_to_queue_.insert_or_assign(std::string(name), SteadyClock::now());
}

bool PostgresService::take_released_to_queue(std::string_view name) {
  service::MutexLock lock(released_mutex_);
  auto it = released_to_queue_.find(name);
  if (it == released_to_queue_.end()) return false;
  const bool fresh = SteadyClock::now() - it->second < kReleasedToQueueWindow;
  released_to_queue_.erase(it);
  return fresh;
}

// ---- maintenance ----

void PostgresService::migrate(bool create) {
  // Most opens find the schema current: they check it without the migration lock, which any role
  // that can connect could hold (it is an advisory lock) and so keep every open waiting.
  if (schema_current(create)) return;
  const MigrationLockKey key = migration_lock_key(context_.options().table_prefix);
  const milliseconds wait = dblock::sql::migration_lock_wait();
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);
  try {
    pqxx::work tx(*c->conn);
    context_.exec(tx, sql::kReadCommitted);
    context_.exec(tx, sql::kSetLocalLockTimeout, {{"lock_timeout", std::to_string(wait.count()) + "ms"}});
    context_.exec(tx, sql::kMigrationLock, {{"class_id", key.class_id}, {"object_id", key.object_id}});
    context_.exec(tx, sql::kSetLocalLockTimeout, {{"lock_timeout", "0"}});
    const int current = read_schema_version(tx);
    dblock::sql::check_schema_version(kServiceName, "dblock tables are", current,
                                      dblock::sql::latest_migration(kMigrations), create);
    for (const auto& m : kMigrations) {
      if (m.number <= current) continue;
      tx.exec(dblock::sql::render_migration(m.sql, context_.options().table_prefix));
      context_.exec(tx, sql::kRecordMigration, {{"version", m.number}, {"migration", m.name}});
    }
    set_persistence(tx);
    tx.commit();
    // Tables made now (on a new primary that never saw them, too) start their fences above the
    // clock, as every connection opened later would have them.
    context_.floor_fences(*c);
  } catch (const pqxx::sql_error& e) {
    c.discard();
    if (e.sqlstate() == "55P03") throw migration_lock_timeout(key, wait);
    rethrow_translated("migration");
  } catch (...) {
    c.discard();
    rethrow_translated("migration");
  }
}

// Read-only: the schema is this library's and the tables' persistence is the one asked for (then
// there is nothing to migrate); a schema newer than this library, or missing or older without
// `create`, throws SchemaError.
bool PostgresService::schema_current(bool create) {
  return context_.connections().idempotent([&](Connection& c) {
    const auto watch = context_.watch(c);
    pqxx::nontransaction tx(*c.conn);
    if (dblock::sql::migration_needed(kServiceName, "dblock tables are", read_schema_version(tx),
                                      dblock::sql::latest_migration(kMigrations), create)) {
      return false;
    }
    return tables_to_switch(tx).empty();
  });
}

TimeoutError PostgresService::migration_lock_timeout(MigrationLockKey key, milliseconds waited) {
  std::string holder = "a session this role cannot see";
  try {
    // The migration's deadline may have passed (an open's own wait): the look gets a call's least.
    const service::CallDeadlineScope look(SteadyClock::now());
    auto c = context_.connections().pool().borrow();
    const auto watch = context_.watch(*c);
    pqxx::nontransaction tx(*c->conn);
    const Rows r = context_.exec(tx, sql::kMigrationLockHolder, {{"class_id", key.class_id}, {"object_id", key.object_id}});
    if (!r.empty()) {
      const Row& row = r.front();
      holder = "backend pid " + row.get<std::string>("pid") + " (role " + printable(row.get<std::string>("usename")) +
               ", application '" + printable(row.get<std::string>("application_name")) + "')";
    }
  } catch (const std::exception&) {
    // Only decoration for the message.
  }
  return TimeoutError("postgresql: the migration lock (advisory lock " + std::to_string(key.class_id) + ", " +
                          std::to_string(key.object_id) + ") was not free within " +
                          dblock::sql::seconds_text(waited) + "; held by " + holder,
                      kServiceName, "55P03", true);
}

// Options::unlogged: switches the lease tables (waiters are always UNLOGGED; the fence sequence
// stays logged).
void PostgresService::set_persistence(pqxx::work& tx) {
  for (const std::string& table : tables_to_switch(tx)) {
    const auto& statement = *context_.options().unlogged ? sql::kSetUnlogged : sql::kSetLogged;
    tx.exec(dblock::sql::render(context_.text(statement), dblock::sql::Placeholders().set('T', table)));
  }
}

std::vector<std::string> PostgresService::tables_to_switch(pqxx::transaction_base& tx) {
  std::vector<std::string> out;
  const std::optional<bool>& unlogged = context_.options().unlogged;
  if (!unlogged) return out;
  for (const char* suffix : {"leases", "readers"}) {
    const std::string table = service::quote_identifier(context_.options().table_prefix + suffix);
    if (context_.exec(tx, sql::kIsUnlogged, {{"table", table}}).at(0).get<bool>("unlogged") != *unlogged) {
      out.push_back(table);
    }
  }
  return out;
}

int PostgresService::schema_version() {
  return context_.connections().idempotent([&](Connection& c) {
    const auto watch = context_.watch(c);
    pqxx::nontransaction tx(*c.conn);
    return read_schema_version(tx);
  });
}

int PostgresService::read_schema_version(pqxx::transaction_base& tx) {
  const std::string version_table = context_.options().table_prefix + "schema_version";  // as pg_class names it
  if (!context_.exec(tx, sql::kSchemaVersionExists, {{"table", version_table}}).at(0).get<bool>("present")) return 0;
  return context_.exec(tx, sql::kSchemaVersion).at(0).get<int>("version");
}

// A pass is a run of calls that each reap a full batch of leases; the next call after a short
// batch starts a new pass from the oldest expiry (see kReapLeases).
std::size_t PostgresService::reap(std::size_t batch) {
  service::MutexLock lock(reap_mutex_);
  // A copy, written back when the call succeeds (a failed one leaves the pass where it was).
  ReapCursor cursor = reap_cursor_;
  const std::size_t reaped = context_.connections().idempotent([&](Connection& c) {
    const Rows leases = exec(c, sql::kReapLeases,
                             {{"batch", batch},
                              {"after_expiry_us", cursor.after_expiry_us},
                              {"after_name", cursor.after_name}});
    std::size_t n = leases.empty() ? 0 : leases.front().get<std::size_t>("deleted");
    if (n < batch) {
      cursor = ReapCursor{};
    } else {
      cursor.after_expiry_us = leases.front().get<std::optional<std::int64_t>>("expires_at_us");
      cursor.after_name = leases.front().get<std::string>("name");
    }
    const Args q{{"batch", batch}};
    n += exec(c, sql::kReapReaders, q).at(0).get<std::size_t>("deleted");
    n += exec(c, sql::kReapWaiters, q).at(0).get<std::size_t>("deleted");
    return n;
  });
  reap_cursor_ = cursor;
  return reaped;
}

}  // namespace dblock::postgresql
