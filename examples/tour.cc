// The README's "Library usage" tour as a complete program: `tour URL` (CI runs it on SQLite).
// The lines between the snippet markers are README's text, byte for byte
// (scripts/check-snippets.sh compares them); the rest gives the tour what it names.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include <dblock/dblock.h>

namespace {

int steps_left = 3;
bool more_work() { return steps_left > 0; }
void step() { --steps_left; }
void log_line(const std::string& text) { std::printf("%s\n", text.c_str()); }
void warn(const char* text) { std::fprintf(stderr, "warning: %s\n", text); }
void process_order(int id, std::int64_t fence) { std::printf("order %d under fence %lld\n", id, static_cast<long long>(fence)); }
void migrate(std::int64_t fence) { std::printf("migrating under fence %lld\n", static_cast<long long>(fence)); }
void transfer(const std::vector<dblock::Lease>& both) { std::printf("transfer holding %zu leases\n", both.size()); }
void audit(const std::string& by, const std::string& evicted) { std::printf("%s evicted %s\n", by.c_str(), evicted.c_str()); }

// The tables the tour writes to; an application has its own.
void create_tables(dblock::LockManager& locks) {
  dblock::sql::Database(locks).run_in_transaction_lock("tour-setup", std::chrono::seconds(5), [](dblock::Transaction& tx) {
    tx.execute("CREATE TABLE IF NOT EXISTS reports (id BIGINT PRIMARY KEY, body TEXT, fence BIGINT)");
    tx.execute("CREATE TABLE IF NOT EXISTS accounts (id BIGINT PRIMARY KEY, balance BIGINT, version BIGINT)");
    tx.execute("INSERT INTO reports (id, body, fence) VALUES (1, '', 0) ON CONFLICT DO NOTHING");
    tx.execute("INSERT INTO accounts (id, balance, version) VALUES (1, 100, 0) ON CONFLICT DO NOTHING");
  });
}

int tour(const std::string& url) {
  {
    auto setup = dblock::open(url);
    create_tables(*setup);
  }
  // snippet-begin: tour
#include <dblock/dblock.h>

auto locks = dblock::open(url);  // e.g. "sqlite:///var/lib/myapp/locks.db"; one per process; thread-safe

// Try once.
if (auto lease = locks->try_acquire("orders/123")) {
  process_order(123, lease->fence());          // pass the fence to what you write to
}                                              // ~Lease releases

// Wait up to 5 s; learn about loss.
dblock::AcquireOptions options;
options.ttl = std::chrono::seconds(10);        // renewed every ttl/3 by the manager's thread
options.on_lost = [](const dblock::LostLease& l) { log_line("lost " + l.name + ": " + l.reason); };
auto lease = locks->acquire("nightly-report", std::chrono::seconds(5), options);
if (!lease) return 1;                          // not acquired in time: a result, not an exception
while (!lease->lost() && more_work()) step();

// Guarded write: commits only while the lease is held with its fence (else LeaseLostError, nothing written).
dblock::sql::Database db(*locks);  // the SQL-only calls (SQLite, PostgreSQL, MariaDB)
db.run_guarded(*lease, [&](dblock::Transaction& tx) {
  tx.execute("UPDATE reports SET body = ?, fence = ? WHERE id = ?", {"done", lease->fence(), std::int64_t{1}});
});
switch (lease->release()) {
  case dblock::ReleaseResult::kReleased: break;
  case dblock::ReleaseResult::kAlreadyLost: warn("lost before release: someone else may have run too"); break;
  case dblock::ReleaseResult::kInDoubt: warn("release not confirmed; the lease expires at its TTL"); break;
  case dblock::ReleaseResult::kShutDown: break;  // ~LockManager released it first
}

// Run a function only while holding a name, and learn whether it ran (and held to the end).
dblock::LeaseRun ran = locks->with_lease("hourly-sync", std::chrono::seconds(1),
                                         [](dblock::Lease& held, std::stop_token stop) {
  while (!stop.stop_requested() && more_work()) step();  // asked to stop if the lease is lost
  process_order(7, held.fence());
});
if (ran == dblock::LeaseRun::kNotAcquired) log_line("another process is syncing");

// std::mutex-style, with try_lock_for (TimedLockable).
dblock::Mutex m(*locks, "schema-migration");
if (std::unique_lock guard(m, std::chrono::seconds(30)); guard) migrate(m.fence());

// Several names, all or none (taken in sorted order; what was taken is given back on a refusal).
if (auto both = locks->acquire_all({"account/7", "account/3"}, std::chrono::seconds(5))) transfer(*both);

// Shared (read) leases and reentrancy.
dblock::AcquireOptions read;  read.mode = dblock::LockMode::kShared;
dblock::AcquireOptions again; again.reentrant = true;   // same thread: counts holds, same fence
auto reader = locks->acquire("catalog", std::chrono::seconds(1), read);

// Optimistic version column: one compare-and-set statement, bounded jittered retry.
bool updated = dblock::retry_optimistic([&] {
  std::optional<std::int64_t> v = db.read_version("accounts", "id", std::int64_t{1}, "version");
  if (!v) throw std::runtime_error("no account 1");
  return db.compare_and_set({"accounts", "id", std::int64_t{1}, "version", *v, {{"balance", std::int64_t{90}}}});
});

// Admin: evict whoever holds a name (recorded: who, when, whom, fences), and read the record.
locks->force_release("catalog");
for (const dblock::ForceReleaseRecord& r : locks->force_release_history("catalog")) audit(r.by, r.evicted);

// Transaction lock (SQLite: BEGIN IMMEDIATE, which excludes every other writer of the file).
db.run_in_transaction_lock("daily-totals", std::chrono::seconds(5), [](dblock::Transaction& tx) {
  tx.execute("UPDATE accounts SET balance = balance + 1 WHERE id = ?", {std::int64_t{1}});
});
  // snippet-end: tour
  // What the tour must have done (CI fails the example otherwise).
  if (!updated || ran != dblock::LeaseRun::kCompleted || !reader || locks->force_release_history("catalog").empty()) {
    std::fprintf(stderr, "tour: unexpected outcome\n");
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tour URL\n");
    return 2;
  }
  try {
    return tour(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tour: %s\n", e.what());
    return 1;
  }
}
