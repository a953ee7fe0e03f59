#include "mysql_service.h"

#include <algorithm>

#include <cppconn/exception.h>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/sql/migration.h"
#include "error_map.h"
#include "keys.h"
#include "sql.h"

namespace dblock::mysql {

extern const std::vector<dblock::sql::Migration> kMigrations;

namespace {

using std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;
using dblock::sql::as_int;
using dblock::sql::as_string;
using dblock::sql::is_null;
using dblock::sql::printable;

// AcquireResult::tag bit: the lease was taken as a queued waiter; waiters are probably queued
// again, so its release marks the row free first instead of trying the uncontended delete.
constexpr std::uint32_t kViaQueue = 1;
constexpr int kFenceSequenceMigration = 2;  // migrations/mysql/0002_fence_sequence.sql
// How long an open that must migrate waits for the migration lock.

milliseconds ceil_ms(std::int64_t us) { return milliseconds((std::max<std::int64_t>(us, 0) + 999) / 1000); }

// True when only blanks follow `from` up to the end of its line.
bool ends_line(std::string_view script, std::size_t from) {
  for (std::size_t i = from; i < script.size() && script[i] != '\n'; ++i) {
    if (script[i] != ' ' && script[i] != '\t' && script[i] != '\r') return false;
  }
  return true;
}

// Splits a migration script into statements at each ';' that ends its line (trailing blanks
// allowed), outside quotes and comments: a routine's body keeps its inner ';' within its lines.
std::vector<std::string> split_statements(std::string_view script) {
  std::vector<std::string> out;
  std::string current;
  bool has_code = false;
  for (std::size_t i = 0; i < script.size(); ++i) {
    const char c = script[i];
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
    if (c == ';' && ends_line(script, i + 1)) {
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

}  // namespace

MysqlService::MysqlService(Options options)
    : context_(std::move(options)), beacons_(context_), session_locks_(context_), sql_features_(context_) {}

ServiceTraits MysqlService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = true;
  traits.permits = true;
  traits.hold_at_least = true;
  return traits;
}

// ---- leases ----

AcquireResult MysqlService::try_acquire(const AcquireRequest& request) { return attempt(request, false, Place{}).result; }

FairQueue::Attempt MysqlService::attempt_in_line(const AcquireRequest& request, const Place& place) {
  return attempt(request, true, place);
}

FairQueue::Attempt MysqlService::attempt(const AcquireRequest& request, bool queue, const Place& place) {
  check_name(request.name);
  const std::int64_t ticket = queue ? place.ticket : 0;
  const SteadyClock::time_point sent_at = SteadyClock::now();
  const std::string name(request.name);
  const std::string secret = request.secret->hex();
  const Value holder = utf8_cut(request.holder, 255);
  const std::int64_t ttl_us = request.ttl.count() * 1000;
  const std::int64_t queue_us = queue ? place.hold_for.count() * 1000 : 0;
  Attempt out = context_.connections().idempotent([&](Connection& c) {
    Attempt a;
    AcquireResult& r = a.result;
    if (request.mode == LockMode::kShared || ticket != 0) {
      const Args args = {{"name", name}, {"secret", secret}, {"holder", holder}, {"ttl_us", ttl_us},
                         {"queue_us", queue_us}, {"ticket", ticket != 0 ? Value(ticket) : Value()},
                         {"permits", request.permits != 0 ? Value(std::int64_t{request.permits}) : Value()}};
      const Rows rows = context_.query(c, request.mode == LockMode::kShared ? sql::kAcquireShared
                                                                             : sql::kAcquireExclusiveQueued, args);
      const Row& row = rows.at(0);
      r.acquired = row.get<bool>("acquired");
      if (r.acquired) {
        r.fence = row.get<std::int64_t>("fence");
        context_.carried().saw(r.fence);
        r.expires_at_us = row.get<std::int64_t>("expires_at_us");
        if (ticket != 0) r.tag = kViaQueue;
      } else {
        r.holder_remaining = ceil_ms(row.get<std::int64_t>("remaining_us"));
        a.ticket = row.get<std::int64_t>("ticket");
        a.position = row.get<int>("ahead");
        const std::int64_t held = request.mode == LockMode::kShared ? row.get<std::int64_t>("held_permits") : -1;
        if (held >= 0 && held != request.permits) {
          throw service::permits_mismatch(kServiceName, request.name, held, request.permits);
        }
      }
      return a;
    }
    const Rows rows = context_.query(c, sql::kAcquireExclusive,
                                     {{"name", name}, {"secret", secret}, {"holder", holder}, {"ttl_us", ttl_us}});
    const Row& row = rows.at(0);
    r.acquired = row.get<bool>("acquired");  // NULL: a row the statement did not return as ours
    if (r.acquired) {
      r.fence = row.get<std::int64_t>("fence");
      context_.carried().saw(r.fence);
      r.expires_at_us = row.get<std::int64_t>("expires_at_us");
      return a;
    }
    r.holder_remaining = ceil_ms(row.get<std::int64_t>("remaining_us"));
    if (queue) {
      const Rows q = context_.query(c, sql::kQueue, {{"name", name}, {"secret", secret}, {"queue_us", queue_us},
                                                     {"holder", holder}, {"ttl_us", ttl_us}});
      const Row& queued = q.at(0);
      a.ticket = queued.get<std::int64_t>("ticket");
      a.position = queued.get<int>("ahead");
      if (!queued.is_null("remaining_us")) r.holder_remaining = ceil_ms(queued.get<std::int64_t>("remaining_us"));
    }
    return a;
  });
  if (out.result.acquired) beacons_.hold(name, secret, sent_at + request.ttl);
  return out;
}

std::vector<AcquireResult> MysqlService::try_acquire_all(const std::vector<AcquireRequest>& requests) {
  for (const AcquireRequest& request : requests) check_name(request.name);
  const SteadyClock::time_point sent_at = SteadyClock::now();
  // Idempotent as a whole: a repetition re-takes what this call's secrets took. A deadlock or a
  // lock wait that ran out (the statements' one-second bound) rolled it back: repeated as one.
  std::vector<AcquireResult> results = context_.connections().idempotent([&](Connection& c) {
    // The whole transaction, START TRANSACTION to COMMIT, ends by the call's deadline.
    return dblock::service::call_within(context_.deadlines(), c.socket, call_deadline(),
                                    {kServiceName, "acquire_all", "08S01"}, [&] {
                                      c.plain->execute(sql::kStartTransaction.text);
                                      try {
                                        return take_all(c, requests);
                                      } catch (const std::exception& e) {
                                        roll_back_or_drop(c, e);
                                        throw;
                                      }
                                    });
  });
  for (std::size_t i = 0; i < results.size(); ++i) {
    beacons_.hold(std::string(requests[i].name), requests[i].secret->hex(), sent_at + requests[i].ttl);
  }
  return results;
}

std::vector<AcquireResult> MysqlService::take_all(Connection& c, const std::vector<AcquireRequest>& requests) {
  std::vector<AcquireResult> results;
  for (const AcquireRequest& request : requests) {
    results.push_back(take_in_transaction(c, request));
    if (!results.back().acquired) {
      c.plain->execute(sql::kRollback.text);  // frees the rows locked so far; the fences drawn stay unused
      return {};
    }
  }
  c.plain->execute(sql::kCommit.text);
  return results;
}

AcquireResult MysqlService::take_in_transaction(Connection& c, const AcquireRequest& request) {
  const Args args = {{"name", std::string(request.name)}, {"secret", request.secret->hex()},
                     {"holder", utf8_cut(request.holder, 255)}, {"ttl_us", std::int64_t{request.ttl.count() * 1000}},
                     {"queue_us", std::int64_t{0}}, {"ticket", Value()}, {"permits", Value()}};
  const bool shared = request.mode == LockMode::kShared;
  // Both rows begin acquired, fence, expiry (µs); the exclusive one's acquired is NULL for a row
  // the statement did not return as ours.
  const Rows rows = context_.query(c, shared ? sql::kAcquireSharedInTransaction : sql::kAcquireExclusive, args);
  const Row& row = rows.at(0);
  AcquireResult r;
  r.acquired = row.get<bool>("acquired");
  if (r.acquired) {
    r.fence = row.get<std::int64_t>("fence");
    context_.carried().saw(r.fence);
    r.expires_at_us = row.get<std::int64_t>("expires_at_us");
  }
  return r;
}

void MysqlService::roll_back_or_drop(Connection& c, const std::exception& failure) {
  if (is_broken(c, failure)) return;  // the pool drops it; the server rolls back when it notices
  try {
    c.plain->execute(sql::kRollback.text);
  } catch (const std::exception& e) {
    // The transaction may still hold rows: the connection must not go back to the pool.
    throw ConnectionError(std::string("mysql: acquire_all: ROLLBACK after \"") + failure.what() +
                              "\" failed; the connection is dropped: " + e.what(),
                          kServiceName);
  }
}

RenewResult MysqlService::renew(const LeaseKey& lease, milliseconds ttl) {
  check_name(lease.name);
  const SteadyClock::time_point sent_at = SteadyClock::now();
  const std::string name(lease.name);
  const std::string hex = lease.secret->hex();
  RenewResult result = context_.connections().idempotent([&](Connection& c) {
    RenewResult r;
    const Rows rows = context_.query(c, lease.mode == LockMode::kExclusive ? sql::kRenewExclusive : sql::kRenewReader,
                                     {{"name", name}, {"secret", hex}, {"ttl_us", std::int64_t{ttl.count() * 1000}}});
    r.renewed = rows.at(0).get<bool>("renewed");
    if (r.renewed) r.expires_at_us = rows.at(0).get<std::int64_t>("expires_at_us");
    return r;
  });
  if (result.renewed) {
    beacons_.refresh(name, hex, sent_at + ttl);
  } else {
    beacons_.drop(name, hex, false);
  }
  return result;
}

bool MysqlService::release(const LeaseKey& lease) {
  check_name(lease.name);
  const std::string key(lease.name);
  const std::string hex = lease.secret->hex();
  // Whatever the outcome, this service stops advertising the lease to waiters.
  struct DropBeacon {
    Beacons& beacons;
    const std::string& name;
    const std::string& secret;
    ~DropBeacon() { beacons.drop(name, secret, true); }
  } drop{beacons_, key, hex};
  // Which release statement goes first is a guess (both orders are correct; a wrong guess costs
  // a round trip): a lease acquired after queueing probably has waiters again, so it is handed on
  // (or its row marked free) at once instead of first trying the uncontended delete.
  const bool contended = (lease.tag & kViaQueue) != 0;
  // nullopt: nothing of this owner's found (already released, or never held).
  auto attempt = [&](Connection& c) -> std::optional<bool> {
    const Args args = {{"name", key}, {"secret", hex}};
    if (lease.mode == LockMode::kExclusive) {
      if (lease.hold_at_least.count() > 0 &&
          context_.update(c, sql::kReleaseHolding,
                          {{"name", key}, {"secret", hex}, {"hold_us", std::int64_t{lease.hold_at_least.count() * 1000}}}) == 1) {
        return true;
      }
      if (!contended && context_.update(c, sql::kReleaseExclusiveUnqueued, args) == 1) return true;
      const Args gated = {{"name", key}, {"secret", hex}, {"gate", grant_gate(key)}};
      if (context_.query(c, sql::kReleaseExclusive, gated).at(0).get<bool>("released")) return true;
      return std::nullopt;  // includes this owner's expired row: "not held" either way
    }
    const Rows rows = context_.query(c, sql::kReleaseReader, args);
    if (rows.empty() || rows.front().is_null("was_live")) return std::nullopt;
    return rows.front().get<bool>("was_live");
  };
  return context_.connections().release(attempt, lease.name).value_or(false);
}

void MysqlService::lease_lost(const LeaseKey& lease) noexcept {
  try {
    beacons_.drop(std::string(lease.name), lease.secret->hex(), false);
  } catch (...) {
  }
}

bool MysqlService::force_release(std::string_view name, std::string_view by) {
  check_name(name);
  return context_.connections().idempotent([&](Connection& c) {
    const Rows rows = context_.query(c, sql::kForceRelease, {{"name", std::string(name)}, {"by", std::string(by)}});
    return rows.at(0).get<bool>("evicted");
  });
}

namespace {

// True for the errors of a CALL that this account may not run (no EXECUTE) or that the schema
// lacks: the caller reads the tables instead.
bool routine_unavailable(const ::sql::SQLException& e) {
  return e.getErrorCode() == kErrProcAccessDenied || e.getErrorCode() == kErrSpDoesNotExist;
}

}  // namespace

std::vector<ForceReleaseRecord> MysqlService::force_releases(std::optional<std::string_view> name, std::size_t limit) {
  if (name) check_name(*name);
  const Args args{{"name", std::string(name.value_or(""))}, {"limit", static_cast<std::int64_t>(limit)}};
  return context_.connections().idempotent([&](Connection& c) {
    Rows rows;
    try {
      rows = dblock::sql::relabel(context_.query(c, sql::kForceReleaseHistoryCall, args), sql::kForceReleaseHistoryColumns);
    } catch (const ::sql::SQLException& e) {
      if (!routine_unavailable(e)) throw;
      rows = context_.query(c, sql::kForceReleaseHistory, args);
    }
    return dblock::sql::parse_rows(rows, &dblock::sql::force_release_record);
  });
}

std::vector<LeaseInfo> MysqlService::list(std::optional<std::string_view> name) {
  std::vector<LeaseInfo> out = context_.connections().idempotent([&](Connection& c) {
    Rows rows;
    try {
      rows = dblock::sql::relabel(context_.query(c, sql::kListCall, {{"name", std::string(name.value_or(""))}}),
                                  sql::kListColumns);
    } catch (const ::sql::SQLException& e) {
      if (!routine_unavailable(e)) throw;
      rows = name ? context_.query(c, sql::kListOne, {{"name", std::string(*name)}}) : context_.query(c, sql::kListAll, {});
    }
    return dblock::sql::parse_rows(rows, &dblock::sql::lease_info);
  });
  dblock::sql::set_waiters_if_readable(out, [&] {
    return context_.connections().idempotent(
        [&](Connection& c) { return context_.query(c, sql::kListWaiters, {{"name", std::string(name.value_or(""))}}); });
  });
  return out;
}

std::optional<std::chrono::microseconds> MysqlService::oldest_unreaped() {
  return dblock::sql::optional_us(
      context_.connections().idempotent([&](Connection& c) { return context_.query(c, sql::kOldestUnreaped, {}); }));
}

// ---- the queue, the native wait and the probe ----

std::string MysqlService::grant_gate(std::string_view name) const {
  return internal_key(context_.options().database, context_.options().table_prefix, "grant", name);
}

void MysqlService::leave(std::string_view name, const OwnerSecret& secret) {
  check_name(name);
  const bool granted = context_.connections().idempotent([&](Connection& c) {
    const Rows rows = context_.query(c, sql::kLeaveQueue, {{"name", std::string(name)}, {"secret", secret.hex()}});
    return !rows.empty() && rows.front().get<bool>("mine");
  });
  // A release granted this waiter the lease after it gave up: hand it on.
  if (granted) release(LeaseKey{name, LockMode::kExclusive, &secret, kViaQueue});
}

FairQueue::Position MysqlService::position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
  check_name(name);
  return context_.connections().idempotent([&](Connection& c) {
    const Rows rows =
        context_.query(c, sql::kQueueStatus, {{"name", std::string(name)}, {"secret", secret.hex()}, {"ticket", ticket}});
    Position status;
    const Row& row = rows.at(0);
    status.waiters_ahead = row.get<int>("ahead");
    status.holder_remaining = row.is_null("remaining_us") ? milliseconds(0) : ceil_ms(row.get<std::int64_t>("remaining_us"));
    return status;
  });
}

NativeWait::Turn MysqlService::wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                                             milliseconds max_wait) {
  Turn turn;
  if (max_wait <= milliseconds::zero()) return turn;
  const SteadyClock::time_point sent_at = SteadyClock::now();
  const std::string key(name);
  const std::string hex = secret.hex();
  try {
    const Rows rows = context_.connections().run([&](Connection& c) {
      // The holder is assumed to use this service's beacon delay; the margin covers its beacon
      // thread's wake-up and round trip on a busy machine. Against a holder without beacons this
      // costs a waiter at most that long before it falls back to polling.
      const std::int64_t grace_us = context_.options().beacon_delay.count() + 20'000;
      return context_.query(c, sql::kWaitTurn,
                            {{"key", beacons_.key(name)}, {"gate", grant_gate(name)}, {"name", key}, {"secret", hex},
                             {"ticket", ticket},
                             {"grace_us", grace_us}, {"timeout_us", static_cast<std::int64_t>(max_wait.count()) * 1000}});
    });
    // -1: held with no beacon to block on; NULL: GET_LOCK failed. The engine polls then.
    if (rows.empty() || rows.front().is_null("turn") || rows.front().get<std::int64_t>("turn") < 0) return turn;
    const Row& row = rows.front();
    if (row.get<std::int64_t>("turn") == 2) {
      LeaseGrant grant;
      grant.ticket = ticket;
      grant.fence = row.get<std::int64_t>("fence");
      context_.carried().saw(grant.fence);
      grant.expires_at_us = row.get<std::int64_t>("expires_at_us");
      grant.granted_for = std::chrono::microseconds(row.get<std::int64_t>("granted_for_us"));
      grant.tag = kViaQueue;
      beacons_.hold(key, hex, sent_at + std::chrono::duration_cast<SteadyClock::duration>(grant.granted_for));
      turn.outcome = Outcome::kGranted;
      turn.grant = grant;
      return turn;
    }
    turn.outcome = Outcome::kWoken;
    return turn;
  } catch (const Error&) {
    // Waiting is an optimisation: the next attempt reports real trouble (and finds a grant).
    return turn;
  }
}

milliseconds MysqlService::holder_remaining(std::string_view name, const OwnerSecret& waiter) {
  check_name(name);
  return context_.connections().idempotent([&](Connection& c) {
    const Rows rows = context_.query(c, sql::kRemaining, {{"name", std::string(name)}, {"secret", waiter.hex()}});
    // No row: free.
    return rows.empty() ? milliseconds(0) : dblock::sql::remaining_ms(rows.front().get<std::int64_t>("remaining_us"));
  });
}

// ---- maintenance ----

int MysqlService::current_version(Connection& c) {
  const Rows exists = context_.query(c, sql::kTableExists, {{"table", context_.options().table_prefix + "schema_version"}});
  if (exists.at(0).get<std::int64_t>("table_count") == 0) return 0;
  return context_.query(c, sql::kSchemaVersion, {}).at(0).get<int>("version");
}

int MysqlService::schema_version() {
  return context_.connections().idempotent([&](Connection& c) { return current_version(c); });
}

// Read-only: the schema is this library's and complete (then there is nothing to migrate); a
// schema newer than this library, or missing or older without `create`, throws SchemaError.
bool MysqlService::schema_current(bool create) {
  return context_.connections().idempotent([&](Connection& c) {
    if (dblock::sql::migration_needed(kServiceName, "dblock tables are", current_version(c),
                                      dblock::sql::latest_migration(kMigrations), create)) {
      return false;
    }
    const std::string fence = context_.options().table_prefix + "fence";
    return !create || context_.query(c, sql::kTableExists, {{"table", fence}}).at(0).get<std::int64_t>("table_count") != 0;
  });
}

TimeoutError MysqlService::migration_lock_timeout(Connection& c, const std::string& key, std::chrono::seconds waited) {
  std::string holder = "a session this account cannot see";
  try {
    // The migration's deadline may have passed (an open's own wait): the look gets a call's least.
    const service::CallDeadlineScope look(std::chrono::steady_clock::now());
    const Rows r = context_.query(c, sql::kMigrationLockHolder, {{"key", key}});
    if (!r.empty() && !r.front().is_null("id")) {
      const Row& row = r.front();
      holder = "connection " + std::to_string(row.get<std::int64_t>("id"));
      if (!row.is_null("user")) {
        holder += " (user " + printable(row.get<std::string>("user")) + "@" + printable(row.get<std::string>("host")) + ")";
      }
    }
  } catch (const std::exception&) {
    // Only decoration for the message.
  }
  return TimeoutError("mysql: the migration lock (GET_LOCK '" + key + "') was not free within " +
                          dblock::sql::seconds_text(waited) + "; held by " + holder,
                      kServiceName, "", true);
}

void MysqlService::migrate(bool create) {
  // Most opens find the schema current: they check it without the migration lock, which any
  // account that can connect could hold (a GET_LOCK name) and so keep every open waiting.
  if (schema_current(create)) return;
  const Options& o = context_.options();
  auto c = context_.connections().pool().borrow();
  const auto watch = context_.watch(*c);
  const std::string key = internal_key(o.database, o.table_prefix, "migrate", "");
  // GET_LOCK waits whole seconds.
  const std::chrono::seconds wait = std::chrono::floor<std::chrono::seconds>(dblock::sql::migration_lock_wait());
  bool locked = false;
  try {
    const Rows got = context_.query(*c, sql::kMigrationLock, {{"key", key}, {"timeout_s", std::int64_t{wait.count()}}});
    if (got.empty() || !got.front().get<bool>("got")) throw migration_lock_timeout(*c, key, wait);
    locked = true;
    const int current = current_version(*c);
    const int latest = dblock::sql::latest_migration(kMigrations);
    dblock::sql::check_schema_version(kServiceName, "dblock tables are", current, latest, create);
    // DDL commits implicitly; every migration statement is idempotent (IF NOT EXISTS, INSERT
    // IGNORE, SETVAL), so one interrupted half-way is completed by the next run.
    const auto apply = [&](const dblock::sql::Migration& m) {
      for (const std::string& statement : split_statements(dblock::sql::render_migration(m.sql, o.table_prefix))) {
        c->plain->execute(::sql::SQLString(statement));
      }
    };
    for (const auto& m : kMigrations) {
      if (m.number <= current) continue;
      apply(m);
      context_.update(*c, sql::kRecordMigration, {{"version", std::int64_t{m.number}}, {"name", std::string(m.name)}});
    }
    // The fence sequence dropped by hand: re-applying its migration recreates it above every
    // fence still in the tables and at least at the server time in microseconds.
    if (create && latest >= kFenceSequenceMigration &&
        context_.query(*c, sql::kTableExists, {{"table", o.table_prefix + "fence"}}).at(0).get<std::int64_t>("table_count") == 0) {
      try {
        for (const auto& m : kMigrations) {
          if (m.number == kFenceSequenceMigration) apply(m);
        }
      } catch (const ::sql::SQLException& e) {
        // information_schema shows an account only what it holds a privilege on: to one without
        // rights on the sequence it looks missing, and it may not create one either.
        if (e.getErrorCode() != 1142 && e.getErrorCode() != 1227) throw;
        throw PermissionError("mysql: the fence sequence `" + o.table_prefix + "fence` is missing or this account " +
                                  "holds no privilege on it: grant SELECT, INSERT on it (README, MariaDB), or run " +
                                  "`dblock migrate` as the tables' owner",
                              kServiceName, std::to_string(e.getErrorCode()));
      }
    }
    // Tables made now (on a new primary that never saw them, too) start their fences above the
    // clock, as every connection opened later would have them.
    context_.floor_fences(*c, call_deadline());
    context_.query(*c, sql::kMigrationUnlock, {{"key", key}});
  } catch (const std::exception& e) {
    // Closing the connection also frees the migration lock.
    if (locked || is_broken(*c, e)) c.discard();
    rethrow_translated("migration");
  }
}

std::size_t MysqlService::reap(std::size_t batch) {
  const auto limit = static_cast<std::int64_t>(std::min<std::size_t>(batch, 1'000'000));
  return context_.connections().idempotent([&](Connection& c) {
    std::size_t n = 0;
    for (const auto* statement : {&sql::kReapLeases, &sql::kReapReaders, &sql::kReapWaiters}) {
      n += static_cast<std::size_t>(context_.update(c, *statement, {{"batch", limit}}));
    }
    return n;
  });
}

}  // namespace dblock::mysql
