#include "sqlite_service.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "dblock/service/sql/migration.h"
#include "dblock/service/sql/rows.h"
#include "error_map.h"
#include "lock_file/file_clock.h"
#include "lock_file/file_trust.h"
#include "lock_file/lock_file.h"
#include "sql.h"

namespace dblock::sqlite {

extern const std::vector<dblock::sql::Migration> kMigrations;

namespace {

using std::chrono::milliseconds;
using dblock::sql::remaining_ms;

std::int64_t to_us(milliseconds d) { return d.count() * 1000; }

dblock::sql::Placeholders tables(const std::string& prefix) {
  dblock::sql::Placeholders p = dblock::sql::lease_tables(prefix, &service::quote_identifier);
  p.set('F', service::quote_identifier(prefix + "fence_counter"))
      .set('C', service::quote_identifier(prefix + "clock"))
      .set('N', sql::kNow);
  return p;
}

const Options& checked(const Options& options) {
  service::validate_table_prefix(options.table_prefix);
  if (options.path.empty()) throw UsageError("sqlite: empty database path", "sqlite");
  if (options.busy_timeout <= milliseconds::zero()) throw UsageError("sqlite: busy_timeout must be positive", "sqlite");
  // Deadlines are the steady clock plus this: far beyond a day they overflow.
  if (options.busy_timeout > std::chrono::hours(24)) throw UsageError("sqlite: busy_timeout must be at most a day", "sqlite");
  return options;
}

}  // namespace

SqliteService::SqliteService(Options options)
    : options_(checked(options)),
      registry_(sql::kAll, tables(options_.table_prefix)),
      pool_([this] {
              check_trusted_files(open_path_);  // at every open: a companion may have appeared since
              return open_connection(open_path_, options_.busy_timeout, registry_.size(), options_.adopt_existing);
            },
            [](Connection& c) {
              rollback(c);  // never pool a connection inside a transaction
              return true;
            }) {
  check_trusted_directory(options_.path);  // before creating anything in it
  prepare_lock_file(options_.path, options_.create_directories);
  open_path_ = resolve_directory(options_.path);
  borrow();  // a bad path fails at open(), not at first use
  const std::optional<FileIdentity> opened = file_identity(open_path_);
  if (!opened) throw ConnectionError("sqlite: " + options_.path + " disappeared while it was being opened", "sqlite");
  identity_ = *opened;
  marks_.emplace(open_path_, options_.table_prefix);
  wake_ = WakeFile::open(open_path_, wake_unusable_);
}

std::vector<std::string> SqliteService::degraded() const {
  if (wake_unusable_.empty()) return {};
  return {wake_unusable_};
}

void SqliteService::wake(std::string_view name) const noexcept {
  if (wake_) WakeFile::wake(wake_->slot(options_.table_prefix, name));
}

bool SqliteService::file_is_ours() const { return file_identity(open_path_) == identity_; }

void SqliteService::require_our_file() const {
  if (file_is_ours()) return;
  throw ConnectionError("sqlite: " + options_.path +
                            " was deleted or replaced after this manager opened it; the leases held in it are lost "
                            "(open a new manager to use the file now at that path)",
                        "sqlite");
}

SqliteService::Borrowed SqliteService::borrow_for_lease() {
  const SteadyClock::time_point deadline = call_deadline();
  const SteadyClock::time_point by_timeout = SteadyClock::now() + options_.busy_timeout;
  return borrow_until(deadline == SteadyClock::time_point::max() ? by_timeout : std::max(deadline, by_timeout));
}

SqliteService::Borrowed SqliteService::borrow_until(SteadyClock::time_point busy_until) {
  Borrowed c = pool_.borrow();
  c->busy_deadline = busy_until;
  if (!c->clock_known) sync_file_clock(*c, registry_, options_.table_prefix + "clock");
  return c;
}

ServiceTraits SqliteService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = true;
  traits.permits = true;
  traits.hold_at_least = true;
  return traits;
}

// ---- leases ----

AcquireResult SqliteService::take(Connection& c, const AcquireRequest& request, std::int64_t ticket,
                                  bool in_transaction) {
  // Bound before the row is written, so that no instant shows the row taken and the mark free.
  const HolderMarks::Claim mark = marks_->claim(request.name, *request.secret);
  if (mark == HolderMarks::Claim::kHeldElsewhere) return AcquireResult{};
  AcquireResult result;
  try {
    result = take_row(c, request, ticket, in_transaction);
  } catch (...) {
    marks_->drop(request.name, *request.secret);
    throw;
  }
  if (!result.acquired) marks_->drop(request.name, *request.secret);
  return result;
}

void SqliteService::confirm_grant(const AcquireRequest& request) {
  try {
    require_our_file();
  } catch (...) {
    marks_->drop(request.name, *request.secret);
    throw;
  }
}

AcquireResult SqliteService::take_row(Connection& c, const AcquireRequest& request, std::int64_t ticket,
                                      bool in_transaction) {
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
  std::optional<WriteTxn> tx;
  if (!in_transaction) tx.emplace(c);
  {
    Query row = query(c, sql::kAcquireSharedRow);
    row.bind(1, request.name).bind(2, *request.secret).bind(4, ttl_us);
    bind_ticket(row);
    if (request.permits != 0) row.bind(6, std::int64_t{request.permits}); else row.bind_null(6);
    std::int64_t ignored = 0;
    result.acquired = row.fetch({&result.fence, &ignored});
  }
  if (!result.acquired) check_permits(c, request);
  if (result.acquired) {
    Query reader = query(c, sql::kInsertReader);
    reader.bind(1, request.name).bind(2, *request.secret).bind(3, request.holder).bind(4, ttl_us).bind(5, result.fence);
    if (!reader.fetch({&result.expires_at_us})) throw Error("sqlite: reader row not written", "sqlite");
  }  // statements are finished before COMMIT
  if (tx) tx->commit();
  return result;
}

void SqliteService::check_permits(Connection& c, const AcquireRequest& request) {
  Query q = query(c, sql::kSharedPermits);
  q.bind(1, request.name);
  std::int64_t permits = 0;
  if (q.fetch({&permits}) && permits != request.permits) {
    throw service::permits_mismatch(name(), request.name, permits, request.permits);
  }
}

AcquireResult SqliteService::try_acquire(const AcquireRequest& request) {
  auto c = borrow();
  AcquireResult result = take(*c, request, 0);
  if (result.acquired) {
    confirm_grant(request);
    return result;
  }
  std::int64_t remaining_us = 0;
  Query q = query(*c, sql::kRemaining);
  q.bind(1, request.name);
  q.fetch({&remaining_us});
  result.holder_remaining = remaining_ms(remaining_us);
  return result;
}

std::vector<AcquireResult> SqliteService::try_acquire_all(const std::vector<AcquireRequest>& requests) {
  auto c = borrow();
  std::vector<AcquireResult> results;
  std::size_t marked = 0;  // requests whose holder mark take() kept
  auto drop_marks = [&] {
    for (std::size_t i = 0; i < marked; ++i) marks_->drop(requests[i].name, *requests[i].secret);
  };
  try {
    {
      WriteTxn tx(*c);  // rolls back unless every name was granted, before the marks are dropped
      for (const AcquireRequest& request : requests) {
        results.push_back(take(*c, request, 0, /*in_transaction=*/true));
        if (!results.back().acquired) break;
        ++marked;
      }
      if (marked == requests.size()) tx.commit();
    }
    if (marked < requests.size()) {
      drop_marks();
      return {};  // refused: nothing taken
    }
    for (const AcquireRequest& request : requests) confirm_grant(request);
    return results;
  } catch (...) {
    drop_marks();
    throw;
  }
}

RenewResult SqliteService::renew(const LeaseKey& lease, milliseconds ttl) {
  RenewResult result;
  if (!file_is_ours()) return result;  // not renewed: the lease is lost now, not at its expiry
  auto c = borrow_for_lease();
  if (lease.mode == LockMode::kExclusive) {
    Query q = query(*c, sql::kRenewExclusive);
    q.bind(1, lease.name).bind(2, *lease.secret).bind(3, to_us(ttl));
    result.renewed = q.fetch({&result.expires_at_us});
    return result;
  }
  WriteTxn tx(*c);
  {
    Query q = query(*c, sql::kRenewReader);
    q.bind(1, lease.name).bind(2, *lease.secret).bind(3, to_us(ttl));
    result.renewed = q.fetch({&result.expires_at_us});
  }
  if (result.renewed) query(*c, sql::kExtendSharedRow).bind(1, lease.name).bind(2, result.expires_at_us).run();
  tx.commit();
  return result;
}

void SqliteService::lease_lost(const LeaseKey& lease) noexcept { marks_->drop(lease.name, *lease.secret); }

bool SqliteService::release(const LeaseKey& lease) {
  struct WakeAtExit {
    const SqliteService& service;
    std::string_view name;
    ~WakeAtExit() { service.wake(name); }
  } wake_waiters{*this, lease.name};                              // last: after the mark
  DropMarkAtExit drop_mark(*marks_, lease.name, *lease.secret);  // after the row
  if (!file_is_ours()) return false;  // the lease was in a file the path no longer names: lost
  auto c = borrow_for_lease();
  if (lease.mode == LockMode::kExclusive) {
    if (lease.hold_at_least.count() > 0) {
      query(*c, sql::kReleaseHolding).bind(1, lease.name).bind(2, *lease.secret).bind(3, to_us(lease.hold_at_least)).run();
      if (sqlite3_changes(c->db) == 1) return true;
    }
    query(*c, sql::kReleaseExclusive).bind(1, lease.name).bind(2, *lease.secret).run();
    if (sqlite3_changes(c->db) == 1) return true;
    query(*c, sql::kReleaseExpired).bind(1, lease.name).bind(2, *lease.secret).run();
    return false;
  }
  WriteTxn tx(*c);
  std::int64_t was_live = 0;
  bool held = false;
  {
    Query q = query(*c, sql::kReleaseReader);
    q.bind(1, lease.name).bind(2, *lease.secret);
    held = q.fetch({&was_live}) && was_live != 0;
  }
  query(*c, sql::kShrinkSharedRow).bind(1, lease.name).run();
  tx.commit();
  return held;
}

bool SqliteService::force_release(std::string_view name, std::string_view by) {
  auto c = borrow();
  WriteTxn tx(*c);
  dblock::sql::Row evicted;  // mode, fence, holder
  {
    Query target = query(*c, sql::kForceReleaseTarget);
    target.bind(1, name);
    if (!target.step()) return false;  // nothing live: nothing to evict or record
    for (int i = 0; i < 3; ++i) evicted.push_back(target.value(i));
  }
  std::int64_t new_fence = 0;
  {
    Query update = query(*c, sql::kForceRelease);
    update.bind(1, name);
    if (update.step()) new_fence = update.integer(0);
  }
  query(*c, sql::kForceReleaseReaders).bind(1, name).run();
  query(*c, sql::kRecordForceRelease)
      .bind(1, name)
      .bind(2, by)
      .bind(3, evicted[2])
      .bind(4, evicted[0])
      .bind(5, evicted[1])
      .bind(6, new_fence)
      .run();
  tx.commit();
  wake(name);
  return true;
}

std::vector<ForceReleaseRecord> SqliteService::force_releases(std::optional<std::string_view> name,
                                                              std::size_t limit) {
  auto c = borrow();
  Query q = query(*c, sql::kForceReleaseHistory);
  if (name) q.bind(1, *name); else q.bind_null(1);
  q.bind(2, static_cast<std::int64_t>(limit));
  return dblock::sql::parse_rows(q.rows(), &dblock::sql::force_release_record);
}

std::vector<LeaseInfo> SqliteService::list(std::optional<std::string_view> name) {
  auto c = borrow();
  Query q = query(*c, sql::kList);
  if (name) q.bind(1, *name); else q.bind_null(1);
  std::vector<LeaseInfo> out = dblock::sql::parse_rows(q.rows(), &dblock::sql::lease_info);
  Query waiters = query(*c, sql::kListWaiters);
  if (name) waiters.bind(1, *name); else waiters.bind_null(1);
  dblock::sql::set_waiters(out, waiters.rows());
  return out;
}

// ---- the queue and the probe ----

FairQueue::Attempt SqliteService::attempt_in_line(const AcquireRequest& request, const Place& place) {
  auto c = borrow();
  Attempt out;
  out.result = take(*c, request, place.ticket);
  if (out.result.acquired) {
    if (place.ticket != 0) query(*c, sql::kLeaveQueue).bind(1, request.name).bind(2, *request.secret).run();
    confirm_grant(request);
    return out;
  }
  {
    Query q = query(*c, sql::kQueue);
    q.bind(1, request.name).bind(2, *request.secret).bind(3, to_us(place.hold_for));
    if (place.ticket != 0) q.bind(4, place.ticket); else q.bind_null(4);
    if (!q.fetch({&out.ticket})) throw Error("sqlite: queue entry not written", "sqlite");
  }
  const Position p = position_on(*c, request.name, *request.secret, out.ticket);
  out.position = p.waiters_ahead;
  out.result.holder_remaining = std::max(p.holder_remaining, milliseconds::zero());
  return out;
}

void SqliteService::leave(std::string_view name, const OwnerSecret& secret) {
  auto c = borrow();
  query(*c, sql::kLeaveQueue).bind(1, name).bind(2, secret).run();
  wake(name);  // the next in line may be first now
}

FairQueue::Position SqliteService::position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
  auto c = borrow();
  return position_on(*c, name, secret, ticket);
}

FairQueue::Position SqliteService::position_on(Connection& c, std::string_view name, const OwnerSecret& secret,
                                               std::int64_t ticket) {
  Query q = query(c, sql::kQueuePosition);
  q.bind(1, name).bind(2, secret).bind(3, ticket);
  std::int64_t ahead = 0, remaining_us = 0;
  q.fetch({&ahead, &remaining_us});
  return Position{static_cast<int>(ahead), remaining_ms(remaining_us)};
}

milliseconds SqliteService::holder_remaining(std::string_view name, const OwnerSecret&) {  // no grants here
  auto c = borrow();
  Query q = query(*c, sql::kRemaining);
  q.bind(1, name);
  std::int64_t remaining_us = 0;
  q.fetch({&remaining_us});  // no row: free
  // Held on a file the path no longer names (holder_mark.h): not free, for an unknown time (the
  // probe asks again at its next poll).
  if (remaining_us <= 0 && marks_->held_elsewhere(name)) return milliseconds(10);
  return remaining_ms(remaining_us);
}

NativeWait::Turn SqliteService::wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                                             milliseconds max_wait) {
  std::atomic<std::uint32_t>& slot = wake_->slot(options_.table_prefix, name);
  const SteadyClock::time_point until = SteadyClock::now() + max_wait;
  Turn turn;
  turn.outcome = Outcome::kWoken;  // the engine attempts next
  try {
    for (;;) {
      // The slot's value before the look: whatever frees the name after the look changes it, and
      // the sleep below then returns at once.
      const std::uint32_t seen = slot.load(std::memory_order_seq_cst);
      milliseconds left;  // until the holder's lease ends; max_wait while others are ahead
      if (ticket != 0) {
        const Position p = position(name, secret, ticket);
        left = p.waiters_ahead > 0 ? max_wait : p.holder_remaining;
      } else {
        left = holder_remaining(name, secret);
      }
      const SteadyClock::time_point now = SteadyClock::now();
      if (left <= milliseconds::zero() || now >= until) return turn;
      const auto sleep = std::min<SteadyClock::duration>(left + milliseconds(1), until - now);
      WakeFile::wait(slot, seen, std::chrono::ceil<std::chrono::microseconds>(sleep));
    }
  } catch (const Error&) {
    return Turn{};  // waiting is an optimisation: the engine polls
  }
}

// ---- maintenance ----

void SqliteService::migrate(bool create) {
  auto c = borrow();
  const int latest = dblock::sql::latest_migration(kMigrations);
  const std::string where = "dblock tables in " + options_.path + " are";
  // Without the write lock first: every open checks the schema, and most find it current.
  if (!dblock::sql::migration_needed("sqlite", where, read_schema_version(*c), latest, create)) return;
  WriteTxn tx(*c);  // the migration lock: SQLite's database write lock
  const int current = read_schema_version(*c);
  dblock::sql::check_schema_version("sqlite", where, current, latest, create);
  for (const auto& m : kMigrations) {
    if (m.number <= current) continue;
    const std::string script = dblock::sql::render_migration(m.sql, options_.table_prefix);
    char* error = nullptr;
    if (sqlite3_exec(c->db, script.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
      const std::string what = error ? error : "";
      sqlite3_free(error);
      throw SchemaError("sqlite: migration " + std::string(m.name) + " failed: " + what, "sqlite");
    }
    query(*c, sql::kRecordMigration).bind(1, static_cast<std::int64_t>(m.number)).bind(2, std::string_view(m.name)).run();
  }
  tx.commit();
  sync_file_clock(*c, registry_, options_.table_prefix + "clock");
}

int SqliteService::schema_version() {
  auto c = borrow();
  return read_schema_version(*c);
}

int SqliteService::read_schema_version(Connection& c) {
  {
    Query q = query(c, sql::kTableExists);
    q.bind(1, std::string_view(options_.table_prefix + "schema_version"));
    if (!q.step() || q.integer(0) == 0) return 0;
  }
  Query q = query(c, sql::kSchemaVersion);
  return q.step() ? static_cast<int>(q.integer(0)) : 0;
}

// Reads first and writes only when something is due, so that the reapers of many processes sharing
// the file do not queue for its write lock; the write lock is waited for only until the call's
// deadline. Busy there means another process is writing: nothing is reaped now and nothing is
// reported (a later pass, this process's or another's, reaps).
std::size_t SqliteService::reap(std::size_t batch) {
  auto c = borrow();
  std::int64_t due = 0;
  query(*c, sql::kReapDue).fetch({&due});
  if (due == 0) return 0;
  try {
    return reap_on(*c, batch);
  } catch (const TimeoutError&) {
    return 0;
  }
}

std::optional<std::chrono::microseconds> SqliteService::oldest_unreaped() {
  auto c = borrow();
  return dblock::sql::optional_us(query(*c, sql::kOldestUnreaped).rows());
}

std::size_t SqliteService::reap_on(Connection& c, std::size_t batch) {
  std::size_t n = 0;
  for (const auto* statement : {&sql::kReapLeases, &sql::kReapReaders, &sql::kReapWaiters}) {
    query(c, *statement).bind(1, static_cast<std::int64_t>(batch)).run();
    n += static_cast<std::size_t>(sqlite3_changes(c.db));
  }
  return n;
}

}  // namespace dblock::sqlite
