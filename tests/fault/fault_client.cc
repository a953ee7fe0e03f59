// fault_client: one contender of the fault-injection harness (docs/fault-harness.md).
//
// Loops: acquire -> (probe) -> fenced write to the protected resource -> release, logging every
// step to its own log file (format in fault_common.h) and announcing critical-section boundaries
// to the driver on stdout:
//   ready | cs K (hold started) | wb K / we K (guarded write begins / ended) | out K (hold ends) | bye
// Stops after the current iteration when stdin reaches EOF or reads "stop". Dies with its parent
// (PR_SET_PDEATHSIG), so an aborted driver leaves no contenders behind.
//
// The write: on the SQL backends a guarded write (run_guarded) into the lock's own database, whose
// resource row also refuses a fence not above the last one. With --resource-url (Redis, ZooKeeper:
// no transactions to guard) the resource is another database, an SQLite file: the write is a plain
// transaction there (BEGIN IMMEDIATE), no check of the lease at all, and the resource's fence
// check is the only thing that refuses a stale holder's write.
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "fault_common.h"
#include "service_driver.h"
#ifdef DBLOCK_FAULT_ZOOKEEPER
#include "zookeeper_service.h"
#endif

namespace dblock::fault {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;
using testing::ServiceDriver;

struct Args {
  std::string url;
  std::string resource_url;  // empty: the resource is in `url`'s database, written under run_guarded
  std::string prefix;
  std::string name = "fault/resource";
  std::string log;
  std::string run = "r";
  int client = 0;
  int ttl_ms = 1000;
  int wait_ms = 0;      // 0: 3 x TTL
  int pre_ms = 5;       // max pause inside the hold before the write (sabotage: the pause)
  int post_ms = 10;     // max pause inside the hold after the write
  int tx_ms = 0;        // max pause inside the guarded write's transaction (between its statements)
  int gap_ms = 5;       // max pause between iterations
  int probe_every = 5;  // wrong-owner probe every N acquisitions (0: never)
  std::uint64_t seed = 1;
  bool check_session_refused = false;
  bool fsync = false;
  bool unfenced = false;  // sabotage: write without the guard and without the resource's fence check
  bool announce_session = false;  // ZooKeeper: tell the driver the session's id and password (session-expire)
  int open_timeout_ms = 60'000;
};

// Appends whole lines with one write(2) each; shared by the main and the renewal thread.
class Log {
 public:
  Log(const std::string& path, bool sync) : sync_(sync) {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0) throw std::runtime_error("cannot open log " + path + ": " + std::strerror(errno));
  }
  ~Log() { ::close(fd_); }
  void line(const std::string& text) {
    std::string data = text + "\n";
    std::lock_guard<std::mutex> lock(mutex_);
    const char* p = data.data();
    std::size_t left = data.size();
    while (left > 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // nothing sensible to do; the oracle treats a missing record as unknown
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    if (sync_) ::fdatasync(fd_);
  }

 private:
  int fd_ = -1;
  bool sync_;
  std::mutex mutex_;
};

void say(const std::string& text) {
  std::string data = text + "\n";
  (void)!::write(STDOUT_FILENO, data.data(), data.size());
}

// session-expire: "zs <id hex> <password hex>" on stdout when the ZooKeeper session changed since
// the last announcement, so that the driver can take it over and close it. A test-only path (the
// service's internals), not the public API. `last`: the id announced last.
void announce_session(LockManager& manager, std::int64_t& last) {
#ifdef DBLOCK_FAULT_ZOOKEEPER
  auto* service = dynamic_cast<zookeeper::ZooKeeperService*>(&ServiceDriver(manager).service);
  if (service == nullptr) return;
  try {
    const service::CallDeadlineScope bound(std::chrono::steady_clock::now() + 2s);  // a new session, if any, by then
    const auto [id, password] = service->session_credentials();
    if (id == 0 || id == last) return;
    char buf[8];
    std::string line = "zs ";
    char idbuf[32];
    std::snprintf(idbuf, sizeof idbuf, "%llx", static_cast<unsigned long long>(id));
    line += std::string(idbuf) + " ";
    for (unsigned char c : password) {
      std::snprintf(buf, sizeof buf, "%02x", c);
      line += buf;
    }
    say(line);
    last = id;
  } catch (const std::exception&) {
    // No session now (the server is unreachable): announced after a later acquisition.
  }
#else
  (void)manager;
  (void)last;
#endif
}

std::string s(std::int64_t v) { return std::to_string(v); }

const char* token(ReleaseResult r) {
  switch (r) {
    case ReleaseResult::kReleased: return "released";
    case ReleaseResult::kAlreadyLost: return "already_lost";
    case ReleaseResult::kInDoubt: return "in_doubt";
    case ReleaseResult::kShutDown: return "shut_down";
  }
  return "unknown";
}

struct StaleWrite : std::exception {
  const char* what() const noexcept override { return "resource refused the fence"; }
};
struct ResourceBusy : std::exception {
  const char* what() const noexcept override { return "resource's write lock not obtained"; }
};

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw UsageError("missing value for " + k);
      return argv[++i];
    };
    if (k == "--url") a.url = next();
    else if (k == "--resource-url") a.resource_url = next();
    else if (k == "--prefix") a.prefix = next();
    else if (k == "--name") a.name = next();
    else if (k == "--log") a.log = next();
    else if (k == "--run") a.run = next();
    else if (k == "--client") a.client = std::stoi(next());
    else if (k == "--ttl-ms") a.ttl_ms = std::stoi(next());
    else if (k == "--wait-ms") a.wait_ms = std::stoi(next());
    else if (k == "--pre-ms") a.pre_ms = std::stoi(next());
    else if (k == "--post-ms") a.post_ms = std::stoi(next());
    else if (k == "--tx-ms") a.tx_ms = std::stoi(next());
    else if (k == "--gap-ms") a.gap_ms = std::stoi(next());
    else if (k == "--probe-every") a.probe_every = std::stoi(next());
    else if (k == "--seed") a.seed = std::stoull(next());
    else if (k == "--open-timeout-ms") a.open_timeout_ms = std::stoi(next());
    else if (k == "--check-session-refused") a.check_session_refused = true;
    else if (k == "--fsync") a.fsync = true;
    else if (k == "--unfenced") a.unfenced = true;
    else if (k == "--announce-session") a.announce_session = true;
    else throw UsageError("unknown argument " + k);
  }
  if (a.url.empty() || a.prefix.empty() || a.log.empty()) throw UsageError("--url, --prefix and --log are required");
  if (a.wait_ms <= 0) a.wait_ms = 3 * a.ttl_ms;
  return a;
}

int run(const Args& a) {
  Log log(a.log, a.fsync);
  log.line("START " + s(a.client) + " " + s(getpid()) + " " + s(mono_ns()));
  std::mt19937_64 rng(a.seed * 1'000'003 + static_cast<std::uint64_t>(a.client));
  auto pause = [&](int max_ms) {
    if (max_ms <= 0) return;
    std::uniform_int_distribution<int> d(0, max_ms * 1000);
    std::this_thread::sleep_for(std::chrono::microseconds(d(rng)));  // the work being simulated
  };

  std::atomic<bool> stop{false};
  std::thread stdin_reader([&] {
    std::string line;
    while (std::getline(std::cin, line)) {
      if (line == "stop") break;
    }
    stop.store(true);
  });
  stdin_reader.detach();  // blocked in read(2) until the driver closes the pipe; exit() ends it

  std::atomic<int> background_errors{0};
  ManagerOptions options;
  options.table_prefix = a.prefix;
  options.default_ttl = milliseconds(a.ttl_ms);
  options.reaper_interval = milliseconds(2 * a.ttl_ms);
  options.on_background_error = [&](const Error& e) {
    if (background_errors.fetch_add(1) < 50) log.line("B " + s(mono_ns()) + " " + error_class(e));
  };

  // The server may be restarting or frozen when a replacement client starts: retry, bounded.
  std::unique_ptr<LockManager> manager;
  const std::int64_t open_deadline = mono_ns() + std::int64_t{a.open_timeout_ms} * 1'000'000;
  for (;;) {
    try {
      manager = dblock::open(a.url, options);
      break;
    } catch (const Error& e) {
      log.line("E " + s(mono_ns()) + " open " + error_class(e));
      if (mono_ns() > open_deadline || dynamic_cast<const UsageError*>(&e)) {
        std::fprintf(stderr, "fault_client %d: cannot open: %s\n", a.client, e.what());
        return 2;
      }
      std::this_thread::sleep_for(100ms);  // retry back-off while the server is unreachable
    }
  }

  // Behind a transaction pooler a session lock must be refused (UsageError), never attempted.
  auto check_session_refused = [&] {
    std::string outcome;
    try {
      auto lock = manager->session_lock(a.name + "/session/" + s(a.client), milliseconds(0));
      outcome = lock ? "granted" : "not_acquired";
      if (lock) {
        std::fprintf(stderr, "fault_client %d: session lock GRANTED behind the pooler (key %lld); release: %s\n",
                     a.client, static_cast<long long>(lock->key()), token(lock->release()));
      }
    } catch (const UnsupportedError&) {
      outcome = "unsupported";
    } catch (const UsageError&) {
      outcome = "refused";
    } catch (const std::exception& e) {
      outcome = "error";
      std::fprintf(stderr, "fault_client %d: session check: %s\n", a.client, e.what());
    }
    log.line("S " + s(mono_ns()) + " " + outcome);
  };
  if (a.check_session_refused) check_session_refused();

  // The resource outside the lock service (Redis): a manager of its own, used only for its
  // transactions. The driver created the tables (and dblock's schema) before starting us.
  std::unique_ptr<LockManager> resource_manager;
  if (!a.resource_url.empty()) {
    ManagerOptions resource_options;
    resource_options.table_prefix = a.prefix;
    resource_options.reaper = false;
    resource_manager = dblock::open(a.resource_url, resource_options);
  }
  LockManager& resource = resource_manager ? *resource_manager : *manager;
  // A client SIGSTOPped inside the resource's transaction keeps its write lock (up to 2.5 TTL).
  const milliseconds resource_wait = std::max(milliseconds(10'000), milliseconds(4 * a.ttl_ms));
  const ResourceSql sql = resource_sql(dialect_of(a.resource_url.empty() ? a.url : a.resource_url), a.prefix);
  const std::string op_base = a.run + "-" + s(a.client) + "-";
  AcquireOptions acquire_options;
  acquire_options.ttl = milliseconds(a.ttl_ms);
  say("ready");

  // C records: every lease call with the latest return its deadline allows (the oracle checks it).
  auto log_call = [&log](const char* what, std::int64_t t_call, std::int64_t bound, const std::string& outcome) {
    log.line(std::string("C ") + what + " " + s(t_call) + " " + s(mono_ns()) + " " + s(bound) + " " + outcome);
  };
  std::int64_t announced_session = 0;
  for (std::int64_t k = 1; !stop.load(); ++k) {
    acquire_options.on_lost = [&log, k](const LostLease&) { log.line("L " + s(k) + " " + s(mono_ns())); };
    const std::int64_t t_call = mono_ns();
    const std::int64_t acquire_bound = t_call + std::int64_t{a.wait_ms + kCallFloorMs} * 1'000'000;
    std::optional<Lease> lease;
    try {
      lease = manager->acquire(a.name, milliseconds(a.wait_ms), acquire_options);
    } catch (const std::exception& e) {
      log_call("acquire", t_call, acquire_bound, error_class(e));
      log.line("E " + s(mono_ns()) + " acquire " + error_class(e));
      std::this_thread::sleep_for(20ms);  // back-off while the backend is failing
      continue;
    }
    log_call("acquire", t_call, acquire_bound, lease ? "ok" : "none");
    if (!lease) {
      log.line("T " + s(mono_ns()));
      continue;
    }
    const std::int64_t t_ret = mono_ns();
    const std::int64_t fence = lease->fence();
    log.line("A " + s(k) + " " + s(t_call) + " " + s(t_ret) + " " + s(fence) + " " +
             s(to_mono_ns(lease->safe_until())));
    if (a.announce_session) announce_session(*manager, announced_session);
    say("cs " + s(k));

    if (a.unfenced) {
      // Sabotage: always the whole pause, so that a stop the driver lands just after "cs" (within
      // 5 ms) falls before the unfenced write; a shorter random pause let all of a run's stops
      // miss it now and then, and the run found no violation to prove the oracle with.
      std::this_thread::sleep_for(milliseconds(a.pre_ms));
    } else {
      pause(a.pre_ms);
    }
    if (a.probe_every > 0 && k % a.probe_every == 0) {
      // Wrong-owner probe: release and renew with secrets that do not own the lease. Each must
      // change nothing; while our lease is not lost() the backend must still show our fence.
      const std::int64_t t_probe = mono_ns();
      try {
        int effects = 0, gone = 0;
        auto before = manager->inspect(a.name);
        ServiceDriver service(*manager);
        if (service.release(a.name, LockMode::kExclusive, OwnerSecret::generate())) ++effects;
        if (service.release(a.name, LockMode::kShared, OwnerSecret::generate())) ++effects;
        if (service.renew(a.name, LockMode::kExclusive, OwnerSecret::generate(), milliseconds(a.ttl_ms)).renewed) {
          ++effects;
        }
        auto after = manager->inspect(a.name);
        if (!lease->lost() && before && before->fence == fence && (!after || after->fence != fence)) {
          ++effects;
          ++gone;  // a server that forgot its leases (Redis restarted without AOF) does this too
        }
        log.line("P " + s(k) + " " + s(mono_ns()) + " " + s(effects) + " " + s(gone) + " " + s(t_probe));
      } catch (const std::exception& e) {
        log.line("Q " + s(k) + " " + s(mono_ns()) + " " + error_class(e));
      }
    }

    const std::string op = op_base + s(k);
    log.line("WB " + s(k) + " " + op + " " + s(mono_ns()) + " " + (lease->lost() ? "1" : "0"));
    say("wb " + s(k));
    try {
      if (a.unfenced) {
        // Sabotage (proves the oracle catches what the guard prevents): a plain transaction.
        dblock::sql::Database(resource).run_in_transaction_lock("fault-unfenced", 10s, [&](Transaction& tx) {
          tx.execute(sql.unfenced_update, {fence});
          tx.execute(sql.insert_op, {op, fence, std::int64_t{a.client}, mono_ns()});
        });
      } else if (resource_manager) {
        // Fence-only: the resource's own check (last_fence < fence) decides, nothing else.
        const bool ran = dblock::sql::Database(resource).run_in_transaction_lock("fault-resource", resource_wait, [&](Transaction& tx) {
          if (tx.execute(sql.guarded_update, {fence, fence}) != 1) throw StaleWrite{};
          pause(a.tx_ms);  // a fault may land here, with the resource's write lock held and nothing committed
          tx.execute(sql.insert_op, {op, fence, std::int64_t{a.client}, mono_ns()});
        });
        if (!ran) throw ResourceBusy{};
      } else {
        dblock::sql::Database(*manager).run_guarded(*lease, [&](Transaction& tx) {
          if (tx.execute(sql.guarded_update, {fence, fence}) != 1) throw StaleWrite{};
          pause(a.tx_ms);  // a fault may land here, with the resource row locked and nothing committed
          tx.execute(sql.insert_op, {op, fence, std::int64_t{a.client}, mono_ns()});
        });
      }
      log.line("W " + s(k) + " " + op + " " + s(mono_ns()) + " " + s(fence));
    } catch (const StaleWrite&) {
      log.line("J " + s(k) + " " + op + " " + s(mono_ns()) + " resource");
    } catch (const LeaseLostError&) {
      log.line("J " + s(k) + " " + op + " " + s(mono_ns()) + " guard");
    } catch (const ResourceBusy&) {
      log.line("X " + s(k) + " " + op + " " + s(mono_ns()) + " ResourceBusy");
    } catch (const std::exception& e) {
      log.line("X " + s(k) + " " + op + " " + s(mono_ns()) + " " + error_class(e));
    }
    say("we " + s(k));
    pause(a.post_ms);

    const std::int64_t t_end = mono_ns();
    const std::int64_t safe_until = to_mono_ns(lease->safe_until());
    const bool lost = lease->lost();
    say("out " + s(k));
    const std::int64_t release_bound = std::max(safe_until, mono_ns() + kCallFloorMs * 1'000'000);
    const std::int64_t t_release = mono_ns();
    ReleaseResult result = lease->release();
    log_call("release", t_release, release_bound, token(result));
    log.line("R " + s(k) + " " + s(t_end) + " " + s(mono_ns()) + " " + token(result) + " " + s(safe_until) + " " +
             (lost ? "1" : "0"));
    // Again while the other clients keep the pooler busy (that is when a pooler is hard to spot).
    if (a.check_session_refused && k % 4 == 0) check_session_refused();
    pause(a.gap_ms);
  }
  resource_manager.reset();
  const std::int64_t t_close = mono_ns();
  manager.reset();
  log_call("close", t_close, t_close + kCloseBoundMs * 1'000'000, "ok");
  log.line("END " + s(mono_ns()));
  say("bye");
  return 0;
}

}  // namespace
}  // namespace dblock::fault

int main(int argc, char** argv) {
  // Die with the driver: a contender must never outlive the run that started it.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (const char* driver = std::getenv("DBLOCK_FAULT_DRIVER_PID")) {
    if (getppid() != static_cast<pid_t>(std::atol(driver))) return 3;  // the driver died before prctl
  }
  signal(SIGPIPE, SIG_IGN);
  try {
    return dblock::fault::run(dblock::fault::parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_client: %s\n", e.what());
    return 2;
  }
}
