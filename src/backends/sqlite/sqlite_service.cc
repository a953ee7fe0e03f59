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
using dblock::sql::Row;
using dblock::sql::unless_zero;

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
  if (request.mode == LockMode::kExclusive) {
    query(c, sql::kAcquireExclusive,
          {{"name", request.name}, {"secret", *request.secret}, {"holder", request.holder}, {"ttl_us", ttl_us},
           {"ticket", unless_zero(ticket)}})
        .run();
    result.acquired = sqlite3_changes(c.db) == 1;
    result.fence = c.issued_fence;
    result.expires_at_us = c.issued_expiry;
    return result;
  }
  std::optional<WriteTxn> tx;
  if (!in_transaction) tx.emplace(c);
  {
    const std::optional<Row> row =
        query(c, sql::kAcquireSharedRow,
              {{"name", request.name}, {"secret", *request.secret}, {"ttl_us", ttl_us},
               {"ticket", unless_zero(ticket)}, {"permits", unless_zero(request.permits)}})
            .fetch();
    result.acquired = row.has_value();
    if (row) result.fence = row->get<std::int64_t>("fence");
  }
  if (!result.acquired) check_permits(c, request);
  if (result.acquired) {
    const std::optional<Row> reader =
        query(c, sql::kInsertReader,
              {{"name", request.name}, {"secret", *request.secret}, {"holder", request.holder}, {"ttl_us", ttl_us},
               {"fence", result.fence}})
            .fetch();
    if (!reader) throw Error("sqlite: reader row not written", "sqlite");
    result.expires_at_us = reader->get<std::int64_t>("expires_at_us");
  }  // statements are finished before COMMIT
  if (tx) tx->commit();
  return result;
}

void SqliteService::check_permits(Connection& c, const AcquireRequest& request) {
  const std::optional<Row> row = query(c, sql::kSharedPermits, {{"name", request.name}}).fetch();
  const std::int64_t permits = row ? row->get<std::int64_t>("permits") : 0;
  if (row && permits != request.permits) {
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
  const std::optional<Row> row = query(*c, sql::kRemaining, {{"name", request.name}}).fetch();
  result.holder_remaining = remaining_ms(row ? row->get<std::int64_t>("remaining_us") : 0);
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
  const dblock::sql::Args args{{"name", lease.name}, {"secret", *lease.secret}, {"ttl_us", to_us(ttl)}};
  auto renewed = [&](const std::optional<Row>& row) {
    result.renewed = row.has_value();
    if (row) result.expires_at_us = row->get<std::int64_t>("expires_at_us");
  };
  if (lease.mode == LockMode::kExclusive) {
    renewed(query(*c, sql::kRenewExclusive, args).fetch());
    return result;
  }
  WriteTxn tx(*c);
  renewed(query(*c, sql::kRenewReader, args).fetch());
  if (result.renewed) {
    query(*c, sql::kExtendSharedRow, {{"name", lease.name}, {"expires_at_us", result.expires_at_us}}).run();
  }
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
  const dblock::sql::Args owner{{"name", lease.name}, {"secret", *lease.secret}};
  if (lease.mode == LockMode::kExclusive) {
    if (lease.hold_at_least.count() > 0) {
      query(*c, sql::kReleaseHolding,
            {{"name", lease.name}, {"secret", *lease.secret}, {"hold_us", to_us(lease.hold_at_least)}})
          .run();
      if (sqlite3_changes(c->db) == 1) return true;
    }
    query(*c, sql::kReleaseExclusive, owner).run();
    if (sqlite3_changes(c->db) == 1) return true;
    query(*c, sql::kReleaseExpired, owner).run();
    return false;
  }
  WriteTxn tx(*c);
  bool held = false;
  {
    const std::optional<Row> row = query(*c, sql::kReleaseReader, owner).fetch();
    held = row && row->get<bool>("was_live");
  }
  query(*c, sql::kShrinkSharedRow, {{"name", lease.name}}).run();
  tx.commit();
  return held;
}

bool SqliteService::force_release(std::string_view name, std::string_view by) {
  auto c = borrow();
  WriteTxn tx(*c);
  const std::optional<Row> evicted = query(*c, sql::kForceReleaseTarget, {{"name", name}}).fetch();
  if (!evicted) return false;  // nothing live: nothing to evict or record
  const std::optional<Row> freed = query(*c, sql::kForceRelease, {{"name", name}}).fetch();
  query(*c, sql::kForceReleaseReaders, {{"name", name}}).run();
  query(*c, sql::kRecordForceRelease,
        {{"name", name},
         {"by", by},
         {"holder", evicted->at("holder")},
         {"mode", evicted->at("mode")},
         {"old_fence", evicted->at("fence")},
         {"new_fence", freed ? freed->get<std::int64_t>("fence") : 0}})
      .run();
  tx.commit();
  wake(name);
  return true;
}

std::vector<ForceReleaseRecord> SqliteService::force_releases(std::optional<std::string_view> name,
                                                              std::size_t limit) {
  auto c = borrow();
  Query q = query(*c, sql::kForceReleaseHistory, {{"name", name}, {"limit", limit}});
  return dblock::sql::parse_rows(q.rows(), &dblock::sql::force_release_record);
}

std::vector<LeaseInfo> SqliteService::list(std::optional<std::string_view> name) {
  auto c = borrow();
  std::vector<LeaseInfo> out =
      dblock::sql::parse_rows(query(*c, sql::kList, {{"name", name}}).rows(), &dblock::sql::lease_info);
  dblock::sql::set_waiters(out, query(*c, sql::kListWaiters, {{"name", name}}).rows());
  return out;
}

// ---- the queue and the probe ----

FairQueue::Attempt SqliteService::attempt_in_line(const AcquireRequest& request, const Place& place) {
  auto c = borrow();
  Attempt out;
  out.result = take(*c, request, place.ticket);
  if (out.result.acquired) {
    if (place.ticket != 0) query(*c, sql::kLeaveQueue, {{"name", request.name}, {"secret", *request.secret}}).run();
    confirm_grant(request);
    return out;
  }
  {
    const std::optional<Row> row =
        query(*c, sql::kQueue,
              {{"name", request.name}, {"secret", *request.secret}, {"queue_us", to_us(place.hold_for)},
               {"ticket", unless_zero(place.ticket)}})
            .fetch();
    if (!row) throw Error("sqlite: queue entry not written", "sqlite");
    out.ticket = row->get<std::int64_t>("ticket");
  }
  const Position p = position_on(*c, request.name, *request.secret, out.ticket);
  out.position = p.waiters_ahead;
  out.result.holder_remaining = std::max(p.holder_remaining, milliseconds::zero());
  return out;
}

void SqliteService::leave(std::string_view name, const OwnerSecret& secret) {
  auto c = borrow();
  query(*c, sql::kLeaveQueue, {{"name", name}, {"secret", secret}}).run();
  wake(name);  // the next in line may be first now
}

FairQueue::Position SqliteService::position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
  auto c = borrow();
  return position_on(*c, name, secret, ticket);
}

FairQueue::Position SqliteService::position_on(Connection& c, std::string_view name, const OwnerSecret& secret,
                                               std::int64_t ticket) {
  const std::optional<Row> row =
      query(c, sql::kQueuePosition, {{"name", name}, {"secret", secret}, {"ticket", ticket}}).fetch();
  if (!row) return Position{0, milliseconds::zero()};
  return Position{row->get<int>("ahead"), remaining_ms(row->get<std::int64_t>("remaining_us"))};
}

milliseconds SqliteService::holder_remaining(std::string_view name, const OwnerSecret&) {  // no grants here
  auto c = borrow();
  const std::optional<Row> row = query(*c, sql::kRemaining, {{"name", name}}).fetch();
  const std::int64_t remaining_us = row ? row->get<std::int64_t>("remaining_us") : 0;  // no row: free
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
    query(*c, sql::kRecordMigration, {{"version", m.number}, {"migration", m.name}}).run();
  }
  tx.commit();
  sync_file_clock(*c, registry_, options_.table_prefix + "clock");
}

int SqliteService::schema_version() {
  auto c = borrow();
  return read_schema_version(*c);
}

int SqliteService::read_schema_version(Connection& c) {
  const std::optional<Row> exists =
      query(c, sql::kTableExists, {{"table", options_.table_prefix + "schema_version"}}).fetch();
  if (!exists || exists->get<std::int64_t>("table_count") == 0) return 0;
  const std::optional<Row> version = query(c, sql::kSchemaVersion).fetch();
  return version ? version->get<int>("version") : 0;
}

// Reads first and writes only when something is due, so that the reapers of many processes sharing
// the file do not queue for its write lock; the write lock is waited for only until the call's
// deadline. Busy there means another process is writing: nothing is reaped now and nothing is
// reported (a later pass, this process's or another's, reaps).
std::size_t SqliteService::reap(std::size_t batch) {
  auto c = borrow();
  const std::optional<Row> due = query(*c, sql::kReapDue).fetch();
  if (!due || !due->get<bool>("due")) return 0;
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
    query(c, *statement, {{"batch", batch}}).run();
    n += static_cast<std::size_t>(sqlite3_changes(c.db));
  }
  return n;
}

}  // namespace dblock::sqlite
