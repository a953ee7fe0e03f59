// etcd: the cases only etcd has (the suite's context: etcd_context.cc) (URLs, the etcd-mutex layout
// that `etcdctl lock` shares, python-etcd3's, a cluster's leader dying and its quorum lost). ctest
// starts the member or the cluster (scripts/servers/etcd.sh) and passes its URL.
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <cstdio>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client.h"
#include "context.h"
#include "environment.h"
#include "etcd_support.h"
#include "process.h"
#include "service_driver.h"

namespace dblock::testing {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

namespace {

// Joins `t` when the scope ends, however the case ends (a failed REQUIRE throws past the join).
struct JoinOnExit {
  std::thread& t;
  ~JoinOnExit() {
    if (t.joinable()) t.join();
  }
};

// etcdctl's own namespace: the URL with prefix "" (the keys "<name>/<lease>" etcdctl lock uses).
std::string bare_url() { return context().url + "?prefix="; }

// `etcdctl lock NAME` held until the Child is signalled: it prints its key once it holds.
Child etcdctl_lock(const std::string& name) {
  return Child({"etcdctl", "--endpoints", endpoint(), "lock", name});
}

}  // namespace

TEST_CASE("etcd: bad URLs are usage errors naming what is wrong", "[etcd][input]") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"etcd://127.0.0.1:1?prefix=app", "separator"},
      {"etcd://127.0.0.1:1/locks?prefix=app/", "not both"},
      {"etcd://127.0.0.1:1?connect_timeout=0", "connect_timeout"},
      {"etcd://127.0.0.1:1?session_ttl=0", "session_ttl"},
      {"etcd://127.0.0.1:1?colour=blue", "colour"},
      {"etcd://only_user@127.0.0.1:1", "user and a password"},
  };
  for (const auto& [url, says] : cases) {
    INFO(url);
    try {
      open_on(url);
      FAIL("opened");
    } catch (const UsageError& e) {
      CHECK(std::string(e.what()).find(says) != std::string::npos);
    }
  }
}

TEST_CASE("etcd: an endpoint where no etcd answers fails by the connect timeout", "[etcd][input]") {
  const auto start = SteadyClock::now();
  CHECK_THROWS_AS(open_on("etcd://127.0.0.1:1?connect_timeout=2"), ConnectionError);
  CHECK(SteadyClock::now() - start < 10s);
}

namespace {

// A TCP server on 127.0.0.1 that is not etcd: it answers every connection with an HTTP/1.1 error
// and closes it, until destroyed.
class NotEtcd {
 public:
  NotEtcd() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    REQUIRE(fd_ >= 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    REQUIRE(::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~NotEtcd() {
    stop_ = true;
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }

 private:
  void serve() {
    static constexpr char kReply[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;  // 50 ms: how soon the destructor is noticed
      const int conn = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (conn < 0) continue;
      [[maybe_unused]] const ssize_t n = ::send(conn, kReply, sizeof(kReply) - 1, MSG_NOSIGNAL);
      ::close(conn);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace

TEST_CASE("etcd: an endpoint that is not etcd is a connection error by the connect timeout", "[etcd][input]") {
  NotEtcd http;
  const std::string url = "etcd://127.0.0.1:" + std::to_string(http.port()) + "?connect_timeout=2";
  const auto start = SteadyClock::now();
  try {
    open_on(url);
    FAIL("opened");
  } catch (const ConnectionError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find("etcd: connect") != std::string::npos);
  }
  CHECK(SteadyClock::now() - start < 10s);
}

TEST_CASE("etcd: a lease revoked by someone else: its holder is told, the name is free, the manager goes on",
          "[etcd][fault]") {
  const std::string prefix = unique_prefix();
  LostWatch probe;  // outlives the manager, whose renewal thread calls it
  auto manager = open_on(context().url, prefix);
  auto other = open_on(context().url, prefix);
  AcquireOptions options = ttl(3s);
  options.on_lost = probe.callback();
  std::optional<Lease> lease = manager->try_acquire("revoked", options);
  REQUIRE(lease);
  // The holder's key is "<prefix>revoked/<lease id in hex>", as concurrency.Mutex names it.
  const std::vector<std::string> keys = etcdctl("get --prefix '" + prefix + "revoked/' --keys-only");
  REQUIRE_FALSE(keys.empty());
  const std::string lease_hex = keys.front().substr(keys.front().rfind('/') + 1);
  REQUIRE_FALSE(etcdctl("lease revoke " + lease_hex).empty());
  // The next renewal (TTL/3) finds the lease gone.
  REQUIRE(probe.wait(5s));
  CHECK(lease->lost());
  std::optional<Lease> taken = other->try_acquire("revoked", ttl(3s));
  REQUIRE(taken);
  CHECK(taken->fence() > lease->fence());
  // The manager's next acquisition is on a new lease.
  std::optional<Lease> next = manager->try_acquire("after-revoke", ttl(3s));
  REQUIRE(next);
  CHECK(next->release() == ReleaseResult::kReleased);
}

TEST_CASE("etcd: the fence is the key's create revision, growing with every acquisition", "[etcd][fence]") {
  auto manager = open_on(context().url, unique_prefix());
  std::int64_t last = 0;
  for (int i = 0; i < 3; ++i) {
    std::optional<Lease> lease = manager->try_acquire("job", ttl(5s));
    REQUIRE(lease);
    CHECK(lease->fence() > last);
    last = lease->fence();
    lease->release();
  }
}

// Waits (bounded) until `name` has `n` contenders behind its holder.
void await_waiters(LockManager& manager, const std::string& name, int n) {
  for (const auto until = SteadyClock::now() + 10s; SteadyClock::now() < until;) {
    const std::optional<LeaseInfo> info = manager.inspect(name);
    if (info && info->waiters == n) return;
    std::this_thread::sleep_for(20ms);
  }
  FAIL("no " << n << " waiter(s) behind the holder of '" << name << "' within 10 s");
}

// The store's revision as a read of `key` reports it (etcdctl's header); fails the case when unread.
std::int64_t revision_of(const std::string& key) {
  std::int64_t revision = 0;
  for (const std::string& line : etcdctl("get '" + key + "' -w fields")) {
    if (line.rfind("\"Revision\" : ", 0) == 0) revision = std::stoll(line.substr(13));
  }
  REQUIRE(revision > 0);
  return revision;
}

// The fence list() shows for `name`'s holder (a foreign one's key's create revision).
std::int64_t listed_fence(LockManager& manager, const std::string& name) {
  const std::optional<LeaseInfo> info = manager.inspect(name);
  REQUIRE(info);
  return info->fence;
}

TEST_CASE("etcd: a waiter holds on the read that finds nobody ahead of it, with no attempt after the watch",
          "[etcd][wait]") {
  const std::string prefix = unique_prefix();
  auto holder = open_on(context().url, prefix);
  // Its line entry is refreshed (an attempt) every max_poll * 4 / 3: 4 s here, longer than the case.
  ManagerOptions options;
  options.table_prefix = prefix;
  options.max_poll = 3s;
  auto waiter = dblock::open(context().url, options);
  std::optional<Lease> held = holder->try_acquire("front", ttl(5s));
  REQUIRE(held);
  std::optional<Lease> got;
  std::thread t([&] { got = waiter->acquire("front", 10s, ttl(5s)); });
  JoinOnExit join{t};
  await_waiters(*holder, "front", 1);
  REQUIRE(held->release() == ReleaseResult::kReleased);
  t.join();
  REQUIRE(got);
  CHECK(got->fence() > held->fence());
  // One attempt put the key in line; the wait's read after the release found it first.
  CHECK(waiter->metrics().exclusive.attempts == 1);
  // Held as any lease: renewed, then released.
  for (const auto until = SteadyClock::now() + 5s; waiter->metrics().renewals_ok == 0 && SteadyClock::now() < until;) {
    std::this_thread::sleep_for(50ms);
  }
  CHECK(waiter->metrics().renewals_ok > 0);
  CHECK_FALSE(got->lost());
  CHECK(got->release() == ReleaseResult::kReleased);
  CHECK_FALSE(holder->inspect("front").has_value());
}

TEST_CASE("etcd: a watch from a compacted revision ends at once, a hint that sends the waiter to read again",
          "[etcd][fault]") {
  etcd::Options options;
  const Url url = parse_url(context().url);
  options.endpoints = {etcd::Options::Endpoint{url.hosts.at(0).host, url.hosts.at(0).port}};
  options.prefix = unique_prefix();
  etcd::Client client(options);
  const std::string key = options.prefix + "watched";
  REQUIRE_FALSE(etcdctl("put '" + key + "' held").empty());
  const std::int64_t written = revision_of(key);
  for (int i = 0; i < 3; ++i) etcdctl("put '" + options.prefix + "filler' " + std::to_string(i));
  REQUIRE_FALSE(etcdctl("compaction " + std::to_string(revision_of(options.prefix + "filler"))).empty());
  // The key is still there: only the compaction can end this watch before its 5 s.
  const auto start = SteadyClock::now();
  CHECK(client.wait_deleted(key, written, start + 5s));
  CHECK(SteadyClock::now() - start < 2s);
}

TEST_CASE("etcd: a waiter whose watched revision is compacted away still takes the lock at the release",
          "[etcd][fault]") {
  const std::string prefix = unique_prefix();
  auto holder = open_on(context().url, prefix);
  auto second = open_on(context().url, prefix);
  std::optional<Lease> lease = holder->try_acquire("compacted", ttl(5s));
  REQUIRE(lease);
  std::optional<Lease> got;
  std::thread waiter([&] { got = second->acquire("compacted", 20s, ttl(5s)); });
  const JoinOnExit join{waiter};
  await_waiters(*holder, "compacted", 1);
  // Writes past the waiter's watch, then a compaction at the newest revision: the watch's start
  // revision is history now.
  for (int i = 0; i < 3; ++i) etcdctl("put '" + prefix + "filler' " + std::to_string(i));
  const std::int64_t revision = revision_of(prefix + "filler");
  REQUIRE_FALSE(etcdctl("compaction " + std::to_string(revision)).empty());
  const std::int64_t fence = lease->fence();
  CHECK(lease->release() == ReleaseResult::kReleased);
  waiter.join();
  REQUIRE(got);
  CHECK(got->fence() > fence);
}

TEST_CASE("etcd: etcdctl lock and dblock exclude each other on the same name", "[etcd][interop]") {
  const std::string name = "interop-" + unique_prefix();
  auto manager = open_on(bare_url());

  SECTION("etcdctl holds: dblock is refused, and a dblock waiter takes the lock at its release") {
    Child holder = etcdctl_lock(name);
    const std::optional<std::string> key = holder.read_line(10s);
    REQUIRE(key);
    CHECK(key->rfind(name + "/", 0) == 0);
    CHECK_FALSE(manager->try_acquire(name, ttl(5s)));
    const std::int64_t foreign = listed_fence(*manager, name);
    std::optional<Lease> lease;
    std::thread waiter([&] { lease = manager->acquire(name, 20s, ttl(5s)); });
    await_waiters(*manager, name, 1);  // in line behind etcdctl's key
    holder.signal(SIGINT);             // etcdctl revokes its session's lease on the way out
    waiter.join();
    REQUIRE(lease);
    CHECK(lease->fence() > foreign);
    CHECK(holder.wait(5s));
  }

  SECTION("dblock holds: etcdctl waits, and takes the lock at dblock's release") {
    std::optional<Lease> lease = manager->try_acquire(name, ttl(10s));
    REQUIRE(lease);
    Child waiter = etcdctl_lock(name);
    await_waiters(*manager, name, 1);  // etcdctl's key is in line: it waits
    lease->release();
    const std::optional<std::string> key = waiter.read_line(10s);
    REQUIRE(key);
    CHECK(key->rfind(name + "/", 0) == 0);
    CHECK_FALSE(manager->try_acquire(name, ttl(5s)));
    const std::optional<LeaseInfo> info = manager->inspect(name);
    REQUIRE(info);
    CHECK(info->holder.find("etcdctl") != std::string::npos);
    CHECK(info->fence > lease->fence());
    waiter.signal(SIGINT);
    CHECK(waiter.wait(5s));
  }

  SECTION("fences of dblock's acquisitions interleaved with etcdctl's holds strictly increase") {
    std::int64_t last = 0;
    for (int round = 0; round < 3; ++round) {
      std::optional<Lease> lease = manager->try_acquire(name, ttl(5s));
      REQUIRE(lease);
      CHECK(lease->fence() > last);
      last = lease->fence();
      lease->release();
      Child holder = etcdctl_lock(name);
      REQUIRE(holder.read_line(10s));
      const std::int64_t foreign = listed_fence(*manager, name);
      CHECK(foreign > last);
      last = foreign;
      holder.signal(SIGINT);
      CHECK(holder.wait(5s));
    }
  }
}

TEST_CASE("etcd: dblock's readers and etcdctl lock exclude each other; readers share behind and ahead of it",
          "[etcd][interop][shared]") {
  const std::string name = "rw-" + unique_prefix();
  auto manager = open_on(bare_url());
  auto other = open_on(bare_url());
  AcquireOptions reader = ttl(10s);
  reader.mode = LockMode::kShared;
  std::optional<Lease> r1 = manager->try_acquire(name, reader);
  std::optional<Lease> r2 = other->try_acquire(name, reader);
  REQUIRE((r1 && r2));
  Child writer = etcdctl_lock(name);
  await_waiters(*manager, name, 1);  // etcdctl's key stands behind the two readers' and waits
  CHECK(manager->inspect(name)->holders == 2);
  // A reader that comes after etcdctl's key stands behind it: it does not slip past a writer.
  CHECK_FALSE(open_on(bare_url())->try_acquire(name, reader));
  std::optional<Lease> late;
  std::thread late_reader([&] { late = other->acquire(name, 20s, reader); });
  const JoinOnExit join{late_reader};
  await_waiters(*manager, name, 2);
  CHECK(r1->release() == ReleaseResult::kReleased);
  CHECK_FALSE(writer.read_line(300ms));  // one reader still holds
  CHECK(r2->release() == ReleaseResult::kReleased);
  const std::optional<std::string> key = writer.read_line(10s);
  REQUIRE(key);
  CHECK(key->rfind(name + "/", 0) == 0);
  const std::optional<LeaseInfo> held = manager->inspect(name);
  REQUIRE(held);
  CHECK(held->holder.find("etcdctl") != std::string::npos);
  CHECK(held->waiters == 1);  // the late reader, still waiting behind etcdctl's hold
  const std::int64_t foreign = held->fence;
  writer.signal(SIGINT);
  late_reader.join();
  REQUIRE(late);
  CHECK(late->fence() > foreign);
  CHECK(writer.wait(5s));
}

TEST_CASE("etcd: acquire_all takes no name while etcdctl holds one of them, then every name in one transaction",
          "[etcd][interop][multi]") {
  const std::string tag = unique_prefix();
  const std::vector<std::string> names = {"all-a-" + tag, "all-b-" + tag};
  auto manager = open_on(bare_url());
  Child holder = etcdctl_lock(names[1]);
  REQUIRE(holder.read_line(10s));
  CHECK_FALSE(manager->acquire_all(names, 0ms));
  CHECK_FALSE(manager->inspect(names[0]));  // nothing of the refused call is left
  holder.signal(SIGINT);
  CHECK(holder.wait(5s));
  std::optional<std::vector<Lease>> all = manager->acquire_all(names, 10s);
  REQUIRE(all);
  REQUIRE(all->size() == 2);
  CHECK(all->at(0).fence() == all->at(1).fence());  // one transaction's revision
  Child waiter = etcdctl_lock(names[0]);
  await_waiters(*manager, names[0], 1);  // etcdctl waits behind the key the transaction put
  for (Lease& lease : *all) CHECK(lease.release() == ReleaseResult::kReleased);
  REQUIRE(waiter.read_line(10s));
  waiter.signal(SIGINT);
  CHECK(waiter.wait(5s));
}

TEST_CASE("etcd: dblock's Election and etcdctl elect campaign in one line: one leader, either way",
          "[etcd][interop][election]") {
  const std::string name = "elect-" + unique_prefix();
  auto manager = open_on(bare_url());
  // etcdctl leads: dblock's candidate waits, and sees it as the leader.
  Child theirs({"etcdctl", "--endpoints", endpoint(), "elect", name, "their-proposal"});
  const std::optional<std::string> key = theirs.read_line(10s);
  REQUIRE(key);
  CHECK(key->rfind(name + "/", 0) == 0);
  Election ours(*manager, name);
  CHECK_FALSE(ours.await_leadership(300ms));
  const std::optional<Leader> leader = current_leader(*manager, name);
  REQUIRE(leader);
  CHECK(leader->holder.find("their-proposal") != std::string::npos);
  theirs.signal(SIGINT);  // etcdctl resigns on the way out
  CHECK(theirs.wait(5s));
  REQUIRE(ours.await_leadership(10s));
  // dblock leads: `etcdctl elect --listen` names dblock's key, and etcdctl's candidate waits.
  Child observer({"etcdctl", "--endpoints", endpoint(), "elect", "--listen", name});
  const std::optional<std::string> observed = observer.read_line(10s);
  REQUIRE(observed);
  CHECK(observed->rfind(name + "/", 0) == 0);
  observer.signal(SIGINT);
  CHECK(observer.wait(5s));
  Child next({"etcdctl", "--endpoints", endpoint(), "elect", name, "next-proposal"});
  await_waiters(*manager, name, 1);
  CHECK_FALSE(next.read_line(0ms));
  ours.resign();
  REQUIRE(next.read_line(10s));  // elected at dblock's resignation
  next.signal(SIGINT);
  CHECK(next.wait(5s));
}

TEST_CASE("etcd: etcdctl lock waits out a scheduled job's window", "[etcd][interop][scheduled]") {
  const std::string name = "window-" + unique_prefix();
  auto manager = open_on(bare_url());
  AcquireOptions job;
  job.hold_at_least = 2s;
  std::optional<Lease> run = manager->try_acquire(name, job);
  REQUIRE(run);
  const auto started = SteadyClock::now();
  CHECK(run->release() == ReleaseResult::kReleased);  // inside the window: the key stays
  Child waiter = etcdctl_lock(name);
  CHECK_FALSE(waiter.read_line(500ms));
  REQUIRE(waiter.read_line(10s));  // the window's lease ended, and its key with it
  CHECK(SteadyClock::now() - started >= 2s - 300ms);
  waiter.signal(SIGINT);
  CHECK(waiter.wait(5s));
}

TEST_CASE("etcd: a session lock stands in the same line as etcdctl lock and dblock's leases", "[etcd][interop]") {
  const std::string name = "session-" + unique_prefix();
  auto manager = open_on(bare_url() + "&session_ttl=2");
  std::optional<SessionLock> held = manager->session_lock(name, 0ms);
  REQUIRE(held);
  CHECK_FALSE(manager->try_acquire(name, ttl(5s)));
  Child waiter = etcdctl_lock(name);
  await_waiters(*manager, name, 1);  // etcdctl's key is in line behind the session lock's
  // Past its 2 s session TTL: its keep-alives hold it.
  for (const auto until = SteadyClock::now() + 3s; SteadyClock::now() < until;) {
    CHECK_FALSE(held->lost());
    std::this_thread::sleep_for(100ms);  // sampling interval, not synchronisation
  }
  CHECK_FALSE(waiter.read_line(0ms));
  CHECK(held->release() == ReleaseResult::kReleased);
  const std::optional<std::string> key = waiter.read_line(10s);
  REQUIRE(key);
  CHECK(key->rfind(name + "/", 0) == 0);
  // etcdctl holds: a session lock waits for it, and gets it at its release.
  std::optional<SessionLock> next;
  std::thread taker([&] { next = manager->session_lock(name, 20s); });
  const JoinOnExit join{taker};
  await_waiters(*manager, name, 1);
  waiter.signal(SIGINT);
  taker.join();
  REQUIRE(next);
  CHECK(waiter.wait(5s));
}

namespace {

// python-etcd3's Lock on /locks/NAME (python_etcd3_lock.py), waiting up to `wait` to hold it.
Child python_lock(const std::string& name, std::chrono::seconds wait) {
  const Url url = parse_url(context().url);
  return Child({"/usr/bin/python3", DBLOCK_PYTHON_ETCD3_LOCK, std::to_string(url.hosts.at(0).port), name, "10",
                std::to_string(wait.count())});
}

// The number after "acquired " in the python holder's first line; 0 when it did not acquire.
std::int64_t python_acquired(Child& python) {
  const std::optional<std::string> line = python.read_line(15s);
  INFO("python-etcd3 said: " << line.value_or("(nothing)"));
  REQUIRE(line);
  if (line->rfind("acquired ", 0) != 0) return 0;
  return std::stoll(line->substr(9));
}

}  // namespace

TEST_CASE("etcd: python-etcd3's Lock and dblock with layout=python-etcd3 exclude each other", "[etcd][interop]") {
  const std::string name = "py-" + unique_prefix();
  auto manager = open_on(context().url + "?layout=python-etcd3");
  AcquireOptions reader;
  reader.mode = LockMode::kShared;
  CHECK_THROWS_AS(manager->try_acquire(name, reader), UnsupportedError);  // one key per lock: no readers
  CHECK_FALSE(manager->capabilities().shared_leases);

  SECTION("python-etcd3 holds: dblock is refused, and a dblock waiter takes the lock at its release") {
    Child holder = python_lock(name, 0s);
    const std::int64_t foreign = python_acquired(holder);
    REQUIRE(foreign > 0);
    CHECK_FALSE(manager->try_acquire(name, ttl(5s)));
    const std::optional<LeaseInfo> info = manager->inspect(name);
    REQUIRE(info);
    CHECK(info->fence == foreign);
    CHECK(info->holder.find("python-etcd3") != std::string::npos);
    std::optional<Lease> lease;
    std::thread waiter([&] { lease = manager->acquire(name, 20s, ttl(5s)); });
    holder.write_line("release");
    const std::optional<std::string> released = holder.read_line(10s);
    waiter.join();
    CHECK(released == std::optional<std::string>("released"));
    REQUIRE(lease);
    CHECK(lease->fence() > foreign);
  }

  SECTION("dblock holds: python-etcd3 is refused, and a python-etcd3 waiter takes the lock at dblock's release") {
    std::optional<Lease> lease = manager->try_acquire(name, ttl(10s));
    REQUIRE(lease);
    Child refused = python_lock(name, 0s);
    CHECK(python_acquired(refused) == 0);
    Child waiter = python_lock(name, 20s);
    CHECK_FALSE(waiter.read_line(1s));  // still waiting while dblock holds
    const std::int64_t fence = lease->fence();
    lease->release();
    CHECK(python_acquired(waiter) > fence);
    CHECK_FALSE(manager->try_acquire(name, ttl(5s)));
    waiter.write_line("release");
    CHECK(waiter.read_line(10s) == std::optional<std::string>("released"));
    std::optional<Lease> again = manager->try_acquire(name, ttl(5s));
    REQUIRE(again);
    CHECK(again->fence() > fence);
  }
}

TEST_CASE("etcd: layout=python-etcd3 keeps a scheduled job's window on its one key, then frees it",
          "[etcd][scheduled]") {
  const std::string name = "pyjob-" + unique_prefix();
  auto a = open_on(context().url + "?layout=python-etcd3");
  auto b = open_on(context().url + "?layout=python-etcd3");
  AcquireOptions job;
  job.hold_at_least = 2s;
  const auto started = SteadyClock::now();
  std::optional<Lease> run = a->try_acquire(name, job);
  REQUIRE(run);
  const std::int64_t fence = run->fence();
  CHECK(run->release() == ReleaseResult::kReleased);  // inside the window
  const std::optional<LeaseInfo> window = b->inspect(name);
  REQUIRE(window);
  CHECK(window->fence == fence);
  CHECK(window->holder.find("scheduled job's window") != std::string::npos);
  CHECK_FALSE(b->try_acquire(name));
  Child python = python_lock(name, 0s);  // python-etcd3's Lock finds its one key taken too
  CHECK(python_acquired(python) == 0);
  std::optional<Lease> next = b->acquire(name, 20s);  // woken when etcd ends the window's lease
  REQUIRE(next);
  CHECK(SteadyClock::now() - started >= 2s - 300ms);
  CHECK(next->fence() > fence);
}

TEST_CASE("etcd: in the etcd-mutex layout a name and a longer one under it stay apart where it matters",
          "[etcd][names]") {
  auto manager = open_on(context().url, unique_prefix());
  std::optional<Lease> deeper = manager->try_acquire("a/b", ttl(10s));
  REQUIRE(deeper);
  // "a"'s key range holds "a/b"'s keys (concurrency.Mutex's layout): "a" queues behind it...
  CHECK_FALSE(manager->try_acquire("a", ttl(5s)));
  // ...but nothing holds "a": evicting it evicts nobody, and "a/b" is listed as itself.
  CHECK_FALSE(manager->force_release("a"));
  CHECK_FALSE(manager->inspect("a"));
  // A reader of "a" in line behind "a/b"'s key waits too, and is not listed as holding "a".
  ServiceDriver driver(*manager);
  const OwnerSecret reader = OwnerSecret::generate();
  REQUIRE_FALSE(driver.attempt("a", LockMode::kShared, reader, 5s, /*queue=*/true).acquired);
  CHECK_FALSE(manager->inspect("a"));
  CHECK_FALSE(manager->force_release("a"));
  driver.leave("a", reader);
  const std::optional<LeaseInfo> info = manager->inspect("a/b");
  REQUIRE(info);
  CHECK(info->fence == deeper->fence());
  CHECK(deeper->release() == ReleaseResult::kReleased);
  CHECK(manager->try_acquire("a", ttl(5s)));
}

// ---- a 3-member cluster (ctest's etcd_cluster) -------------------------------------------------

namespace {

// scripts/servers/etcd.sh COMMAND STATE PORT: its exit status.
int member_script(const std::string& command, int port) {
  const std::string line = env("DBLOCK_TEST_ETCD_SCRIPT") + " " + command + " " + env("DBLOCK_TEST_ETCD_STATE") + " " +
                           std::to_string(port) + " >/dev/null 2>&1";
  return std::system(line.c_str());
}

// The client port of the member that leads the cluster, 0 when none says it does: each member's
// `endpoint status` names its own id and its leader's.
int leader_port() {
  for (const Url::Host& host : parse_url(context().url).hosts) {
    const std::string command = "etcdctl --endpoints 127.0.0.1:" + std::to_string(host.port) +
                                " --command-timeout 2s endpoint status -w fields 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> out(::popen(command.c_str(), "r"), &::pclose);
    REQUIRE(out != nullptr);
    std::string member, leader;
    char buf[512];
    while (std::fgets(buf, sizeof(buf), out.get()) != nullptr) {
      const std::string line(buf);
      const std::size_t colon = line.find(" : ");
      if (colon == std::string::npos) continue;
      const std::string value = line.substr(colon + 3, line.find_first_of("\r\n", colon + 3) - colon - 3);
      if (line.rfind("\"MemberID\"", 0) == 0) member = value;
      if (line.rfind("\"Leader\"", 0) == 0) leader = value;
    }
    if (!member.empty() && member == leader) return host.port;
  }
  return 0;
}

// Starts the members it names again when it goes out of scope (a failed case leaves the cluster whole).
struct Revive {
  std::vector<int> ports;
  ~Revive() {
    for (int port : ports) member_script("start-one", port);
  }
};

}  // namespace

TEST_CASE("etcd: on a cluster a held lease and a waiter in line ride over the leader's death", "[etcd][cluster]") {
  const std::string prefix = unique_prefix();
  auto holder = open_on(context().url, prefix);
  auto second = open_on(context().url, prefix);
  std::optional<Lease> lease = holder->try_acquire("leader-dies", ttl(2s));
  REQUIRE(lease);
  std::optional<Lease> got;
  std::thread waiter([&] { got = second->acquire("leader-dies", 40s, ttl(2s)); });
  const JoinOnExit join{waiter};
  await_waiters(*holder, "leader-dies", 1);
  const int leader = leader_port();
  REQUIRE(leader != 0);
  REQUIRE(member_script("kill", leader) == 0);
  Revive revive{{leader}};
  // Past the lease's TTL twice over: its renewals go on through the members left (etcd restarts a
  // lease's TTL when a new leader takes over), and the waiter stays in line.
  for (const auto until = SteadyClock::now() + 4500ms; SteadyClock::now() < until;) {
    CHECK_FALSE(lease->lost());
    std::this_thread::sleep_for(100ms);  // sampling interval, not synchronisation
  }
  CHECK_FALSE(got);
  const std::int64_t fence = lease->fence();
  CHECK(lease->release() == ReleaseResult::kReleased);
  waiter.join();
  REQUIRE(got);
  CHECK(got->fence() > fence);
}

TEST_CASE("etcd: a cluster without quorum: a holder is told of its loss by its safe time, a wait ends by its "
          "deadline, and with quorum back the name is taken again",
          "[etcd][cluster]") {
  const std::string prefix = unique_prefix();
  LostWatch probe;  // outlives the manager, whose renewal thread calls it
  auto manager = open_on(context().url, prefix);
  AcquireOptions options = ttl(2s);
  options.on_lost = probe.callback();
  std::optional<Lease> lease = manager->try_acquire("no-quorum", options);
  REQUIRE(lease);
  const SteadyClock::time_point safe_until = lease->safe_until();
  const Url url = parse_url(context().url);
  std::vector<int> stopped;
  for (const Url::Host& host : url.hosts) {
    if (stopped.size() < 2) stopped.push_back(host.port);
  }
  Revive revive{stopped};
  for (int port : stopped) REQUIRE(member_script("kill", port) == 0);
  // The renewals find no leader: the loss is told by safe-until and one call more.
  REQUIRE(probe.wait(10s));
  CHECK(SteadyClock::now() < safe_until + 2500ms);
  CHECK(lease->lost());
  // A wait on another name ends by its deadline (and the least time a call is given).
  const SteadyClock::time_point began = SteadyClock::now();
  std::optional<Lease> waited;
  try {
    waited = manager->acquire("no-quorum-wait", 2s, ttl(2s));
  } catch (const ConnectionError&) {
    // What ends a wait on a service that fails throughout it: the fault, by the deadline.
  }
  CHECK_FALSE(waited);
  CHECK(SteadyClock::now() - began < 2s + 2500ms);
  for (int port : stopped) CHECK(member_script("start-one", port) == 0);
  revive.ports.clear();
  std::optional<Lease> again;
  std::string last_error;
  for (const auto until = SteadyClock::now() + 20s; !again && SteadyClock::now() < until;) {
    try {
      again = manager->acquire("no-quorum", 5s, ttl(2s));
    } catch (const ConnectionError& e) {
      last_error = e.what();  // the cluster is still electing: the loop's bound is the case's
    }
  }
  INFO("last error: " << last_error);
  REQUIRE(again);
  CHECK(again->fence() > lease->fence());
}

// ---- etcd auth on a member of its own (ctest's etcd_auth) ------------------------------------

namespace {

constexpr char kRoot[] = "root:root-secret";
constexpr char kAuthPrefix[] = "dblock-auth/";

// The auth member's URL as `credentials` ("user:password", or "" for none), under kAuthPrefix.
std::string auth_url(const std::string& credentials) {
  const std::string at = credentials.empty() ? "" : credentials + "@";
  return "etcd://" + at + endpoint() + "?prefix=" + kAuthPrefix;
}

bool says(const std::exception& e, const std::string& text) {
  return std::string(e.what()).find(text) != std::string::npos;
}

}  // namespace

// ctest's etcd_auth_setup, before etcd_auth: the member's users and roles, and auth enabled (a
// member set up already is left as is). locker may read and write under kAuthPrefix (what
// docs/backends/etcd.md tells to grant), reader only read there, elsewhere read and write under
// another application's prefix. Hidden: it changes the member for good.
TEST_CASE("etcd auth: the member's users and roles", "[.][auth-setup]") {
  if (!etcdctl(std::string("--user ") + kRoot + " user list").empty()) return;
  const std::vector<std::string> steps = {
      "user add root:root-secret --interactive=false",
      "role add dblock-rw",
      std::string("role grant-permission --prefix=true dblock-rw readwrite ") + kAuthPrefix,
      "user add locker:locker-secret --interactive=false",
      "user grant-role locker dblock-rw",
      "role add dblock-ro",
      std::string("role grant-permission --prefix=true dblock-ro read ") + kAuthPrefix,
      "user add reader:reader-secret --interactive=false",
      "user grant-role reader dblock-ro",
      "role add other-app",
      "role grant-permission --prefix=true other-app readwrite other-app/",
      "user add elsewhere:elsewhere-secret --interactive=false",
      "user grant-role elsewhere other-app",
      "auth enable",
  };
  for (const std::string& step : steps) {
    INFO("etcdctl " << step);
    REQUIRE_FALSE(etcdctl(step).empty());
  }
}

TEST_CASE("etcd auth: the documented role (readwrite under the prefix) runs every call", "[etcd][auth]") {
  const std::string name = "job-" + unique_prefix();
  auto holder = dblock::open(auth_url("locker:locker-secret"));
  auto second = dblock::open(auth_url("locker:locker-secret"));
  std::optional<Lease> lease = holder->try_acquire(name, ttl(2s));
  REQUIRE(lease);
  std::optional<Lease> got;
  std::thread waiter([&] { got = second->acquire(name, 20s, ttl(2s)); });
  const JoinOnExit join{waiter};
  await_waiters(*holder, name, 1);
  // Past the TTL: renewals (keep-alives and the key's check) go through.
  for (const auto until = SteadyClock::now() + 2500ms; SteadyClock::now() < until;) {
    CHECK_FALSE(lease->lost());
    std::this_thread::sleep_for(100ms);  // sampling interval, not synchronisation
  }
  bool listed = false;
  for (const LeaseInfo& info : holder->list()) listed = listed || info.name == name;
  CHECK(listed);
  // An admin's force-release, with its audit record under the prefix.
  CHECK(holder->force_release(name));
  waiter.join();
  REQUIRE(got);
  CHECK(got->fence() > lease->fence());
  CHECK_FALSE(holder->force_release_history(name).empty());
  CHECK(got->release() == ReleaseResult::kReleased);
}

TEST_CASE("etcd auth: a wrong password or none is a permission error that never prints the password",
          "[etcd][auth]") {
  try {
    dblock::open(auth_url("locker:not-the-secret"));
    FAIL("opened");
  } catch (const PermissionError& e) {
    CHECK(says(e, "user or password"));
    CHECK_FALSE(says(e, "not-the-secret"));
  }
  try {
    dblock::open(auth_url(""));
    FAIL("opened");
  } catch (const PermissionError& e) {
    CHECK(says(e, "auth enabled"));
  }
}

TEST_CASE("etcd auth: a role that may only read under the prefix cannot take, renew or free a lock, and names "
          "the permission it lacks",
          "[etcd][auth]") {
  const std::string name = "held-" + unique_prefix();
  auto locker = dblock::open(auth_url("locker:locker-secret"));
  std::optional<Lease> lease = locker->try_acquire(name, ttl(5s));
  REQUIRE(lease);
  auto reader = dblock::open(auth_url("reader:reader-secret"));  // opening only reads
  const std::optional<LeaseInfo> info = reader->inspect(name);
  REQUIRE(info);
  CHECK(info->fence == lease->fence());
  try {
    reader->try_acquire(name + "-other", ttl(5s));
    FAIL("acquired");
  } catch (const PermissionError& e) {
    CHECK(says(e, "needs readwrite"));
    CHECK(says(e, kAuthPrefix));
  }
  CHECK_THROWS_AS(reader->force_release(name), PermissionError);
  CHECK_FALSE(lease->lost());
  CHECK(lease->release() == ReleaseResult::kReleased);
}

TEST_CASE("etcd auth: a user whose role grants another application's prefix cannot open on this one",
          "[etcd][auth]") {
  try {
    dblock::open(auth_url("elsewhere:elsewhere-secret"));
    FAIL("opened");
  } catch (const PermissionError& e) {
    CHECK(says(e, "needs readwrite"));
    CHECK(says(e, kAuthPrefix));
  }
}

TEST_CASE("etcd: layout= names a known layout", "[etcd][input]") {
  try {
    open_on(context().url + "?layout=consul");
    FAIL("opened");
  } catch (const UsageError& e) {
    CHECK(std::string(e.what()).find("python-etcd3") != std::string::npos);
  }
}

}  // namespace dblock::testing
