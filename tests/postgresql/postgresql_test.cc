// PostgreSQL's own cases (the suite's context: postgresql_context.cc), run in the plain build.
// Needs DBLOCK_TEST_POSTGRESQL_URL (ctest's fixture starts a throwaway server and sets it); without
// it every case fails, unless DBLOCK_TEST_SKIP_POSTGRESQL=1 says this run opted out.
#include <catch2/catch.hpp>
#include <signal.h>
#include <unistd.h>

#include <future>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <thread>

#include "context.h"
#include "postgresql_context.h"
#include "dblock/postgresql/interop.h"
#include "dblock/postgresql/postgresql.h"
#include "environment.h"
#include "process.h"
#include "relay.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (std::size_t pos = 0; (pos = s.find(from, pos)) != std::string::npos; pos += to.size()) s.replace(pos, from.size(), to);
  return s;
}

// Tables, columns, indexes and sequences whose names start with `prefix`, with the prefix removed.
std::vector<std::string> schema_of(pqxx::connection& c, const std::string& prefix) {
  pqxx::nontransaction tx(c);
  std::vector<std::string> out;
  for (const auto& row : tx.exec_params(
           "SELECT table_name, column_name, data_type, is_nullable, coalesce(column_default, '') "
           "FROM information_schema.columns WHERE table_schema = 'public' AND table_name LIKE $1 || '%' "
           "ORDER BY table_name, ordinal_position",
           prefix)) {
    out.push_back(replace_all(row[0].as<std::string>() + "." + row[1].as<std::string>() + " " + row[2].as<std::string>() +
                                  " " + row[3].as<std::string>() + " " + row[4].as<std::string>(),
                              prefix, "P_"));
  }
  for (const auto& row : tx.exec_params(
           "SELECT indexdef FROM pg_indexes WHERE schemaname = 'public' AND tablename LIKE $1 || '%' ORDER BY indexname",
           prefix)) {
    out.push_back(replace_all(row[0].as<std::string>(), prefix, "P_"));
  }
  for (const auto& row : tx.exec_params(
           "SELECT sequence_name, data_type FROM information_schema.sequences WHERE sequence_name LIKE $1 || '%'", prefix)) {
    out.push_back(replace_all(row[0].as<std::string>() + " " + row[1].as<std::string>(), prefix, "P_"));
  }
  for (const auto& row : tx.exec_params(
           "SELECT conrelid::regclass::text || ' ' || pg_get_constraintdef(oid) FROM pg_constraint "
           "WHERE conrelid::regclass::text LIKE '\"' || $1 || '%' ORDER BY 1",
           prefix)) {
    out.push_back(replace_all(row[0].as<std::string>(), prefix, "P_"));
  }
  return out;
}

std::vector<int> backend_pids(const std::string& application_name) {
  pqxx::connection c(conninfo());
  pqxx::nontransaction tx(c);
  std::vector<int> pids;
  for (const auto& row : tx.exec_params(
           "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()", application_name)) {
    pids.push_back(row[0].as<int>());
  }
  return pids;
}

void terminate(const std::vector<int>& pids) {
  pqxx::connection c(conninfo());
  pqxx::nontransaction tx(c);
  for (int pid : pids) tx.exec_params("SELECT pg_terminate_backend($1)", pid);
}

std::unique_ptr<LockManager> open_with(const std::string& url_suffix, ManagerOptions options, const std::string& prefix) {
  options.table_prefix = prefix;
  std::string url = context().url;
  url += (url.find('?') == std::string::npos ? "?" : "&") + url_suffix;
  return dblock::open(url, options);
}

// A manager without the reaper: rows stay as the statements under test leave them.
std::unique_ptr<LockManager> open_manager_without_reaper(const std::string& prefix) {
  ManagerOptions options;
  options.reaper = false;
  return open_manager(options, prefix);
}

// The PostgreSQL service's AcquireResult::tag of a lease taken as a queued waiter: its release
// frees the row in place (kReleaseExclusiveInPlace) and deletes the holder's queue entry.
constexpr std::uint32_t kContended = 1;

// One attempt straight on the service, as the core makes it; queue = true is the attempt of a
// waiting acquire (ticket 0: not queued yet), with a queue entry that outlives any test (60 s), so
// that only the bookkeeping under test can remove it.
Outcome backend_attempt(ServiceDriver& backend, const char* name, LockMode mode, const OwnerSecret& secret,
                        std::chrono::milliseconds ttl, bool queue, std::int64_t ticket) {
  return backend.attempt(name, mode, secret, ttl, queue, ticket);
}

}  // namespace

TEST_CASE("postgresql: migrations reproduce schema/postgresql.sql", "[postgresql][schema]") {
  const std::string migrated = unique_prefix();
  const std::string fresh = unique_prefix();
  open_manager({}, migrated);
  std::ifstream in(DBLOCK_SOURCE_DIR "/schema/postgresql.sql");
  std::stringstream text;
  text << in.rdbuf();
  REQUIRE_FALSE(text.str().empty());
  pqxx::connection c(conninfo());
  {
    pqxx::work tx(c);
    tx.exec(replace_all(text.str(), "{{prefix}}", fresh));
    tx.commit();
  }
  auto a = schema_of(c, migrated);
  auto b = schema_of(c, fresh);
  CHECK(a.size() > 20);
  CHECK(a == b);
}

// Schema 5 replaced stored owner secrets by their digests: a lease taken before the upgrade is
// still its owner's (the secret renews it), and what the table shows renews nothing.
TEST_CASE("postgresql: upgrading to schema 5 keeps held leases their owners'", "[postgresql][schema][secret]") {
  const std::string prefix = unique_prefix();
  pqxx::connection c(conninfo());
  {
    pqxx::work tx(c);
    for (const char* m : {"0001_initial", "0002_queue_marker", "0003_reap_cursor", "0004_direct_grant"}) {
      std::ifstream in(std::string(DBLOCK_SOURCE_DIR "/migrations/postgresql/") + m + ".sql");
      std::stringstream text;
      text << in.rdbuf();
      REQUIRE_FALSE(text.str().empty());
      tx.exec(replace_all(text.str(), "{{prefix}}", prefix));
      tx.exec_params("INSERT INTO " + tx.quote_name(prefix + "schema_version") + " (version, name) VALUES ($1, $2)",
                     std::stoi(std::string(m).substr(0, 4)), m);
    }
    tx.exec("INSERT INTO " + tx.quote_name(prefix + "leases") +
            " (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals) VALUES ('held-by-old',"
            " 'abababab-abab-abab-abab-abababababab', 'old', 'exclusive', 7, clock_timestamp(),"
            " clock_timestamp() + interval '1 hour', 0)");
    tx.commit();
  }
  auto manager = open_manager({}, prefix);
  CHECK(manager->schema_version() >= 5);
  OwnerSecret old_secret;
  old_secret.bytes.fill(0xab);
  CHECK(context().stored_owner(prefix, "leases", "held-by-old") == digest_hex(old_secret));
  CHECK_FALSE(manager->try_acquire("held-by-old"));
  ServiceDriver driver(*manager);
  CHECK(driver.renew("held-by-old", LockMode::kExclusive, old_secret, 1h).renewed);
  CHECK_FALSE(driver.renew("held-by-old", LockMode::kExclusive, secret_from_hex(digest_hex(old_secret)), 1h).renewed);
  CHECK(driver.release("held-by-old", LockMode::kExclusive, old_secret));
}

TEST_CASE("postgresql: a second migration is a no-op; a newer schema is refused", "[postgresql][schema]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  int version = manager->schema_version();
  manager->migrate();
  CHECK(manager->schema_version() == version);
  {
    pqxx::connection c(conninfo());
    pqxx::work tx(c);
    tx.exec("INSERT INTO \"" + prefix + "schema_version\" (version, name) VALUES (9999, 'future')");
    tx.commit();
  }
  CHECK_THROWS_AS(open_manager({}, prefix), SchemaError);
}

TEST_CASE("postgresql: unreachable server and wrong credentials are ConnectionErrors", "[postgresql][input]") {
  CHECK_THROWS_AS(dblock::open("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2"), ConnectionError);
  CHECK_THROWS_AS(dblock::open(context().url.substr(0, context().url.rfind('/')) + "/no_such_database"),
                  ConnectionError);
  try {
    dblock::open("postgresql://postgres:hunter2@127.0.0.1:1/postgres?connect_timeout=2");
  } catch (const ConnectionError& e) {
    CHECK(std::string(e.what()).find("hunter2") == std::string::npos);
  }
}

TEST_CASE("postgresql: libpq's multi-line errors come on one line", "[postgresql][input]") {
  // libpq: "connection to server at ... failed: Connection refused\n\tIs the server running ...".
  try {
    dblock::open("postgresql://postgres@127.0.0.1:1/postgres?connect_timeout=2");
    FAIL("opened a server on port 1");
  } catch (const ConnectionError& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find_first_of("\n\t") == std::string::npos);
    CHECK(message.find("refused; Is the server running") != std::string::npos);
  }
}

TEST_CASE("postgresql: connect_timeout must be a whole number of seconds from 1 to 3600", "[postgresql][input]") {
  const std::string url = context().url + (context().url.find('?') == std::string::npos ? "?" : "&");
  for (const char* bad : {"abc", "0", "-1", "1.5", "3601", "99999999999"}) {
    INFO(bad);
    try {
      dblock::open(url + "connect_timeout=" + bad);
      FAIL("accepted");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find("connect_timeout") != std::string::npos);
    }
  }
  ManagerOptions options;
  options.table_prefix = unique_prefix();
  CHECK(dblock::open(url + "connect_timeout=3", options) != nullptr);
}

TEST_CASE("postgresql: no lock name meets the migration lock", "[postgresql][session][schema]") {
  // The session lock named "<prefix>:migrate" once had the migration lock's advisory key: holding
  // it kept every first open of that prefix waiting for 15 s, then failing.
  const std::string prefix = unique_prefix();
  auto other = open_manager({}, unique_prefix());
  std::optional<SessionLock> held = other->session_lock(prefix + ":migrate", 0s);
  REQUIRE(held);
  const auto start = std::chrono::steady_clock::now();
  CHECK(open_manager({}, prefix) != nullptr);
  CHECK(std::chrono::steady_clock::now() - start < 5s);
  const auto key = dblock::postgresql::migration_lock_key(prefix);
  pqxx::connection c(conninfo());
  pqxx::nontransaction tx(c);
  CHECK(tx.exec_params1("SELECT pg_try_advisory_lock($1, $2)", key.class_id, key.object_id)[0].as<bool>());
}

TEST_CASE("postgresql: a role that can only connect hears no lock name on the wake channels",
          "[postgresql][notify][privileges]") {
  const std::string prefix = unique_prefix();
  const std::string name = "payroll/" + prefix;
  const std::string role = "dblock_eavesdropper_" + std::to_string(::getpid());
  {
    pqxx::connection admin(conninfo());
    pqxx::nontransaction tx(admin);
    tx.exec("DROP ROLE IF EXISTS " + role);
    tx.exec("CREATE ROLE " + role + " LOGIN");
  }
  struct Collect final : pqxx::notification_receiver {
    Collect(pqxx::connection& c, const std::string& channel, std::vector<std::string>& into)
        : pqxx::notification_receiver(c, channel), payloads(into) {}
    void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
    std::vector<std::string>& payloads;
  };
  std::vector<std::string> heard;
  pqxx::connection eavesdropper(conninfo() + " user=" + role);
  std::vector<std::unique_ptr<Collect>> channels;
  channels.push_back(std::make_unique<Collect>(eavesdropper, prefix + "release", heard));
  for (int slot = 0; slot < 1024; ++slot) {
    channels.push_back(std::make_unique<Collect>(eavesdropper, prefix + "release_" + std::to_string(slot), heard));
  }

  auto holder = open_manager({}, prefix);
  auto waiter = open_manager({}, prefix);
  auto lease = holder->try_acquire(name);
  REQUIRE(lease);
  std::optional<Lease> got;
  std::thread t([&] { got = waiter->acquire(name, 30s); });
  pqxx::connection c(conninfo());
  bool queued = false;
  for (int i = 0; i < 500 && !queued; ++i) {  // bounded: 5 s
    pqxx::nontransaction tx(c);
    queued = tx.exec_params1("SELECT count(*) FROM \"" + prefix + "waiters\" WHERE name = $1", name)[0].as<int>() > 0;
    if (!queued) std::this_thread::sleep_for(10ms);
  }
  REQUIRE(lease->release() == ReleaseResult::kReleased);  // a grant to the waiter
  t.join();
  REQUIRE(got);
  CHECK(holder->force_release(name));  // wakes every listener's waiters
  for (int i = 0; i < 50 && heard.size() < 2; ++i) eavesdropper.await_notification(0, 100'000);  // bounded: 5 s
  CHECK(heard.size() >= 2);
  for (const std::string& payload : heard) {
    INFO(payload);
    CHECK(payload.find(name) == std::string::npos);
    CHECK(payload.find("payroll") == std::string::npos);
  }
  channels.clear();
  eavesdropper.disconnect();
  pqxx::connection admin(conninfo());
  pqxx::nontransaction(admin).exec("DROP ROLE " + role);
}

TEST_CASE("postgresql: with several hosts, one that refuses, stalls or is a standby passes to the next",
          "[postgresql][input][faults]") {
  const Url::Host primary = parse_url(context().url).hosts.at(0);
  const std::string at = "127.0.0.1:" + std::to_string(primary.port);
  // A stalled host: the relay, paused, completes TCP handshakes and never answers.
  TcpRelay relay(DBLOCK_TCP_RELAY, primary.port);
  relay.pause();
  const std::string standby_url = env("DBLOCK_TEST_PG_STANDBY_URL");
  REQUIRE_FALSE(standby_url.empty());
  const Url::Host standby_host = parse_url(standby_url).hosts.at(0);
  const std::string standby = standby_host.host + ":" + std::to_string(standby_host.port);
  const std::string stalled = relay.address();
  for (const std::string& first : {std::string("127.0.0.1:1"), stalled, standby}) {
    INFO(first);
    ManagerOptions options;
    options.table_prefix = unique_prefix();
    const auto start = std::chrono::steady_clock::now();
    auto manager = dblock::open("postgresql://postgres@" + first + "," + at +
                                    "/postgres?connect_timeout=2&target_session_attrs=read-write&detect_pooler=0",
                                options);
    CHECK(std::chrono::steady_clock::now() - start < 2s + 1500ms);  // the stalled host: its connect_timeout
    CHECK(manager->try_acquire("multi-host"));
  }
  relay.resume();
}

TEST_CASE("postgresql: the fence comes from a sequence and survives UNLOGGED switching", "[postgresql]") {
  const std::string prefix = unique_prefix();
  std::int64_t last = 0;
  {
    auto manager = open_with("unlogged=1", {}, prefix);
    pqxx::connection c(conninfo());
    pqxx::nontransaction tx(c);
    CHECK(tx.exec1("SELECT relpersistence FROM pg_class WHERE oid = '\"" + prefix + "leases\"'::regclass")[0].as<std::string>() ==
          "u");
    auto lease = manager->try_acquire("u");
    REQUIRE(lease);
    last = lease->fence();
  }
  auto manager = open_with("unlogged=0", {}, prefix);
  auto lease = manager->try_acquire("u");
  REQUIRE(lease);
  CHECK(lease->fence() > last);
}

TEST_CASE("postgresql: a crash empties an UNLOGGED lease table: holders learn it at their next renewal, fences grow",
          "[postgresql][fault]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  // Renewed every 10 s, retried until safe-until (29.7 s): the crash and restart have about 29 s
  // to finish for the next renewal to reach the restarted server. (Crash recovery ends with a
  // checkpoint's fsyncs: beside a build writing its objects it took longer than 6 s, and a 10 s
  // TTL ran out first: lost by safe-until, not told by the server.)
  options.default_ttl = 30s;
  auto manager = open_with("unlogged=1", options, prefix);
  LostWatch watch;
  AcquireOptions o;
  o.on_lost = watch.callback();
  auto lease = manager->try_acquire("crashed", o);
  REQUIRE(lease);
  const std::int64_t fence = lease->fence();
  // pg_ctl stop -m immediate, then start: crash recovery resets every unlogged table.
  const std::string crash = env("DBLOCK_TEST_PG_SCRIPT") + " restart " + env("DBLOCK_TEST_PG_STATE") + " immediate";
  REQUIRE(std::system(crash.c_str()) == 0);
  auto other = open_manager({}, prefix);
  auto next = other->try_acquire("crashed");  // free at once: the row went with the crash
  REQUIRE(next);
  CHECK(next->fence() > fence);  // the fence sequence is logged
  const auto lost = watch.wait(40s);
  REQUIRE(lost);
  INFO(lost->reason);
  CHECK(lost->reason.find("refused") != std::string::npos);  // told by its next renewal
  CHECK(lease->lost());
}

TEST_CASE("postgresql: waiters are woken by NOTIFY well before the poll interval", "[postgresql][notify]") {
  const std::string prefix = unique_prefix();
  ManagerOptions slow_poll;
  slow_poll.max_poll = 5s;  // only a notification can wake the waiter quickly
  slow_poll.min_poll = 5s;
  auto holder = open_manager({}, prefix);
  auto waiter = open_manager(slow_poll, prefix);
  auto lease = holder->try_acquire("notify");
  REQUIRE(lease);
  std::atomic<bool> got{false};
  std::chrono::steady_clock::time_point acquired_at;
  std::thread t([&] {
    auto l = waiter->acquire("notify", 30s);
    acquired_at = std::chrono::steady_clock::now();
    got = l.has_value();
  });
  // Wait (bounded) until the waiter is queued, so the release sees it and notifies.
  pqxx::connection c(conninfo());
  for (int i = 0; i < 500; ++i) {
    pqxx::nontransaction tx(c);
    if (tx.exec1("SELECT count(*) FROM \"" + prefix + "waiters\"")[0].as<int>() > 0) break;
    std::this_thread::sleep_for(10ms);
  }
  auto released_at = std::chrono::steady_clock::now();
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  t.join();
  REQUIRE(got);
  CHECK(acquired_at - released_at < 2s);  // a 5 s poll could not have done it
}

TEST_CASE("postgresql: a forged grant NOTIFY from a bystander is not a lease", "[postgresql][notify]") {
  // Any role that can connect can NOTIFY any channel, and one that can read the waiters table
  // knows a waiter's ticket and wake slot: it can send exactly what a granting release sends.
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  auto waiter = open_manager({}, prefix);
  auto lease = holder->try_acquire("forged");
  REQUIRE(lease);
  std::atomic<bool> done{false};
  std::optional<Lease> got;
  std::thread t([&] {
    got = waiter->acquire("forged", 30s);
    done = true;
  });
  pqxx::connection bystander(conninfo());
  std::int64_t ticket = 0;
  for (int i = 0; i < 500 && ticket == 0; ++i) {
    pqxx::nontransaction tx(bystander);
    pqxx::result r = tx.exec("SELECT ticket FROM \"" + prefix + "waiters\" WHERE name = 'forged'");
    if (!r.empty()) ticket = r[0][0].as<std::int64_t>();
    if (ticket == 0) std::this_thread::sleep_for(10ms);
  }
  if (ticket == 0) {  // never queued: end the waiter before failing (a joinable thread must not be destroyed)
    lease->release();
    t.join();
    FAIL("the waiter never joined the queue");
  }
  {
    pqxx::nontransaction tx(bystander);
    tx.exec_params("SELECT pg_notify($1 || 'release_' || ($2::bigint & 1023), $2 || chr(31) ||"
                   " '999999999' || chr(31) || '30000000' || chr(31) ||"
                   " ((extract(epoch FROM clock_timestamp()) * 1e6)::bigint + 30000000))",
                   prefix, ticket);
  }
  // Bounded: a waiter that believed the payload returns at once (it did, before grants were
  // confirmed); this one confirms with the server and goes on waiting.
  for (int i = 0; i < 100 && !done; ++i) std::this_thread::sleep_for(10ms);
  CHECK_FALSE(done);
  const std::optional<LeaseInfo> info = holder->inspect("forged");
  CHECK((info && info->fence == lease->fence()));
  REQUIRE(lease->release() == ReleaseResult::kReleased);
  t.join();
  REQUIRE(got);
  CHECK(got->fence() != 999999999);
  CHECK(got->fence() > lease->fence());
}

// The lease row carries the waiter queue's state (queued_until, queued_ticket) so that the
// uncontended statements need not read the waiters table. This checks the bookkeeping that keeps
// it right: joining marks the row, a release keeps a marked row (free) and the reaper spares it,
// leaving or acquiring from the queue recomputes the marker, and an unmarked release deletes.
TEST_CASE("postgresql: the queue marker on the lease row follows the waiters", "[postgresql][queue]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  ServiceDriver backend(*manager);
  pqxx::connection c(conninfo());
  struct RowState {
    bool exists = false, held = false, marked = false;
    std::int64_t ticket = 0;
  };
  auto row = [&] {
    pqxx::nontransaction tx(c);
    pqxx::result r = tx.exec_params("SELECT owner_secret IS NOT NULL AND expires_at > clock_timestamp(),"
                                    " coalesce(queued_until > clock_timestamp(), false), coalesce(queued_ticket, 0)"
                                    " FROM \"" + prefix + "leases\" WHERE name = $1", "marker");
    RowState s;
    if (r.empty()) return s;
    s.exists = true;
    s.held = r[0][0].as<bool>();
    s.marked = r[0][1].as<bool>();
    s.ticket = r[0][2].as<std::int64_t>();
    return s;
  };
  auto queue = [&](const OwnerSecret& secret, std::int64_t ticket) {
    return backend_attempt(backend, "marker", LockMode::kExclusive, secret, 30s, true, ticket);
  };

  auto holder = manager->try_acquire("marker");
  REQUIRE(holder);
  CHECK_FALSE(row().marked);
  const OwnerSecret first = OwnerSecret::generate();
  const OwnerSecret second = OwnerSecret::generate();
  Outcome q1 = queue(first, 0);
  REQUIRE_FALSE(q1.acquired);
  REQUIRE(q1.queue_ticket != 0);
  CHECK(row().marked);
  CHECK(row().ticket == q1.queue_ticket);
  Outcome q2 = queue(second, 0);
  REQUIRE_FALSE(q2.acquired);
  CHECK(q2.queue_position == 1);
  CHECK(row().ticket == q1.queue_ticket);  // the hint names the first in line

  // Release with waiters queued: the row stays, free and marked; the reaper spares it.
  REQUIRE(holder->release() == ReleaseResult::kReleased);
  CHECK(row().exists);
  CHECK_FALSE(row().held);
  CHECK(row().marked);
  manager->reap();
  CHECK(row().exists);
  CHECK_FALSE(manager->try_acquire("marker"));

  // The first waiter leaves: the hint moves to the second; still marked.
  backend.leave("marker", first);
  CHECK(row().marked);
  CHECK(row().ticket == q2.queue_ticket);
  CHECK_FALSE(manager->try_acquire("marker"));

  // The second acquires from the queue: nobody is left, so the marker is cleared at once (not
  // when its 60 s entry would have expired), and its release deletes the row.
  Outcome taken = queue(second, q2.queue_ticket);
  REQUIRE(taken.acquired);
  CHECK(row().held);
  CHECK_FALSE(row().marked);
  {
    pqxx::nontransaction tx(c);
    CHECK(tx.exec1("SELECT count(*) FROM \"" + prefix + "waiters\"")[0].as<int>() == 0);
  }
  REQUIRE(backend.release("marker", LockMode::kExclusive, second));
  CHECK_FALSE(row().exists);

  // A waiter that leaves before any release also clears the marker: a try_acquire succeeds at once.
  auto again = manager->try_acquire("marker");
  REQUIRE(again);
  REQUIRE_FALSE(queue(first, 0).acquired);
  CHECK(row().marked);
  backend.leave("marker", first);
  CHECK_FALSE(row().marked);
  REQUIRE(again->release() == ReleaseResult::kReleased);
  CHECK_FALSE(row().exists);
  CHECK(manager->try_acquire("marker"));
}

// A lease acquired after queueing (tagged kContended) is released
// (kReleaseExclusiveInPlace): the first live exclusive waiter in line is granted the lease by the
// release itself; a first waiter that cannot be granted it (a shared one) finds the row freed in
// place with its marker kept; whatever that statement does not cover (not held, expired) falls
// back to the plain release and is reported the same way.
TEST_CASE("postgresql: a contended release grants the lease to the first waiter, or frees it in place",
          "[postgresql][queue]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  ServiceDriver backend(*manager);
  pqxx::connection c(conninfo());
  auto row = [&](const char* name) {
    pqxx::nontransaction tx(c);
    return tx.exec_params("SELECT owner_secret IS NOT NULL AND expires_at > clock_timestamp(),"
                          " coalesce(queued_until > clock_timestamp(), false), fence, replace(owner_secret::text, '-', '')"
                          " FROM \"" + prefix + "leases\" WHERE name = $1", name);
  };
  auto attempt = [&](const char* name, const OwnerSecret& secret, std::int64_t ticket, std::chrono::milliseconds ttl,
                     LockMode mode = LockMode::kExclusive) {
    return backend_attempt(backend, name, mode, secret, ttl, true, ticket);
  };
  const OwnerSecret holder = OwnerSecret::generate(), first = OwnerSecret::generate(),
                    second = OwnerSecret::generate(), stranger = OwnerSecret::generate(),
                    reader = OwnerSecret::generate();

  REQUIRE(attempt("inplace", holder, 0, 30s).acquired);
  Outcome q1 = attempt("inplace", first, 0, 30s);
  Outcome q2 = attempt("inplace", second, 0, 30s);
  REQUIRE_FALSE(q1.acquired);
  REQUIRE_FALSE(q2.acquired);
  REQUIRE(backend.release("inplace", LockMode::kExclusive, holder));  // plain: wakes, grants nothing
  REQUIRE(row("inplace").size() == 1);
  CHECK_FALSE(row("inplace")[0][0].as<bool>());
  Outcome got1 = attempt("inplace", first, q1.queue_ticket, 30s);
  REQUIRE(got1.acquired);
  CHECK(got1.tag == kContended);  // taken as a queued waiter: released in place below

  // Not the owner: nothing changes, reported as not held.
  CHECK_FALSE(backend.release("inplace", LockMode::kExclusive, stranger, kContended));
  REQUIRE(row("inplace").size() == 1);
  CHECK(row("inplace")[0][0].as<bool>());

  // The owner, with an exclusive waiter queued: when the release returns, that waiter holds the
  // name with a larger fence; the marker stays; an unqueued attempt is refused; the grantee's own
  // attempt finds the lease its own.
  REQUIRE(backend.release("inplace", LockMode::kExclusive, first, kContended));
  REQUIRE(row("inplace").size() == 1);
  CHECK(row("inplace")[0][0].as<bool>());
  CHECK(row("inplace")[0][3].as<std::string>() == digest_hex(second));
  const std::int64_t granted_fence = row("inplace")[0][2].as<std::int64_t>();
  CHECK(granted_fence > got1.fence);
  CHECK_FALSE(attempt("inplace", stranger, 0, 30s).acquired);
  backend.leave("inplace", stranger);
  CHECK(row("inplace")[0][3].as<std::string>() == digest_hex(second));  // leaving takes nothing from it
  Outcome got2 = attempt("inplace", second, q2.queue_ticket, 30s);
  REQUIRE(got2.acquired);
  CHECK(got2.fence > granted_fence);

  // A shared waiter first in line is not granted anything: the row is freed in place and stays
  // marked, the reaper spares it, and the reader takes it from the queue.
  Outcome qr = attempt("inplace", reader, 0, 30s, LockMode::kShared);
  REQUIRE_FALSE(qr.acquired);
  REQUIRE(backend.release("inplace", LockMode::kExclusive, second, kContended));
  REQUIRE(row("inplace").size() == 1);
  CHECK_FALSE(row("inplace")[0][0].as<bool>());
  CHECK(row("inplace")[0][1].as<bool>());
  manager->reap();
  CHECK(row("inplace").size() == 1);
  CHECK_FALSE(attempt("inplace", stranger, 0, 30s).acquired);
  backend.leave("inplace", stranger);
  REQUIRE(attempt("inplace", reader, qr.queue_ticket, 30s, LockMode::kShared).acquired);
  REQUIRE(backend.release("inplace", LockMode::kShared, reader));

  // Released with the hint but nobody queued: an ordinary free row, which the reaper deletes; a
  // new holder gets a larger fence. A second release of the same lease reports "not held".
  Outcome next = attempt("inplace", holder, 0, 30s);
  REQUIRE(next.acquired);
  CHECK(next.fence > got2.fence);
  REQUIRE(backend.release("inplace", LockMode::kExclusive, holder, kContended));
  CHECK_FALSE(backend.release("inplace", LockMode::kExclusive, holder, kContended));
  REQUIRE(row("inplace").size() == 1);
  CHECK_FALSE(row("inplace")[0][1].as<bool>());
  manager->reap();
  CHECK(row("inplace").empty());

  // An expired lease released with the hint: the fallback deletes the row and reports it expired
  // (false), as the plain release does.
  REQUIRE(attempt("expiring", holder, 0, 50ms).acquired);
  bool expired = false;
  for (int i = 0; i < 200 && !expired; ++i) {
    expired = !row("expiring")[0][0].as<bool>();
    if (!expired) std::this_thread::sleep_for(5ms);  // bounded: the server clock passes 50 ms
  }
  REQUIRE(expired);
  CHECK_FALSE(backend.release("expiring", LockMode::kExclusive, holder, kContended));
  CHECK(row("expiring").empty());
}

// A grant lasts the grantee's TTL, but no longer than its queue entry would have: a waiter that
// died or gave up blocks the name no longer than its entry would have blocked the queue. One that
// gave up hands a lease granted meanwhile on when it leaves the queue (FairQueue::leave), to the next
// waiter in line.
TEST_CASE("postgresql: a grant is bounded by the waiter's queue entry and handed on when it gave up",
          "[postgresql][queue]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager_without_reaper(prefix);
  ServiceDriver backend(*manager);
  pqxx::connection c(conninfo());
  auto row = [&] {
    pqxx::nontransaction tx(c);
    return tx.exec1("SELECT replace(owner_secret::text, '-', ''), (extract(epoch from expires_at - clock_timestamp()) * 1000)::bigint"
                    " FROM \"" + prefix + "leases\" WHERE name = 'granted'");
  };
  const OwnerSecret holder = OwnerSecret::generate(), quitter = OwnerSecret::generate(),
                    next = OwnerSecret::generate();
  auto waiter_attempt = [&](const OwnerSecret& secret, std::chrono::milliseconds queue_ttl) {
    return backend.attempt("granted", LockMode::kExclusive, secret, 60s, /*queue=*/true, 0, queue_ttl);
  };

  REQUIRE(backend_attempt(backend, "granted", LockMode::kExclusive, holder, 30s, false, 0).acquired);
  Outcome q = waiter_attempt(quitter, 3s);
  REQUIRE_FALSE(q.acquired);
  Outcome qn = waiter_attempt(next, 60s);
  REQUIRE_FALSE(qn.acquired);
  REQUIRE(backend.release("granted", LockMode::kExclusive, holder, kContended));
  auto granted = row();
  CHECK(granted[0].as<std::string>() == digest_hex(quitter));
  CHECK(granted[1].as<std::int64_t>() > 0);
  CHECK(granted[1].as<std::int64_t>() <= 3000);  // its entry's life, not its 60 s TTL

  backend.leave("granted", quitter);
  auto handed_on = row();
  CHECK(handed_on[0].as<std::string>() == digest_hex(next));
  CHECK(handed_on[1].as<std::int64_t>() > 30'000);  // 60 s TTL, within its 60 s entry
  CHECK(backend.release("granted", LockMode::kExclusive, next, kContended));
  CHECK_FALSE(backend.release("granted", LockMode::kExclusive, quitter, kContended));
  // Nobody waits any more: the grantee's release took its own queue entry off the marker, so an
  // unqueued attempt gets the name at once.
  const OwnerSecret stranger = OwnerSecret::generate();
  CHECK(backend_attempt(backend, "granted", LockMode::kExclusive, stranger, 30s, false, 0).acquired);
}

// A waiter's ticket carries its backend instance's wake slot (ticket & 1023, tickets >= 2^60), and
// a release that names it notifies only that slot's channel (<prefix>release_<slot>), not the
// shared one every instance listens on: a hand-off wakes one listener. The grant's payload is
// name, ticket, fence, granted microseconds and expiry, as the grantee's core reads it.
TEST_CASE("postgresql: a release notifies only the named waiter's wake channel", "[postgresql][notify]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager_without_reaper(prefix);
  ServiceDriver backend(*manager);
  const OwnerSecret holder = OwnerSecret::generate(), waiter = OwnerSecret::generate();
  REQUIRE(backend_attempt(backend, "routed", LockMode::kExclusive, holder, 30s, false, 0).acquired);
  Outcome queued = backend_attempt(backend, "routed", LockMode::kExclusive, waiter, 30s, true, 0);
  REQUIRE_FALSE(queued.acquired);
  REQUIRE(queued.queue_ticket >= (std::int64_t{1} << 60));
  const std::string own_channel = prefix + "release_" + std::to_string(queued.queue_ticket & 1023);

  struct Collect final : pqxx::notification_receiver {
    Collect(pqxx::connection& c, const std::string& channel) : pqxx::notification_receiver(c, channel) {}
    void operator()(const std::string& payload, int) override { payloads.push_back(payload); }
    std::vector<std::string> payloads;
  };
  pqxx::connection listener(conninfo());
  Collect shared(listener, prefix + "release"), own(listener, own_channel);
  REQUIRE(backend.release("routed", LockMode::kExclusive, holder, kContended));
  for (int i = 0; i < 50 && own.payloads.empty(); ++i) listener.await_notification(0, 100'000);  // bounded: 5 s
  // One commit's notifications arrive together: the shared channel got none from this release.
  REQUIRE(own.payloads.size() == 1);
  CHECK(shared.payloads.empty());

  pqxx::nontransaction tx(listener);
  const std::int64_t fence =
      tx.exec1("SELECT fence FROM \"" + prefix + "leases\" WHERE name = 'routed'")[0].as<std::int64_t>();
  std::vector<std::string> fields;
  std::stringstream payload(own.payloads[0]);
  for (std::string field; std::getline(payload, field, '\x1f');) fields.push_back(field);
  REQUIRE(fields.size() == 4);  // no name: the ticket, the fence, granted us, expiry us
  CHECK(fields[0] == std::to_string(queued.queue_ticket));
  CHECK(fields[1] == std::to_string(fence));
  CHECK(std::stoll(fields[2]) > 0);
}

// Right after a release of this backend woke a queued waiter, the name's marker stands, so the
// releasing side's next waiting acquire skips the unqueued attempt it would lose and only joins the
// queue (one statement fewer while the woken waiter takes the name). The shortcut is visible only
// when the woken waiter has given up meanwhile: the name is free, yet the waiting acquire comes
// back queued, first in line and with nothing left of the holder's time, so the core attempts again
// at once and gets it. Without a release that woke someone, the waiting acquire attempts as usual.
// The shortcut holds for 250 ms after the release (kReleasedToQueueWindow); the three round trips
// between them here take a few milliseconds, also under the sanitizers.
TEST_CASE("postgresql: a releasing backend joins the queue without the attempt the marker would refuse",
          "[postgresql][queue]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager_without_reaper(prefix);
  ServiceDriver backend(*manager);
  auto attempt = [&](const OwnerSecret& secret, bool queue, std::int64_t ticket) {
    return backend_attempt(backend, "skip", LockMode::kExclusive, secret, 30s, queue, ticket);
  };
  const OwnerSecret holder = OwnerSecret::generate(), waiter = OwnerSecret::generate(),
                    again = OwnerSecret::generate(), other = OwnerSecret::generate();

  REQUIRE(attempt(holder, false, 0).acquired);
  Outcome queued = attempt(waiter, true, 0);
  REQUIRE_FALSE(queued.acquired);
  REQUIRE(backend.release("skip", LockMode::kExclusive, holder));  // wakes the waiter
  backend.leave("skip", waiter);                             // which gives up
  Outcome joined = attempt(again, true, 0);
  CHECK_FALSE(joined.acquired);
  CHECK(joined.queue_ticket != 0);
  CHECK(joined.queue_position == 0);
  CHECK(joined.holder_remaining == std::chrono::milliseconds(0));
  Outcome taken = attempt(again, true, joined.queue_ticket);
  REQUIRE(taken.acquired);

  // This release woke nobody: the next waiting acquire attempts, and takes the name at once.
  REQUIRE(backend.release("skip", LockMode::kExclusive, again));
  Outcome direct = attempt(other, true, 0);
  CHECK(direct.acquired);
  CHECK(direct.fence > taken.fence);
}

// Releases commit without waiting for the WAL flush (a release undone by a crash is as harmless as
// a holder that crashed); acquires and renewals must wait for it (undoing one could grant a lease
// twice), also on the connection a release has just used. Observed on the server: right after a
// commit that waited, the WAL is flushed as far as it was written; right after one that did not,
// it is not yet (until the WAL writer's next round, up to 200 ms later). Nothing else writes WAL
// here (no reaper), so each check is about the statement just run; a background write (a
// checkpoint, say) may disturb one or two of them, hence the margins.
TEST_CASE("postgresql: releases do not wait for the WAL flush; acquires, grants and renewals do",
          "[postgresql][durability]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager_without_reaper(prefix);
  ServiceDriver backend(*manager);
  pqxx::connection c(conninfo());
  auto unflushed = [&] {
    pqxx::nontransaction tx(c);
    return tx.exec1("SELECT pg_current_wal_insert_lsn() > pg_current_wal_flush_lsn()")[0].as<bool>();
  };
  auto attempt = [&](const char* name, LockMode mode, const OwnerSecret& secret, bool queue, std::int64_t ticket) {
    return backend_attempt(backend, name, mode, secret, 30s, queue, ticket);
  };
  constexpr int kRounds = 10;
  int durable_acquires = 0, durable_renewals = 0, durable_queued = 0, durable_grants = 0, durable_shared = 0;
  int quick_releases = 0, quick_in_place = 0, quick_reader_releases = 0;
  for (int i = 0; i < kRounds; ++i) {
    const OwnerSecret a = OwnerSecret::generate(), b = OwnerSecret::generate(), r = OwnerSecret::generate();
    // Plain exclusive acquire, renewal and release.
    REQUIRE(attempt("wal", LockMode::kExclusive, a, false, 0).acquired);
    durable_acquires += !unflushed();
    REQUIRE(backend.renew("wal", LockMode::kExclusive, a, 30s).renewed);
    durable_renewals += !unflushed();
    REQUIRE(backend.release("wal", LockMode::kExclusive, a));
    quick_releases += unflushed();
    // A queued waiter's acquire, and the in-place release of a lease acquired after queueing.
    REQUIRE(attempt("wal", LockMode::kExclusive, a, false, 0).acquired);
    Outcome queued = attempt("wal", LockMode::kExclusive, b, true, 0);
    REQUIRE_FALSE(queued.acquired);
    REQUIRE(backend.release("wal", LockMode::kExclusive, a));
    REQUIRE(attempt("wal", LockMode::kExclusive, b, true, queued.queue_ticket).acquired);
    durable_queued += !unflushed();
    // The in-place release of a lease acquired after queueing: granting it to the next waiter is
    // that waiter's acquisition (flushed); freeing it with nobody queued is a release (not).
    const OwnerSecret g = OwnerSecret::generate();
    REQUIRE_FALSE(attempt("wal", LockMode::kExclusive, g, true, 0).acquired);
    REQUIRE(backend.release("wal", LockMode::kExclusive, b, kContended));
    durable_grants += !unflushed();
    REQUIRE(backend.release("wal", LockMode::kExclusive, g, kContended));
    quick_in_place += unflushed();
    // A shared lease.
    REQUIRE(attempt("wal-shared", LockMode::kShared, r, false, 0).acquired);
    durable_shared += !unflushed();
    REQUIRE(backend.release("wal-shared", LockMode::kShared, r));
    quick_reader_releases += unflushed();
  }
  CHECK(durable_acquires >= kRounds - 2);
  CHECK(durable_renewals >= kRounds - 2);
  CHECK(durable_queued >= kRounds - 2);
  CHECK(durable_grants >= kRounds - 2);
  CHECK(durable_shared >= kRounds - 2);
  CHECK(quick_releases >= kRounds - 2);
  CHECK(quick_in_place >= kRounds - 2);
  CHECK(quick_reader_releases >= kRounds - 2);
}

// The reaper walks expired rows in expiry-index order with a cursor (kReapLeases): whatever the
// order and however many rows share one expiry, a pass deletes every expired row nobody is queued
// for in bounded batches, and a row left behind the cursor (here: one that was already expired
// when it was inserted mid-pass) is found by the next pass.
TEST_CASE("postgresql: the reaper deletes expired rows in bounded batches across passes", "[postgresql][reaper]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  pqxx::connection c(conninfo());
  const std::string leases = "\"" + prefix + "leases\"";
  auto run = [&](const std::string& sql) {
    pqxx::nontransaction tx(c);
    return tx.exec(sql);
  };
  auto count_expired = [&] {
    return run("SELECT count(*) FROM " + leases + " WHERE expires_at <= clock_timestamp()")[0][0].as<int>();
  };
  const std::string columns = " (name, owner_secret, holder, mode, fence, acquired_at, expires_at, renewals, queued_until)";
  // 120 rows with one expiry (one statement's now()), 30 with different ones, 60 freed rows with
  // the '-infinity' expiry early versions wrote (more than a batch: the cursor must move on inside
  // them by name), and an expired row that waiters are queued for.
  run("INSERT INTO " + leases + columns + " SELECT 'same-' || g, gen_random_uuid(), 'test', 'exclusive', g,"
      " now() - interval '2 hours', now() - interval '1 hour', 0, NULL FROM generate_series(1, 120) g");
  run("INSERT INTO " + leases + columns + " SELECT 'spread-' || g, gen_random_uuid(), 'test', 'exclusive', g,"
      " now() - interval '2 days', now() - g * interval '1 minute', 0, NULL FROM generate_series(1, 30) g");
  run("INSERT INTO " + leases + columns + " SELECT 'legacy-free-' || g, NULL, NULL, 'exclusive', 1, now(), '-infinity', 0,"
      " NULL FROM generate_series(1, 60) g");
  run("INSERT INTO " + leases + columns + " VALUES ('marked', NULL, NULL, 'exclusive', 1, now(), now() - interval '1 hour',"
      " 0, clock_timestamp() + interval '1 hour')");
  auto live = manager->try_acquire("live");
  REQUIRE(live);
  REQUIRE(count_expired() == 211);

  constexpr std::size_t kBatch = 50;
  int deleted = 0;
  int passes = 0;
  bool inserted_behind = false;
  for (int call = 0; call < 20 && count_expired() > 1; ++call) {  // bounded: 211 rows need 5 to 9 calls
    const std::size_t n = ServiceDriver(*manager).reap(kBatch);
    CHECK(n <= kBatch);
    deleted += static_cast<int>(n);
    if (n < kBatch) ++passes;
    if (!inserted_behind) {
      // Mid-pass, after the first batch: an expired row older than everything reaped so far.
      run("INSERT INTO " + leases + columns + " VALUES ('behind', gen_random_uuid(), 'test', 'exclusive', 1,"
          " now() - interval '3 days', now() - interval '2 days', 0, NULL)");
      inserted_behind = true;
    }
  }
  CHECK(deleted == 211);
  CHECK(passes >= 1);
  CHECK(passes <= 2);
  CHECK(count_expired() == 1);  // the marked row
  CHECK(run("SELECT count(*) FROM " + leases + " WHERE name IN ('marked', 'live')")[0][0].as<int>() == 2);
  CHECK_FALSE(live->lost());
  CHECK(live->release() == ReleaseResult::kReleased);
}

TEST_CASE("postgresql: session locks use the documented advisory key and come in a shared mode",
          "[postgresql][session]") {
  // Exclusion across managers and threads is in the conformance suite.
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  const std::string name = "session-" + prefix;
  {
    auto held = a->session_lock(name, 0ms);
    REQUIRE(held);
    CHECK(held->key() == postgresql::advisory_key(name));
  }
  // Shared session locks admit many and exclude exclusive ones.
  SessionLockOptions shared;
  shared.mode = LockMode::kShared;
  auto r1 = a->session_lock(name, 0ms, shared);
  auto r2 = b->session_lock(name, 0ms, shared);
  CHECK(r1);
  CHECK(r2);
  CHECK_FALSE(a->session_lock(name, 0ms));
}

TEST_CASE("postgresql: a terminated session is detected as a lost session lock", "[postgresql][session][fault]") {
  const std::string prefix = unique_prefix();
  ManagerOptions options;
  options.session_check_interval = 100ms;
  options.holder = "holder-" + prefix;
  auto manager = open_with("application_name=" + prefix, options, prefix);
  std::mutex m;
  std::condition_variable cv;
  bool callback = false;
  SessionLockOptions lock_options;
  lock_options.on_lost = [&](const LostLease&) {
    std::lock_guard<std::mutex> lock(m);
    callback = true;
    cv.notify_all();
  };
  auto held = manager->session_lock("terminated-" + prefix, 0ms, lock_options);
  REQUIRE(held);
  CHECK(manager->metrics().session_locks_held == 1);
  CHECK(manager->metrics().session_locks_lost == 0);
  terminate(backend_pids(prefix));
  {
    std::unique_lock<std::mutex> lock(m);
    REQUIRE(cv.wait_for(lock, 10s, [&] { return callback; }));
  }
  const MetricsSnapshot metrics = manager->metrics();  // counted before the callback ran
  CHECK(metrics.session_locks_lost == 1);
  CHECK(metrics.session_locks_held == 0);
  CHECK(metrics.service == "postgresql");
  CHECK(held->lost());
  CHECK(held->release() == ReleaseResult::kAlreadyLost);
  auto other = open_manager({}, prefix);
  CHECK(other->session_lock("terminated-" + prefix, 0ms));  // the server freed it with the session
}

std::int64_t server_clock_us() {
  pqxx::connection c(conninfo());
  pqxx::nontransaction tx(c);
  return tx.exec1("SELECT (extract(epoch from clock_timestamp()) * 1000000)::bigint")[0].as<std::int64_t>();
}

void set_fence_sequence(const std::string& prefix, std::int64_t value) {
  pqxx::connection c(conninfo());
  pqxx::nontransaction tx(c);
  tx.exec_params("SELECT setval($1, $2)", tx.quote_name(prefix + "fence_seq"), value);
}

// docs/failover.md: a promoted standby may lack the old primary's last fences; every new
// connection floors the sequence above the server's clock and above what this process saw.
TEST_CASE("postgresql: a new connection floors the fence sequence at the server clock and at the fences seen",
          "[postgresql][failover]") {
  const std::string prefix = unique_prefix();
  auto manager = open_with("application_name=" + prefix, {}, prefix);
  const std::int64_t start_us = server_clock_us();
  // Fences far above the clock (an old primary whose clock ran ahead): one is issued to us.
  constexpr std::int64_t kTenHoursUs = 36'000'000'000;
  set_fence_sequence(prefix, start_us + kTenHoursUs);
  auto first = manager->try_acquire("floor");
  REQUIRE(first);
  const std::int64_t seen = first->fence();
  CHECK(seen > start_us + kTenHoursUs);
  REQUIRE(first->release() == ReleaseResult::kReleased);
  // The new primary lacks them (its sequence far below) and our connections broke.
  set_fence_sequence(prefix, 1);
  terminate(backend_pids(prefix));
  auto second = manager->acquire("floor", 10s);  // reconnects, floors above what it saw
  REQUIRE(second);
  CHECK(second->fence() > seen);
  REQUIRE(second->release() == ReleaseResult::kReleased);
  // A process that saw none of them: floored at the server's clock.
  set_fence_sequence(prefix, 1);
  auto other = open_manager({}, prefix);
  auto third = other->try_acquire("floor-other");
  REQUIRE(third);
  CHECK(third->fence() > start_us);
  CHECK(third->fence() < seen);
}

// A primary turned read-only under open connections (default_transaction_read_only, as some
// managers demote one): writes fail as ConnectionError, which waits ride over and which loses a
// lease at its safe-until; once writable again, the next attempt reconnects and acquires.
TEST_CASE("postgresql: a server turned read-only is a connection failure, never a usage error",
          "[postgresql][failover]") {
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  auto waiter = open_manager({}, prefix);
  AcquireOptions options;
  options.ttl = 1500ms;
  std::atomic<int> lost_calls{0};
  options.on_lost = [&](const LostLease&) { ++lost_calls; };
  auto lease = holder->try_acquire("read-only", options);
  REQUIRE(lease);
  auto set_read_only = [](bool on) {
    pqxx::connection c(conninfo());
    pqxx::nontransaction tx(c);
    tx.exec(std::string("ALTER SYSTEM SET default_transaction_read_only = ") + (on ? "on" : "off"));
    tx.exec("SELECT pg_reload_conf()");
    // The postmaster reloads (and signals every backend) asynchronously: a new session shows
    // when it has.
    for (int i = 0; i < 500; ++i) {
      pqxx::connection fresh(conninfo());
      pqxx::nontransaction check(fresh);
      if (check.exec1("SHOW default_transaction_read_only")[0].as<std::string>() == (on ? "on" : "off")) return;
      std::this_thread::sleep_for(10ms);
    }
    WARN("the server did not reload default_transaction_read_only within 5 s");  // the checks below fail then
  };
  struct Restore {
    std::function<void(bool)> set;
    ~Restore() { set(false); }
  } restore{set_read_only};
  set_read_only(true);
  // A waiter rides over the refusals until its wait ends: a time-out, not a usage error.
  const auto started = std::chrono::steady_clock::now();
  try {
    waiter->acquire("read-only-other", 1500ms);
    FAIL("acquired on a read-only server");
  } catch (const TimeoutError&) {
  } catch (const ConnectionError& e) {
    INFO(e.what());
    CHECK(std::chrono::steady_clock::now() - started >= 1400ms);  // not given up early
  }
  // The holder's renewals fail: lost by its safe-until, and told.
  for (int i = 0; i < 250 && !lease->lost(); ++i) std::this_thread::sleep_for(20ms);  // polls up to 5 s
  CHECK(lease->lost());
  CHECK(std::chrono::steady_clock::now() >= lease->safe_until());
  for (int i = 0; i < 100 && lost_calls == 0; ++i) std::this_thread::sleep_for(10ms);
  CHECK(lost_calls == 1);
  set_read_only(false);
  auto again = waiter->acquire("read-only", 10s);
  CHECK(again);
}

TEST_CASE("postgresql: leases survive pg_terminate_backend of their connections", "[postgresql][fault]") {
  const std::string prefix = unique_prefix();
  auto manager = open_with("application_name=" + prefix, {}, prefix);
  AcquireOptions options;
  options.ttl = 2s;  // renewed every 0.67 s: a reconnect under load fits
  auto lease = manager->try_acquire("survivor", options);
  REQUIRE(lease);
  terminate(backend_pids(prefix));  // pool and listener connections die; the row does not
  // Renewals reconnect: the lease stays held, renewed twice more on new connections.
  auto other = open_manager({}, prefix);
  const std::int64_t renewed_before = other->inspect("survivor")->renewals;
  std::int64_t renewed = renewed_before;
  for (const auto until = std::chrono::steady_clock::now() + 10s;
       renewed < renewed_before + 2 && std::chrono::steady_clock::now() < until;) {
    CHECK_FALSE(other->try_acquire("survivor"));
    std::this_thread::sleep_for(100ms);  // sampling interval
    if (auto info = other->inspect("survivor")) renewed = info->renewals;
  }
  CHECK(renewed >= renewed_before + 2);
  CHECK_FALSE(lease->lost());
  terminate(backend_pids(prefix));
  // The release's first try meets the dead connection before reaching a session, and the retry
  // on a new one releases: released, and free at once (not after the TTL, as a lease in doubt).
  CHECK(lease->release() == ReleaseResult::kReleased);
  CHECK(other->try_acquire("survivor"));
}

TEST_CASE("postgresql: session locks are refused behind pgbouncer in transaction mode", "[postgresql][pooler]") {
  std::string bouncer = env("DBLOCK_TEST_PGBOUNCER_URL");
  REQUIRE_FALSE(bouncer.empty());
  const std::string prefix = unique_prefix();
  open_manager({}, prefix);  // create the tables directly (DDL through the pooler is fine too)
  ManagerOptions options;
  options.table_prefix = prefix;
  auto manager = dblock::open(bouncer + "?prepared=0", options);
  try {
    manager->session_lock("pooled-" + prefix, 0ms);
    FAIL("session lock accepted behind a transaction pooler");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("pool") != std::string::npos);
  }
  // Leases, being rows, work through the pooler.
  auto lease = manager->try_acquire("pooled-lease");
  REQUIRE(lease);
  CHECK(lease->release() == ReleaseResult::kReleased);
}

TEST_CASE("postgresql: transaction-level advisory lock", "[postgresql][txlock]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  const std::string name = "xact-" + prefix;
  std::atomic<bool> b_result{true};
  bool ran = dblock::sql::Database(*a).run_in_transaction_lock(name, 1s, [&](Transaction& tx) {
    CHECK(std::get<std::int64_t>(tx.query("SELECT 1")[0][0]) == 1);
    std::thread other([&] { b_result = dblock::sql::Database(*b).run_in_transaction_lock(name, 200ms, [](Transaction&) {}); });
    other.join();
    CHECK_FALSE(dblock::sql::Database(*b).run_in_transaction_lock(name, 0ms, [](Transaction&) {}));
  });
  CHECK(ran);
  CHECK_FALSE(b_result);
  CHECK(dblock::sql::Database(*b).run_in_transaction_lock(name, 0ms, [](Transaction&) {}));  // released at commit
}

TEST_CASE("postgresql: interop with the application's own pqxx transaction", "[postgresql][interop]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lease = manager->try_acquire("interop");
  REQUIRE(lease);
  pqxx::connection c(conninfo());
  {
    pqxx::work tx(c);
    CHECK_NOTHROW(postgresql::guard(tx, *lease, prefix));
    CHECK(postgresql::xact_lock(tx, "interop-xact-" + prefix, 0ms));
    tx.commit();
  }
  CHECK(manager->force_release("interop"));
  pqxx::work tx(c);
  CHECK_THROWS_AS(postgresql::guard(tx, *lease, prefix), LeaseLostError);
}

TEST_CASE("postgresql: interop lock_rows takes rows by a predicate, as with_locked_rows does",
          "[postgresql][interop][rowlock]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  const std::string table = prefix + "jobs";
  pqxx::connection c(conninfo());
  {
    pqxx::work setup(c);
    setup.exec("CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, state TEXT)");
    setup.exec("INSERT INTO " + table + " VALUES (3, 'pending'), (1, 'pending'), (2, 'done'), (4, 'pending')");
    setup.commit();
  }
  const RowLockRequest next{.table = table,
                            .where = {{"state", "pending"}},
                            .order_by = {"id"},
                            .columns = {"id"},
                            .wait = RowLockWait::kSkipLocked,
                            .limit = 1};
  pqxx::work tx(c);
  pqxx::result mine;
  REQUIRE(postgresql::lock_rows(tx, next, mine));
  REQUIRE(mine.size() == 1);
  CHECK(mine[0][0].as<std::int64_t>() == 1);
  std::vector<std::int64_t> theirs;
  CHECK(dblock::sql::Database(*manager).with_locked_rows(next, [&](Transaction&, const std::vector<std::vector<Value>>& rows) {
    for (const auto& row : rows) theirs.push_back(std::get<std::int64_t>(row.at(0)));
  }));
  CHECK(theirs == std::vector<std::int64_t>{3});  // 1 is held by tx, 2 is not pending
  RowLockRequest none = next;
  none.where.clear();
  CHECK_THROWS_AS(postgresql::lock_rows(tx, none, mine), UsageError);
}

}  // namespace dblock::testing

namespace dblock::testing {

TEST_CASE("postgresql: with listen=0 a waiting process holds one connection", "[postgresql][connections]") {
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  auto held = holder->try_acquire("busy");
  REQUIRE(held);
  pqxx::connection admin(conninfo());
  auto connections_of = [&](const std::string& application) {
    pqxx::nontransaction tx(admin);
    return tx.exec1("SELECT count(*) FROM pg_stat_activity WHERE application_name = " + tx.quote(application))[0]
        .as<int>();
  };
  for (const bool listen : {true, false}) {
    const std::string application = prefix + (listen ? "listening" : "polling");
    ManagerOptions options;
    options.table_prefix = prefix;
    options.reaper = false;
    const std::string url = context().url + (context().url.find('?') == std::string::npos ? "?" : "&") +
                            "application_name=" + application + (listen ? "" : "&listen=0");
    auto waiter = dblock::open(url, options);
    std::atomic<bool> done{false};
    std::thread waiting([&] {
      CHECK_FALSE(waiter->acquire("busy", 2s));
      done = true;
    });
    int most = 0;
    for (int i = 0; i < 40 && !done; ++i) {  // samples during the 2 s wait
      most = std::max(most, connections_of(application));
      std::this_thread::sleep_for(50ms);
    }
    waiting.join();
    INFO("listen=" << listen);
    CHECK(most == (listen ? 2 : 1));
  }
}

TEST_CASE("postgresql: a read-only monitoring role lists leases with the documented grants", "[postgresql][privileges]") {
  const std::string prefix = unique_prefix();
  const std::string role = prefix + "monitor";
  auto owner = open_manager({}, prefix);
  auto lease = owner->try_acquire("watched");
  REQUIRE(lease);
  {
    pqxx::connection c(conninfo());
    pqxx::work tx(c);
    tx.exec("CREATE ROLE \"" + role + "\" LOGIN");
    for (const char* table : {"leases", "readers", "schema_version", "force_releases"}) {
      tx.exec("GRANT SELECT ON \"" + prefix + table + "\" TO \"" + role + "\"");
    }
    tx.commit();
  }
  REQUIRE(owner->force_release("watched"));
  lease.reset();  // this thread's evicted hold, let go: a thread holds a name once
  lease = owner->try_acquire("watched");
  REQUIRE(lease);
  auto base = parse_url(context().url);
  const std::string url = "postgresql://" + role + "@" + base.hosts.at(0).host + ":" +
                          std::to_string(base.hosts.at(0).port) + "/" + base.path;
  ManagerOptions monitor;
  monitor.table_prefix = prefix;
  monitor.reaper = false;  // a monitor deletes nothing
  auto manager = dblock::open(url, monitor);
  const auto leases = manager->list();
  REQUIRE(leases.size() == 1);
  CHECK(leases[0].fence == lease->fence());
  CHECK(leases[0].waiters == -1);  // no SELECT on the waiters table: unknown, and the list still answers
  CHECK(manager->inspect("watched"));
  CHECK(manager->force_release_history("watched").size() == 1);
  CHECK_THROWS_AS(manager->try_acquire("not-for-monitors"), PermissionError);  // and it cannot take a lease
  CHECK_THROWS_AS(manager->force_release("watched"), PermissionError);
}

TEST_CASE("postgresql: a least-privilege role can use every lease operation", "[postgresql][privileges]") {
  const std::string prefix = unique_prefix();
  const std::string role = prefix + "app";
  open_manager({}, prefix);  // migrate as the owner
  {
    pqxx::connection c(conninfo());
    pqxx::work tx(c);
    tx.exec("CREATE ROLE \"" + role + "\" LOGIN");
    for (const char* table : {"leases", "readers", "waiters"}) {
      tx.exec("GRANT SELECT, INSERT, UPDATE, DELETE ON \"" + prefix + table + "\" TO \"" + role + "\"");
    }
    tx.exec("GRANT SELECT ON \"" + prefix + "schema_version\" TO \"" + role + "\"");
    tx.exec("GRANT USAGE, UPDATE ON SEQUENCE \"" + prefix + "fence_seq\" TO \"" + role + "\"");
    tx.exec("GRANT INSERT ON \"" + prefix + "force_releases\" TO \"" + role + "\"");  // force-release only
    tx.exec("REVOKE CREATE ON SCHEMA public FROM PUBLIC");  // PostgreSQL 15's default, made explicit
    tx.commit();
  }
  auto base = parse_url(context().url);
  std::string url = "postgresql://" + role + "@" + base.hosts.at(0).host + ":" + std::to_string(base.hosts.at(0).port) +
                    "/" + base.path;
  ManagerOptions options;
  options.table_prefix = prefix;
  auto manager = dblock::open(url, options);
  AcquireOptions short_ttl;
  short_ttl.ttl = 900ms;
  auto lease = manager->try_acquire("least", short_ttl);
  REQUIRE(lease);
  // Renewals (every 300 ms) run as this role: two recorded, and safe-until moved past the first
  // acquisition's (a refused renewal would lose the lease instead).
  const auto first_safe_until = lease->safe_until();
  std::int64_t renewals = 0;
  for (const auto until = std::chrono::steady_clock::now() + 5s; renewals < 2 && std::chrono::steady_clock::now() < until;) {
    if (auto info = manager->inspect("least")) renewals = info->renewals;
    if (renewals < 2) std::this_thread::sleep_for(20ms);
  }
  CHECK(renewals >= 2);
  CHECK(lease->safe_until() > first_safe_until);
  CHECK_FALSE(lease->lost());
  CHECK(manager->list().size() == 1);
  AcquireOptions shared;
  shared.mode = LockMode::kShared;
  CHECK(manager->try_acquire("least-shared", shared));
  CHECK(manager->session_lock("least-session-" + prefix, 0ms));
  CHECK(manager->force_release("least"));
  manager->reap();
  CHECK(lease->release() == ReleaseResult::kAlreadyLost);
  // The role cannot create tables: a missing schema is reported, not silently created.
  ManagerOptions other = options;
  other.table_prefix = unique_prefix();
  CHECK_THROWS(dblock::open(url, other));
}

}  // namespace dblock::testing

namespace dblock::testing {

TEST_CASE("postgresql: a server in recovery (a standby) is refused", "[postgresql][recovery]") {
  std::string standby = env("DBLOCK_TEST_PG_STANDBY_URL");
  REQUIRE_FALSE(standby.empty());
  ManagerOptions options;
  options.table_prefix = unique_prefix();
  try {
    dblock::open(standby, options);
    FAIL("a standby was accepted");
  } catch (const ConnectionError& e) {
    CHECK(std::string(e.what()).find("recovery") != std::string::npos);
  }
}

}  // namespace dblock::testing

namespace dblock::testing {

TEST_CASE("postgresql: a held session lock does not block CREATE INDEX CONCURRENTLY", "[postgresql][session]") {
  // README: dblock's session-lock connection sits idle outside any transaction, so it is not one
  // of the transactions CREATE INDEX CONCURRENTLY waits for (a pg_advisory_xact_lock would be).
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  auto lock = manager->session_lock("migrations-" + prefix, 0ms);
  REQUIRE(lock);
  pqxx::connection c(conninfo());
  {
    pqxx::nontransaction tx(c);
    tx.exec("SET statement_timeout = '30s'");
    tx.exec("CREATE TABLE \"" + prefix + "cic\" (id bigint)");
    CHECK_NOTHROW(tx.exec("CREATE INDEX CONCURRENTLY \"" + prefix + "cic_idx\" ON \"" + prefix + "cic\" (id)"));
  }
  CHECK_FALSE(lock->lost());
}

}  // namespace dblock::testing

namespace dblock::testing {

namespace {

// Waits (bounded) until a backend is blocked by the session `blocker`; true if one was.
bool someone_blocked_by(int blocker) {
  pqxx::connection c(conninfo());
  pqxx::nontransaction tx(c);
  for (int i = 0; i < 2000; ++i) {
    if (tx.exec_params1("SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))", blocker)[0]
            .as<int>() > 0) {
      return true;
    }
    std::this_thread::sleep_for(5ms);
  }
  return false;
}

}  // namespace

TEST_CASE("postgresql: acquire_all is one transaction: a name it took is unseen until the end, undone by a refusal",
          "[postgresql][multi]") {
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  auto m = open_manager({}, prefix);
  auto observer = open_manager({}, prefix);
  REQUIRE(service_of(*m).multi_acquire() != nullptr);
  const std::int64_t before = [&] {
    auto lease = observer->try_acquire("multi-a");
    REQUIRE(lease);
    REQUIRE(lease->release() == ReleaseResult::kReleased);
    return lease->fence();
  }();
  auto held = holder->try_acquire("multi-b");
  REQUIRE(held);
  // A bystander locks multi-b's row: acquire_all blocks there, having written multi-a already.
  pqxx::connection raw(conninfo());
  auto lock = std::make_unique<pqxx::work>(raw);
  lock->exec("SELECT 1 FROM " + lock->quote_name(prefix + "leases") + " WHERE name = 'multi-b' FOR UPDATE");
  auto all = std::async(std::launch::async, [&] { return m->acquire_all({"multi-b", "multi-a"}, 0ms); });
  const bool blocked = someone_blocked_by(raw.backendpid());
  // Taken one by one, multi-a would be committed and listed by now; in one transaction it is not.
  CHECK(blocked);
  CHECK_FALSE(observer->inspect("multi-a"));
  lock->abort();
  CHECK_FALSE(all.get());
  check_after_refused_acquire_all(*m, *observer, *holder, *held, before);
}

TEST_CASE("postgresql: an acquire_all blocked past its deadline fails retryably and leaves no name locked",
          "[postgresql][multi]") {
  const std::string prefix = unique_prefix();
  auto holder = open_manager({}, prefix);
  auto m = open_manager({}, prefix);
  auto observer = open_manager({}, prefix);
  auto held = holder->try_acquire("multi-b");
  REQUIRE(held);
  pqxx::connection raw(conninfo());
  pqxx::work lock(raw);  // held for the whole case
  lock.exec("SELECT 1 FROM " + lock.quote_name(prefix + "leases") + " WHERE name = 'multi-b' FOR UPDATE");
  try {
    m->acquire_all({"multi-a", "multi-b"}, 0ms);  // the call's deadline: 2 s
    FAIL("acquire_all went past a locked row");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.retryable());
    CHECK(e.sqlstate() == "55P03");  // the server ended the wait, not the client's cut
  }
  // The server ended the transaction too: multi-a's row is not left locked by a waiting backend.
  CHECK(observer->try_acquire("multi-a"));
}

}  // namespace dblock::testing
