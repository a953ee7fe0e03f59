// SQLite's own cases (the suite's context: sqlite_context.cc), run in the plain build.
#include <catch2/catch.hpp>
#include <sqlite3.h>

#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "context.h"
#include "sqlite_context.h"
#include "dblock/sqlite/sqlite.h"
#include "process.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The schema objects of a database file, normalised: "type name: sql" sorted.
std::vector<std::string> schema_of(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY type, name",
                             -1, &stmt, nullptr) == SQLITE_OK);
  std::vector<std::string> out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::string sql = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 2));
    // Whitespace runs squeezed to one space, and none before ',' or ')' (ALTER TABLE ADD COLUMN
    // writes the new column after the newline that preceded the closing parenthesis).
    std::string squeezed;
    for (char c : sql) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!squeezed.empty() && squeezed.back() != ' ') squeezed += ' ';
      } else {
        if ((c == ',' || c == ')') && !squeezed.empty() && squeezed.back() == ' ') squeezed.pop_back();
        squeezed += c;
      }
    }
    out.push_back(std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0))) + " " +
                  reinterpret_cast<const char*>(sqlite3_column_text(stmt, 1)) + ": " + squeezed);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return out;
}

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

}  // namespace

TEST_CASE("sqlite: a symbolic link at the lock file's name is refused, and its target left alone", "[sqlite][files]") {
  TempDir dir;
  const std::string target = dir.file("elsewhere.db");
  { std::ofstream touch(target); }  // an empty file someone owns: SQLite would make it a database
  const std::string link = dir.file("locks.db");
  REQUIRE(::symlink(target.c_str(), link.c_str()) == 0);
  std::string message;
  try {
    dblock::open("sqlite://" + link);
  } catch (const ConnectionError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("symbolic link") != std::string::npos);
  CHECK(std::filesystem::file_size(target) == 0);
  CHECK_FALSE(std::filesystem::exists(target + "-wal"));
  // A link among the directories is the user's choice, and followed.
  std::filesystem::create_directory(dir.file("real"));
  REQUIRE(::symlink(dir.file("real").c_str(), dir.file("linked").c_str()) == 0);
  CHECK(dblock::open("sqlite://" + dir.file("linked/locks.db"))->try_acquire("k"));
  CHECK(std::filesystem::exists(dir.file("real/locks.db")));
}

TEST_CASE("sqlite: a new lock file is 0600 and new directories 0700 whatever the umask", "[sqlite][files]") {
  TempDir dir;
  const std::string path = dir.file("state/dblock/locks.db");
  const mode_t old_umask = ::umask(022);
  auto manager = dblock::open("sqlite://" + path);
  ::umask(old_umask);
  REQUIRE(manager->try_acquire("k"));  // the WAL and shared-memory files exist now
  auto mode = [](const std::string& p) { return std::filesystem::status(p).permissions() & std::filesystem::perms::all; };
  using std::filesystem::perms;
  CHECK(mode(path) == (perms::owner_read | perms::owner_write));
  CHECK(mode(path + "-wal") == (perms::owner_read | perms::owner_write));
  CHECK(mode(dir.file("state")) == perms::owner_all);
  CHECK(mode(dir.file("state/dblock")) == perms::owner_all);
}

// docs/backends/sqlite.md, "Waiting": waiters sleep on the lock file's wake file.
TEST_CASE("sqlite: the wake file is 0600 beside the lock file; a link or a file others may write is refused",
          "[sqlite][files][wake]") {
  TempDir dir;
  const std::string path = dir.file("locks.db");
  {
    auto manager = dblock::open("sqlite://" + path);
    using std::filesystem::perms;
    CHECK((std::filesystem::status(path + "-wake").permissions() & perms::all) == (perms::owner_read | perms::owner_write));
    CHECK(std::filesystem::file_size(path + "-wake") == 4096);
  }
  auto refused = [&](const std::string& why) {
    try {
      dblock::open("sqlite://" + path);
    } catch (const ConnectionError& e) {
      INFO(e.what());
      return std::string(e.what()).find(why) != std::string::npos;
    }
    return false;
  };
  REQUIRE(::chmod((path + "-wake").c_str(), 0622) == 0);
  CHECK(refused("-wake"));
  REQUIRE(::chmod((path + "-wake").c_str(), 0600) == 0);
  if (::geteuid() == 0) {  // another user's wake file (root may give it away)
    REQUIRE(::chown((path + "-wake").c_str(), 65534, 65534) == 0);
    CHECK(refused("-wake"));
  }
  std::filesystem::remove(path + "-wake");
  const std::string target = dir.file("elsewhere");
  { std::ofstream touch(target); }
  REQUIRE(::symlink(target.c_str(), (path + "-wake").c_str()) == 0);
  CHECK(refused("symbolic link"));
  CHECK(std::filesystem::file_size(target) == 0);  // never written through the link
}

// A waiter in another manager (another process would do the same: the wake goes through the
// file) is woken by the release, not by its poll: both polls are set to 5 s here.
TEST_CASE("sqlite: a release wakes a waiter of another manager through the wake file", "[sqlite][wake]") {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("locks.db");
  ManagerOptions slow;
  slow.min_poll = 5s;
  slow.max_poll = 5s;
  auto holder = dblock::open(url, slow);
  auto waiter_manager = dblock::open(url, slow);
  for (int round = 0; round < 5; ++round) {
    auto lease = holder->try_acquire("woken");
    REQUIRE(lease);
    std::optional<Lease> taken;
    std::chrono::steady_clock::time_point taken_at;
    std::thread waiter([&] {
      taken = waiter_manager->acquire("woken", 20s);
      taken_at = std::chrono::steady_clock::now();
    });
    std::this_thread::sleep_for(50ms);  // the waiter is asleep by now (or still asking: either way woken)
    const auto released_at = std::chrono::steady_clock::now();
    REQUIRE(lease->release() == ReleaseResult::kReleased);
    waiter.join();
    REQUIRE(taken);
    CHECK(taken_at - released_at < 1s);  // a 5 s poll could not have done it
    taken->release();
  }
}

// A waiter SIGKILLed while it waits (asleep on the wake slot, or about to be) leaves nothing that
// holds the line up: the slot is a counter, not a lock, and its queue entry ends within the queue
// hold (a second). Were the line held up, the next waiter would wait out its whole 20 s.
TEST_CASE("sqlite: a waiter SIGKILLed in its wait holds nobody up", "[sqlite][wake][faults]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto held = manager->try_acquire("killed-waiter");
  REQUIRE(held);
  Child waiter({self_path(), "--child", "hold", prefix, "killed-waiter", "5000"});  // waits up to 10 s
  const auto queued_by = std::chrono::steady_clock::now() + 10s;
  for (;;) {
    const auto info = manager->inspect("killed-waiter");
    if (info && info->waiters == 1) break;
    REQUIRE(std::chrono::steady_clock::now() < queued_by);
    std::this_thread::sleep_for(5ms);
  }
  waiter.signal(SIGKILL);
  REQUIRE(waiter.wait(10s));
  auto other = open_manager({}, prefix);
  std::optional<Lease> next;
  std::chrono::steady_clock::time_point taken_at;
  std::thread next_waiter([&] {
    next = other->acquire("killed-waiter", 20s);
    taken_at = std::chrono::steady_clock::now();
  });
  const auto released_at = std::chrono::steady_clock::now();
  REQUIRE(held->release() == ReleaseResult::kReleased);
  next_waiter.join();
  REQUIRE(next);
  CHECK(taken_at - released_at < 5s);
  CHECK(next->release() == ReleaseResult::kReleased);
}

// A wake file that cannot be used (here a directory sits at its path; a read-only directory or a
// full disk do the same) is said once per manager, and the waiters poll instead: never a hang.
TEST_CASE("sqlite: an unusable wake file is said once, and waiters poll instead", "[sqlite][wake]") {
  TempDir dir;
  const std::string path = dir.file("locks.db");
  std::filesystem::create_directory(path + "-wake");
  ::chmod((path + "-wake").c_str(), 0700);
  std::mutex mutex;
  std::vector<std::string> said;
  ManagerOptions options;
  options.on_background_error = [&](const Error& e) {
    if (dynamic_cast<const DegradedError*>(&e) == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex);
    said.push_back(e.what());
  };
  auto holder = dblock::open("sqlite://" + path, options);
  auto waiter_manager = dblock::open("sqlite://" + path, options);
  auto lease = holder->try_acquire("polled");
  REQUIRE(lease);
  std::optional<Lease> taken;
  std::thread waiter([&] { taken = waiter_manager->acquire("polled", 20s); });
  std::this_thread::sleep_for(50ms);  // the waiter is polling by now (or still asking: either way it takes it)
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  waiter.join();
  REQUIRE(taken);
  taken->release();
  std::lock_guard<std::mutex> lock(mutex);
  REQUIRE(said.size() == 2);  // once per manager, not per wait
  for (const std::string& line : said) {
    INFO(line);
    CHECK(line.find(path + "-wake") != std::string::npos);
    CHECK(line.find("poll") != std::string::npos);
  }
}

TEST_CASE("sqlite: another application's database is refused, never converted; adopt=yes shares it", "[sqlite][files]") {
  TempDir dir;
  const std::string path = dir.file("app.db");
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "CREATE TABLE orders (id INTEGER PRIMARY KEY)", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  const std::vector<std::string> before = schema_of(path);

  std::string message;
  try {
    dblock::open("sqlite://" + path);
  } catch (const SchemaError& e) {
    message = e.what();
  }
  INFO(message);
  CHECK(message.find("another application") != std::string::npos);
  CHECK(schema_of(path) == before);
  CHECK_FALSE(std::filesystem::exists(path + "-wal"));  // still in its own journal mode

  auto manager = dblock::open("sqlite://" + path + "?adopt=yes");
  CHECK(manager->try_acquire("k"));
  CHECK(schema_of(path).size() > before.size());
  // Once it holds dblock's tables, it is dblock's too: no parameter needed.
  CHECK(dblock::open("sqlite://" + path)->try_acquire("k2"));
}

TEST_CASE("sqlite: migrations reproduce schema/sqlite.sql", "[sqlite][schema]") {
  TempDir dir;
  {
    ManagerOptions options;
    options.table_prefix = "dblock_";
    options.reaper = false;
    auto manager = dblock::open("sqlite://" + dir.file("migrated.db"), options);
    CHECK(manager->schema_version() >= 1);
  }
  const std::string schema = replace_all(read_file(DBLOCK_SOURCE_DIR "/schema/sqlite.sql"), "{{prefix}}", "dblock_");
  REQUIRE_FALSE(schema.empty());
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(dir.file("fresh.db").c_str(), &db) == SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, schema.c_str(), nullptr, nullptr, &error);
  INFO((error ? error : ""));
  REQUIRE(rc == SQLITE_OK);
  sqlite3_close(db);
  CHECK(schema_of(dir.file("migrated.db")) == schema_of(dir.file("fresh.db")));
}

TEST_CASE("sqlite: migrating twice is a no-op and a newer schema is refused", "[sqlite][schema]") {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("m.db");
  ManagerOptions options;
  options.reaper = false;
  int version;
  {
    auto manager = dblock::open(url, options);
    version = manager->schema_version();
    manager->migrate();
    CHECK(manager->schema_version() == version);
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(dir.file("m.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "INSERT INTO dblock_schema_version VALUES (9999, 'future', 0)", nullptr, nullptr, nullptr) ==
          SQLITE_OK);
  sqlite3_close(db);
  CHECK_THROWS_AS(dblock::open(url, options), SchemaError);
}

// Schema 2 replaced stored owner secrets by their digests: a lease taken before the upgrade is
// still its owner's (the secret renews it), and what the file shows renews nothing.
TEST_CASE("sqlite: upgrading to schema 2 keeps held leases their owners'", "[sqlite][schema][secret]") {
  TempDir dir;
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(dir.file("old.db").c_str(), &db) == SQLITE_OK);
  const std::string initial =
      replace_all(read_file(DBLOCK_SOURCE_DIR "/migrations/sqlite/0001_initial.sql"), "{{prefix}}", "dblock_");
  REQUIRE_FALSE(initial.empty());
  const std::string old_lease =
      "INSERT INTO dblock_schema_version VALUES (1, '0001_initial', 0);"
      "INSERT INTO dblock_leases (name, owner_secret, holder, mode, fence, acquired_at_us, expires_at_us, renewals)"
      " VALUES ('held-by-old', x'abababababababababababababababab', 'old', 'exclusive', 7, 0,"
      " CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) + 3600000000, 0);";
  REQUIRE(sqlite3_exec(db, (initial + old_lease).c_str(), nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);

  ManagerOptions options;
  options.reaper = false;
  auto manager = dblock::open("sqlite://" + dir.file("old.db"), options);
  CHECK(manager->schema_version() >= 2);
  OwnerSecret old_secret;
  old_secret.bytes.fill(0xab);
  const std::string stored = stored_owner_in(dir.file("old.db"), "dblock_", "leases", "held-by-old");
  CHECK(stored == digest_hex(old_secret));
  CHECK_FALSE(manager->try_acquire("held-by-old"));
  ServiceDriver driver(*manager);
  CHECK(driver.renew("held-by-old", LockMode::kExclusive, old_secret, std::chrono::hours(1)).renewed);
  CHECK_FALSE(driver.renew("held-by-old", LockMode::kExclusive, secret_from_hex(stored), std::chrono::hours(1)).renewed);
  CHECK(driver.release("held-by-old", LockMode::kExclusive, old_secret));
}

// Expiries are on the lock file's clock: the machine's boot clock plus a base kept per boot in the
// file. A file whose clock names another boot (the machine rebooted since) moves the base above
// every stored time: a lease written in the earlier boot, however far its expiry, is free.
TEST_CASE("sqlite: leases of an earlier boot count as expired", "[sqlite][clock]") {
  TempDir dir;
  const std::string path = dir.file("boot.db");
  ManagerOptions options;
  options.reaper = false;
  std::int64_t fence_before = 0;
  {
    auto manager = dblock::open("sqlite://" + path, options);
    auto lease = manager->try_acquire("other");
    REQUIRE(lease);
    fence_before = lease->fence();
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  // A lease of the earlier boot, an hour from expiring (a new file's scale starts at the wall clock).
  const char* earlier_boot =
      "UPDATE dblock_clock SET boot_id = 'an-earlier-boot';"
      "INSERT INTO dblock_leases (name, owner_secret, holder, mode, fence, acquired_at_us, expires_at_us, renewals)"
      " SELECT 'k', x'abababababababababababababababab', 'old', 'exclusive', value + 1, 0,"
      " CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER) + 3600000000, 0 FROM dblock_fence_counter;";
  char* error = nullptr;
  const int rc = sqlite3_exec(db, earlier_boot, nullptr, nullptr, &error);
  INFO((error ? error : ""));
  sqlite3_free(error);
  REQUIRE(rc == SQLITE_OK);
  sqlite3_close(db);

  auto manager = dblock::open("sqlite://" + path, options);
  CHECK_FALSE(manager->inspect("k"));
  auto lease = manager->try_acquire("k");
  REQUIRE(lease);
  CHECK(lease->fence() > fence_before + 1);
  // This boot's leases are live as usual, and list shows wall-clock times.
  auto other = manager->try_acquire("other");
  REQUIRE(other);
  const std::optional<LeaseInfo> info = manager->inspect("k");
  REQUIRE(info);
  const auto wall_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::system_clock::now().time_since_epoch()).count();
  CHECK(std::llabs(info->expires_at_us - (wall_us + 30'000'000)) < 2'000'000);
  CHECK_FALSE(dblock::open("sqlite://" + path, options)->try_acquire("k"));
}

TEST_CASE("sqlite: concurrent first use migrates once", "[sqlite][schema]") {
  TempDir dir;
  const std::string url = "sqlite://" + dir.file("race.db");
  std::vector<std::thread> threads;
  std::atomic<int> acquired{0};
  std::atomic<int> failed{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      try {
        ManagerOptions options;
        options.reaper = false;
        auto m = dblock::open(url, options);
        if (m->try_acquire("x" + std::to_string(i))) ++acquired;  // distinct names: each must get its own
      } catch (const std::exception&) {
        ++failed;
      }
    });
  }
  for (auto& t : threads) t.join();
  CHECK(failed == 0);
  CHECK(acquired == 4);
  // Each migration recorded once, as many as there are (a second migrator would have failed on
  // the version's key, or applied one twice).
  std::size_t migrations = 0;
  for (const auto& f : std::filesystem::directory_iterator(std::string(DBLOCK_SOURCE_DIR) + "/migrations/sqlite")) {
    migrations += f.path().extension() == ".sql";
  }
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(dir.file("race.db").c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* count = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT COUNT(*), COUNT(DISTINCT version) FROM dblock_schema_version", -1, &count,
                             nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(count) == SQLITE_ROW);
  CHECK(static_cast<std::size_t>(sqlite3_column_int64(count, 0)) == migrations);
  CHECK(sqlite3_column_int64(count, 1) == sqlite3_column_int64(count, 0));
  sqlite3_finalize(count);
  sqlite3_close(db);
}

TEST_CASE("sqlite: transaction lock (BEGIN IMMEDIATE) excludes other writers", "[sqlite][txlock]") {
  auto a = open_manager({}, unique_prefix());
  auto b = open_manager({}, unique_prefix());
  std::atomic<bool> inside{false};
  std::atomic<bool> b_result{true};
  bool ran = dblock::sql::Database(*a).run_in_transaction_lock("tx", 1s, [&](Transaction& tx) {
    tx.execute("CREATE TABLE IF NOT EXISTS txlock_demo (v INTEGER)");
    tx.execute("INSERT INTO txlock_demo VALUES (?)", {std::int64_t{1}});
    inside = true;
    // Another manager (own connection) cannot get the write lock meanwhile.
    std::thread other([&] { b_result = dblock::sql::Database(*b).run_in_transaction_lock("tx", 200ms, [](Transaction&) {}); });
    other.join();
  });
  CHECK(ran);
  CHECK(inside);
  CHECK_FALSE(b_result);
  CHECK(dblock::sql::Database(*b).run_in_transaction_lock("tx", 1s, [](Transaction& tx) {
    auto rows = tx.query("SELECT count(*) FROM txlock_demo");
    CHECK(std::get<std::int64_t>(rows[0][0]) >= 1);
  }));
  // A throwing body rolls back.
  CHECK_THROWS_AS(dblock::sql::Database(*a).run_in_transaction_lock("tx", 1s,
                                             [](Transaction& tx) {
                                               tx.execute("INSERT INTO txlock_demo VALUES (99)");
                                               throw std::runtime_error("boom");
                                             }),
                  std::runtime_error);
  dblock::sql::Database(*a).run_in_transaction_lock("tx", 1s, [](Transaction& tx) {
    CHECK(std::get<std::int64_t>(tx.query("SELECT count(*) FROM txlock_demo WHERE v = 99")[0][0]) == 0);
  });
}

// SQLite has one write lock per file: a transaction lock holds it for its whole length, and every
// lease in the file waits. A lease whose TTL is above that length keeps its lease (its renewal waits
// up to its safe-until); another name's acquire is answered when the transaction ends; a single try
// answers TimeoutError by its 2 s call deadline (README, "SQLite"). Prints the waits it saw.
TEST_CASE("sqlite: behind a 2.5 s transaction lock, a 3 s lease is kept and other names wait for its end",
          "[sqlite][txlock]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  auto c = open_manager({}, prefix);
  LostWatch watch;
  AcquireOptions three_seconds;
  three_seconds.ttl = 3s;  // renewed every second: at least two renewals fall inside the transaction
  three_seconds.on_lost = watch.callback();
  auto kept = b->try_acquire("kept", three_seconds);
  REQUIRE(kept);
  AcquireOptions shorter;
  shorter.ttl = 1500ms;  // shorter than the transaction: lost, as README says
  auto short_lease = b->try_acquire("short", shorter);
  REQUIRE(short_lease);
  using Clock = std::chrono::steady_clock;
  Clock::time_point started, ended;
  std::optional<Lease> other;
  Clock::duration other_waited{}, try_waited{};
  bool try_timed_out = false;
  std::thread trying, waiting;
  const bool ran = dblock::sql::Database(*a).run_in_transaction_lock("batch", 1s, [&](Transaction&) {
    started = Clock::now();
    trying = std::thread([&] {
      try {
        (void)c->try_acquire("single-try");
      } catch (const TimeoutError&) {
        try_timed_out = true;
      }
      try_waited = Clock::now() - started;
    });
    waiting = std::thread([&] {
      other = c->acquire("other", 10s);
      other_waited = Clock::now() - started;
    });
    std::this_thread::sleep_for(2500ms);  // the application's long transaction (the workload, not a wait)
    ended = Clock::now();
  });
  trying.join();
  waiting.join();
  REQUIRE(ran);
  CHECK(try_timed_out);  // busy file: a TimeoutError by the call's 2 s, not a false "held elsewhere"
  REQUIRE(other);
  // The other name's acquire was answered once the transaction ended, not before; the single try
  // by its 2 s call deadline.
  CHECK(other_waited >= ended - started);
  CHECK(try_waited >= 1900ms);
  CHECK(try_waited < 2s + 1500ms);
  CHECK_FALSE(watch.wait(0ms).has_value());
  CHECK_FALSE(kept->lost());
  CHECK(kept->release() == ReleaseResult::kReleased);
  CHECK(short_lease->release() == ReleaseResult::kAlreadyLost);
  const auto ms = [](Clock::duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); };
  std::printf("figure: 2.5 s transaction lock held %lld ms; a try answered TimeoutError after %lld ms; "
              "an acquire of another name waited %lld ms; the 3 s lease was kept, the 1.5 s one lost\n",
              static_cast<long long>(ms(ended - started)), static_cast<long long>(ms(try_waited)),
              static_cast<long long>(ms(other_waited)));
}

TEST_CASE("sqlite: session locks and row locks are reported unsupported", "[sqlite]") {
  auto manager = open_manager({}, unique_prefix());
  CHECK_FALSE(manager->capabilities().session_locks);
  CHECK_FALSE(manager->capabilities().row_locks);
  CHECK_THROWS_AS(manager->require_session_locks(), UnsupportedError);
  try {
    manager->require_session_locks();
  } catch (const UnsupportedError& e) {
    CHECK(std::string(e.what()).find("sqlite") != std::string::npos);
  }
}

// A lease held by a manager on `url`, and the moment its loss was reported.
struct WatchedLease {
  explicit WatchedLease(const std::string& url, const std::string& name) {
    ManagerOptions options;
    options.reaper = false;
    manager = dblock::open(url, options);
    AcquireOptions acquire;
    acquire.ttl = 3s;  // renewed every second
    acquire.on_lost = [this](const LostLease&) {
      std::lock_guard<std::mutex> lock(mutex);
      lost_at = std::chrono::steady_clock::now();
      changed.notify_all();
    };
    lease = manager->try_acquire(name, acquire);
    REQUIRE(lease);
  }
  // How long after `since` the loss was reported; nullopt if not within `limit`.
  std::optional<std::chrono::steady_clock::duration> lost_after(std::chrono::steady_clock::time_point since,
                                                                std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(mutex);
    if (!changed.wait_for(lock, limit, [&] { return lost_at.has_value(); })) return std::nullopt;
    return *lost_at - since;
  }

  std::unique_ptr<LockManager> manager;
  std::optional<Lease> lease;
  std::mutex mutex;
  std::condition_variable changed;
  std::optional<std::chrono::steady_clock::time_point> lost_at;
};

void remove_database(const std::string& path) {
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

TEST_CASE("sqlite: a deleted lock file loses its leases at the next renewal; a new file's fences are above",
          "[sqlite][files]") {
  TempDir dir;
  const std::string path = dir.file("gone.db"), url = "sqlite://" + path;
  WatchedLease held(url, "k");
  // Two more leases of the holder, renewed only after 10 s: the release and the guarded write
  // below find the file gone themselves, not through a refused renewal.
  auto released = held.manager->try_acquire("released");
  auto guarded = held.manager->try_acquire("guarded");
  REQUIRE(released);
  REQUIRE(guarded);
  const auto removed_at = std::chrono::steady_clock::now();
  remove_database(path);
  CHECK(released->release() == ReleaseResult::kAlreadyLost);
  CHECK_THROWS_AS(dblock::sql::Database(*held.manager).run_guarded(*guarded, [](Transaction&) {}), LeaseLostError);

  ManagerOptions options;
  options.reaper = false;
  auto newcomer = dblock::open(url, options);  // a new, empty file at the same path
  CHECK_FALSE(newcomer->try_acquire("k"));     // the holder's mark keeps it until the holder lets go

  const auto lost_after = held.lost_after(removed_at, 5s);
  REQUIRE(lost_after);
  CHECK(*lost_after < 2500ms);  // one renewal interval (TTL/3 = 1 s), not the TTL
  CHECK(held.lease->lost());
  // Lost, but still in its holder's hands: its mark keeps the name until the holder lets go.
  CHECK_FALSE(newcomer->try_acquire("k"));
  CHECK_THROWS_WITH(held.manager->try_acquire("other"), Catch::Contains("deleted or replaced"));
  const std::int64_t old_fence = held.lease->fence();
  CHECK(held.lease->release() != ReleaseResult::kReleased);  // the release closes the mark
  auto taken = newcomer->try_acquire("k");
  REQUIRE(taken);
  CHECK(taken->fence() > old_fence);  // the new file's counter starts at 0; the clock floor lifts it
  CHECK(newcomer->inspect("k"));
}

TEST_CASE("sqlite: a lock file replaced by an older copy loses its leases; fences stay above the old file's",
          "[sqlite][files]") {
  TempDir dir;
  const std::string path = dir.file("live.db"), url = "sqlite://" + path, copy = dir.file("copy.db");
  ManagerOptions options;
  options.reaper = false;
  auto earlier = dblock::open(url, options);
  REQUIRE(earlier->try_acquire("before-the-copy"));
  {  // a consistent copy of the file as it is now (the backup API reads through the WAL)
    sqlite3* from = nullptr;
    sqlite3* to = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &from) == SQLITE_OK);
    REQUIRE(sqlite3_open(copy.c_str(), &to) == SQLITE_OK);
    sqlite3_backup* backup = sqlite3_backup_init(to, "main", from, "main");
    REQUIRE(backup != nullptr);
    CHECK(sqlite3_backup_step(backup, -1) == SQLITE_DONE);
    sqlite3_backup_finish(backup);
    sqlite3_close(to);
    sqlite3_close(from);
  }
  WatchedLease held(url, "k");  // fence above the copy's counter
  const auto replaced_at = std::chrono::steady_clock::now();
  for (const char* suffix : {"-wal", "-shm"}) std::filesystem::remove(path + suffix);
  std::filesystem::rename(copy, path);  // the copy knows nothing of "k"

  auto newcomer = dblock::open(url, options);
  CHECK_FALSE(newcomer->try_acquire("k"));  // held on the file the copy replaced
  const auto lost_after = held.lost_after(replaced_at, 5s);
  REQUIRE(lost_after);
  CHECK(*lost_after < 2500ms);
  CHECK_FALSE(newcomer->try_acquire("k"));  // lost, still in its holder's hands: its mark holds
  CHECK_THROWS_AS(held.manager->try_acquire("other"), ConnectionError);
  const std::int64_t old_fence = held.lease->fence();
  held.lease->release();
  auto taken = newcomer->try_acquire("k");
  REQUIRE(taken);
  CHECK(taken->fence() > old_fence);  // not the copy's counter + 1
}

// The holder keeps a mark the file's deletion cannot remove (holder_mark.h): a newcomer on the new
// file at the path does not get the name while the holder holds it, waiting or not; it gets it once
// the holder releases. Readers on the old file keep an exclusive newcomer out the same way.
TEST_CASE("sqlite: a newcomer on a replaced lock file waits for the live holder and then gets a greater fence",
          "[sqlite][files]") {
  TempDir dir;
  const std::string path = dir.file("replaced.db"), url = "sqlite://" + path;
  ManagerOptions options;
  options.reaper = false;
  auto holder = dblock::open(url, options);  // TTL 30 s: no renewal (which would find the file gone) in this test
  auto held = holder->try_acquire("k");
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  auto reading = holder->try_acquire("r", shared);
  REQUIRE(held);
  REQUIRE(reading);
  remove_database(path);

  auto newcomer = dblock::open(url, options);  // a new, empty file at the same path
  CHECK_FALSE(newcomer->try_acquire("k"));
  CHECK_FALSE(newcomer->try_acquire("k", shared));
  CHECK_FALSE(newcomer->acquire("k", 300ms));  // the waiting path asks the mark too
  CHECK_FALSE(newcomer->try_acquire("r"));
  CHECK(newcomer->try_acquire("free"));  // other names are not held

  std::optional<Lease> taken;
  std::thread waiter([&] { taken = newcomer->acquire("k", 10s); });  // another manager: no in-process wake-up
  CHECK(held->release() != ReleaseResult::kReleased);  // its file is gone: reported lost; the mark closes
  waiter.join();
  REQUIRE(taken);
  CHECK(taken->fence() > held->fence());
  CHECK(reading->release() != ReleaseResult::kReleased);
  CHECK(newcomer->try_acquire("r"));
  // A second manager on the same (new) file: the row decides, as ever.
  auto neighbour = dblock::open(url, options);
  CHECK_FALSE(neighbour->try_acquire("k"));
  taken->release();
  CHECK(neighbour->try_acquire("k"));
}

TEST_CASE("sqlite: unopenable file is a ConnectionError", "[sqlite][input]") {
  CHECK_THROWS_AS(dblock::open("sqlite:///proc/definitely/not/here.db"), ConnectionError);
  CHECK_THROWS_AS(dblock::open("sqlite:///tmp/x.db?busy_timeout=abc"), UsageError);
  CHECK_THROWS_AS(dblock::open("sqlite:///tmp/x.db?unknown=1"), UsageError);
}

TEST_CASE("sqlite: the reaper deletes expired rows in batches and never a live lease", "[sqlite][reaper]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  options.reaper = false;
  options.reaper_batch = 7;
  auto manager = open_manager(options, prefix);
  std::vector<Lease> live;
  // Rows that expire: written through the backend with a 1 ms TTL and never renewed.
  ServiceDriver service(*manager);
  for (int i = 0; i < 30; ++i) {
    auto secret = OwnerSecret::generate();
    const std::string name = "expired-" + std::to_string(i);
    REQUIRE(service.attempt(name, LockMode::kExclusive, secret, std::chrono::milliseconds(1)).acquired);
  }
  for (int i = 0; i < 5; ++i) {
    auto lease = manager->try_acquire("live-" + std::to_string(i));
    REQUIRE(lease);
    live.push_back(std::move(*lease));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let the 1 ms rows expire on the clock
  CHECK(service.reap(7) == 7);                                 // one bounded batch
  std::size_t rest = manager->reap();
  CHECK(rest >= 23);
  for (auto& lease : live) CHECK(manager->inspect(lease.name()));
}

}  // namespace dblock::testing
