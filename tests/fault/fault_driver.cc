// fault_driver: the fault-injection harness's conductor (docs/fault-harness.md).
//
//   fault_driver run --fault KIND --seed N [options]   one run: K clients, seeded faults, oracle
//   fault_driver report FILE...                        markdown table from the runs' RESULT lines
//   fault_driver selftest                              the oracle against synthetic histories
//
// A run creates the protected resource under its own table prefix (in the lock's database; on
// Redis and ZooKeeper in an SQLite file of the work directory, outside the lock service), starts K
// fault_client processes, injects faults on a schedule drawn from a seeded generator (the draws are
// reproducible; the interleaving with the clients is not), stops everything after --seconds or
// --max-acquisitions, then checks the invariants and prints the figures plus one RESULT line.
// Exit status: 0 all invariants held, 1 a safety invariant was violated, 2 the run itself failed
// (setup, no progress), 64 usage.
//
// Every wait is bounded; every process it starts it stops by pid (clients also die with the
// driver through PR_SET_PDEATHSIG; a frozen server is thawed by a detached watchdog even if the
// driver is killed).
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "dblock/url.h"
#include "fault_common.h"
#include "interruptions.h"
#include "members.h"
#include "oracle.h"
#include "redis_admin.h"
#include "report.h"
#include "zookeeper_admin.h"

#ifndef DBLOCK_SOURCE_DIR
#define DBLOCK_SOURCE_DIR "."
#endif
#ifndef DBLOCK_TCP_RELAY
#define DBLOCK_TCP_RELAY "tcp_relay"
#endif

namespace dblock::fault {
namespace {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

volatile sig_atomic_t g_interrupted = 0;
void on_signal(int) { g_interrupted = 1; }


struct Args {
  std::string fault = "none";
  std::uint64_t seed = 1;
  std::string url;        // what clients connect to (pgbouncer: the pooler)
  std::string admin_url;  // setup, oracle, session kills (default: url); Redis: CLIENT KILL, INFO
  std::string state;      // server state dir (restart, stop)
  std::string server_script;
  std::string client_path;
  std::string relay_path = DBLOCK_TCP_RELAY;  // relay-stall: tests/support/tcp_relay
  std::string work;
  std::string results;  // append the RESULT line here
  int clients = 4;
  double seconds = 15;
  long max_acquisitions = 0;
  int ttl_ms = 1000;
  bool keep = false;
  bool sabotage = false;         // clients write unfenced: the run must find violations
  bool expect_violation = false; // exit 0 only if the oracle reported a violation
  bool durable = false;          // check leases as kept across restarts even on Redis without AOF always
                                 // (Redlock: allows node-restart on masters without AOF)
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "fault_driver: %s\n"
               "usage: fault_driver run --fault KIND --seed N [--url URL] [--admin-url URL] [--state DIR]\n"
               "                        [--server-script PATH] [--clients K] [--seconds S] [--max-acquisitions M]\n"
               "                        [--ttl-ms T] [--client PATH] [--work DIR] [--results FILE] [--keep]\n"
               "                        [--relay PATH] [--sabotage --expect-violation] [--durable]\n"
               "       fault_driver report FILE...\n"
               "       fault_driver selftest\n"
               "       fault_driver schemes\n"
               "KIND: none client-kill client-stop session-kill conn-kill pubsub-kill server-restart\n"
               "      server-restart-aof server-stop relay-stall conn-full pgbouncer writer-kill disk-full\n"
               "      node-kill node-kill-two node-restart node-restart-two node-restart-empty node-restart-empty-two\n"
               "      node-stop (Redlock)\n"
               "      busy-script (Redis; Redlock: its first node)\n"
               "      session-expire reply-cut (ZooKeeper)\n"
               "      leader-kill leader-stop (ZooKeeper, etcd: a URL naming three members, --state)\n"
               "      quorum-loss (etcd: a URL naming three members, --state)\n"
               "      failover (PostgreSQL, MariaDB: --state of a pair started with start-pair)\n",
               why.c_str());
  std::exit(64);
}

std::string s(std::int64_t v) { return std::to_string(v); }

std::string fmt(double v, int decimals = 1) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

std::string self_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  return std::filesystem::path(std::string(buf, static_cast<std::size_t>(n))).parent_path().string();
}

// disk-full: the SQLite file on the tmpfs the fault mounts on <work>/db.
std::string disk_full_url(const std::string& work) { return "sqlite://" + work + "/db/fault.db"; }

struct Client {
  int id = 0;
  pid_t pid = -1;
  int out_fd = -1;
  int in_fd = -1;
  std::string buffer;
  bool alive = false;
  bool ready = false;
  bool stopped = false;  // SIGSTOPped by us
  bool in_cs = false;
  bool writing = false;
  bool said_bye = false;
  std::int64_t cs_since = 0;
};

// The server's main pid from its pid file (postmaster / mariadbd / redis-server of `port`), 0 if none.
pid_t server_pid(Dialect dialect, const std::string& state, int port) {
  std::ifstream f(dialect == Dialect::kPostgresql ? state + "/data/postmaster.pid"
                  : is_redis(dialect)             ? state + "/" + std::to_string(port) + "/redis.pid"
                                                  : state + "/mysqld.pid");
  long pid = 0;
  if (!(f >> pid) || pid <= 1) return 0;
  return static_cast<pid_t>(pid);
}

// The children of `main_pid` (a postmaster's backends and auxiliary processes).
std::vector<pid_t> child_pids(pid_t main_pid) {
  std::vector<pid_t> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 1) continue;
    std::ifstream stat(std::string("/proc/") + e->d_name + "/stat");
    std::string content((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    auto close_paren = content.rfind(')');
    if (close_paren == std::string::npos) continue;
    std::istringstream rest(content.substr(close_paren + 1));
    std::string state_char;
    long ppid = 0;
    rest >> state_char >> ppid;
    if (ppid == main_pid) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return pids;
}

// A detached process that sends SIGCONT to `pids` after `after`, so that a server frozen by a
// driver that gets killed meanwhile is thawed anyway. Returns its pid (reaped by the driver or,
// if the driver is gone, by init).
pid_t thaw_watchdog(const std::vector<pid_t>& pids, std::chrono::milliseconds after) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  setsid();
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_IGN);
  timespec ts{static_cast<time_t>(after.count() / 1000), static_cast<long>(after.count() % 1000) * 1'000'000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
  for (auto it = pids.rbegin(); it != pids.rend(); ++it) kill(*it, SIGCONT);
  _exit(0);
}

// ---- the run -----------------------------------------------------------------------------------

class Run {
 public:
  explicit Run(Args args) : a_(std::move(args)), rng_(a_.seed) {}
  // Whatever happened: thaw the server, and kill and reap every client still running.
  ~Run();

  int execute();

 private:
  // Setup / oracle through the dblock API (portable SQL, `?` placeholders).
  std::unique_ptr<LockManager> open_admin(std::chrono::seconds patience);
  void admin_tx(LockManager& m, const std::function<void(Transaction&)>& body);
  void setup();
  void cleanup_tables();

  void spawn(int id);
  void read_client(Client& c);
  void on_line(Client& c, const std::string& line);
  void reap_exits();
  void kill_client(Client& c, FaultEvent::Kind kind);
  void stop_all_clients();

  void schedule_next(double lo_ttl, double hi_ttl);
  void step_faults();
  Client* random_client(bool only_in_cs);
  void session_kill(bool all = false);
  // Redis: CLIENT KILL TYPE `type` (normal: the clients' command connections; pubsub: their
  // subscribers); the redis-cli that sends it is skipped.
  void redis_client_kill(const std::string& type);
  void stop_clients(bool stop);  // SIGSTOP (or SIGCONT) every running client, as client-stop events
  void server_restart();
  // failover: the pair's primary dies and its standby is promoted (asynchronous pairs: after the
  // standby stopped receiving for 0.3-1 TTL, so that the switch loses what was committed since).
  void failover();
  void session_expire(Client& c);  // ZooKeeper: takes the client's session over and closes it
  void server_freeze();
  void server_thaw();
  void interrupt();
  // reply-cut: the nodes of the clients' lock still on the server (holders and waiters), polled
  // for up to 2 s once every client closed its manager; 0 when none is left.
  std::int64_t nodes_left();
  void restore();

  double uniform(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  std::int64_t ttl_ns() const { return std::int64_t{a_.ttl_ms} * kMs; }
  std::string err_path() const { return a_.work + "/commands.err"; }
  void note(const std::string& text);

  Args a_;
  Dialect dialect_ = Dialect::kSqlite;           // the lock service
  std::string resource_url_;                     // the protected resource (resource_url())
  std::string aof_mode_;                         // Redis: <state>/aof-mode (always, everysec, no)
  std::string pair_mode_;                        // failover: <state>/mode (async, sync; MariaDB: async)
  std::string prefix_;
  std::string run_tag_;
  ResourceSql sql_;
  std::mt19937_64 rng_;
  std::map<int, Client> clients_;
  int next_id_ = 1;
  std::vector<FaultEvent> events_;
  std::map<int, std::int64_t> death_;
  std::set<int> killed_;  // ids the driver killed (their exit is not a crash)
  std::int64_t crashes_ = 0;
  std::int64_t acquisitions_seen_ = 0;
  std::ofstream driver_log_;

  // Fault state machine (times: mono_ns, 0 = unset).
  std::int64_t next_at_ = 0;
  bool armed_ = false;          // waiting for a client to enter its critical section / write
  std::int64_t arm_deadline_ = 0;
  int target_ = 0;              // client to act on at act_at_
  bool precise_ = false;        // the target must still be in its hold (writer-kill: its write) at act_at_
  std::int64_t act_at_ = 0;
  int stopped_client_ = 0;
  std::int64_t cont_at_ = 0;
  bool server_frozen_ = false;
  std::vector<pid_t> frozen_pids_;
  std::int64_t thaw_at_ = 0;
  std::vector<pid_t> watchdogs_;
  std::unique_ptr<RedisNodes> redis_;           // Redis, Redlock: the servers under test
  std::unique_ptr<Members> members_;            // ZooKeeper, etcd: the servers under test
  ZkServers* zk_ = nullptr;                     // members_ when they are ZooKeeper's (session-expire)
  std::map<int, ZkSession> zk_sessions_;        // session-expire: each client's session as it announced it
  std::unique_ptr<Interruption> interruption_;  // relay-stall, conn-full, disk-full, node-*
  bool interrupted_ = false;
  std::int64_t restore_at_ = 0;
  std::int64_t interrupted_at_ = 0;  // when the interruption under way began
  // etcd before upstream's fix (PR 16822; Debian 12 has 3.4.23): a leader that resumes after a
  // pause longer than a lease's TTL revokes the leases it thinks expired, although their holders
  // kept them alive through the new leader (etcd issues 12528, 15247). The thaw of leader-stop
  // then opens a window of kStaleLeaderRevokes in which the oracle reads lost leases as lost to
  // the server (as a restart without persistence loses them): excused only for a holder that was
  // told of its loss.
  bool stale_leader_revokes_ = false;
  static constexpr std::chrono::milliseconds kStaleLeaderRevokes{2000};
};

Run::~Run() {
  server_thaw();
  for (auto& [id, c] : clients_) {
    if (c.alive) {
      kill(c.pid, SIGKILL);
      wait_pid(c.pid, 10'000ms);
      c.alive = false;
    }
    if (c.out_fd >= 0) close(c.out_fd);
    if (c.in_fd >= 0) close(c.in_fd);
    c.out_fd = c.in_fd = -1;
  }
  for (pid_t w : watchdogs_) {
    kill(w, SIGKILL);
    wait_pid(w, 5000ms);
  }
  watchdogs_.clear();
}

void Run::note(const std::string& text) {
  if (driver_log_) driver_log_ << mono_ns() << " " << text << std::endl;
}

std::unique_ptr<LockManager> Run::open_admin(std::chrono::seconds patience) {
  ManagerOptions options;
  options.table_prefix = prefix_;
  options.reaper = false;
  options.default_ttl = milliseconds(a_.ttl_ms);
  const std::int64_t deadline = mono_ns() + patience.count() * 1000 * kMs;
  for (;;) {
    try {
      return dblock::open(resource_url_, options);
    } catch (const Error& e) {
      if (dynamic_cast<const UsageError*>(&e) || dynamic_cast<const SchemaError*>(&e) || mono_ns() > deadline) throw;
      std::this_thread::sleep_for(200ms);  // retry back-off while the server comes back
    }
  }
}

void Run::admin_tx(LockManager& m, const std::function<void(Transaction&)>& body) {
  try {
    if (!dblock::sql::Database(m).run_in_transaction_lock("fault-admin", 10s, body)) throw std::runtime_error("admin transaction lock timed out");
  } catch (const UnsupportedError&) {
    auto lease = m.acquire("fault-admin", 10s);
    if (!lease) throw std::runtime_error("admin lease not acquired");
    dblock::sql::Database(m).run_guarded(*lease, body);
  }
}

void Run::setup() {
  auto m = open_admin(60s);
  admin_tx(*m, [&](Transaction& tx) {
    for (const auto& stmt : sql_.create) tx.execute(stmt);
  });
}

void Run::cleanup_tables() {
  if (redis_) redis_->delete_keys(prefix_);
  if (dialect_of(resource_url_) == Dialect::kSqlite) return;  // the database file goes with the work directory
  try {
    auto m = open_admin(30s);
    std::vector<std::string> tables, sequences;
    admin_tx(*m, [&](Transaction& tx) {
      std::string list = dialect_ == Dialect::kPostgresql
                             ? "SELECT c.relname, c.relkind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                               " WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'S')"
                             : "SELECT table_name, 'r' FROM information_schema.tables WHERE table_schema = DATABASE()";
      for (const auto& row : tx.query(list)) {
        std::string name = as_text(row.at(0));
        if (name.rfind(prefix_, 0) != 0) continue;
        (as_text(row.at(1)) == "S" ? sequences : tables).push_back(name);
      }
    });
    admin_tx(*m, [&](Transaction& tx) {
      for (const auto& t : tables) tx.execute("DROP TABLE IF EXISTS " + t + (dialect_ == Dialect::kPostgresql ? " CASCADE" : ""));
      for (const auto& q : sequences) tx.execute("DROP SEQUENCE IF EXISTS " + q);
    });
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_driver: cleanup of %s* failed (ignored): %s\n", prefix_.c_str(), e.what());
  }
}

void Run::spawn(int id) {
  int out[2], in[2];
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  std::string url = a_.url;
  if (dialect_ == Dialect::kPostgresql && a_.fault != "pgbouncer") {
    url = with_param(url, "application_name", run_tag_ + "_c" + s(id));
  }
  // The work each client simulates inside its hold: long enough that faults land inside it.
  // client-kill and session-kill (and Redis's connection kills) also pause inside the write
  // transaction, so that a good share of the faults lands between the guard check and the commit.
  const bool kill_fault = a_.fault == "client-kill" || a_.fault == "pgbouncer" || a_.fault == "session-kill" ||
                          a_.fault == "conn-kill" || a_.fault == "pubsub-kill";
  const bool writer = a_.fault == "writer-kill";
  // Redis restarts: holds of up to 0.6 TTL (the write in the middle), so that a restart (about
  // 0.3 s) lands inside holds that outlive it and renew across it. Without AOF those leases are
  // gone when the server is back, which the holder learns at its renewal or release while a waiter
  // may already hold the name and write; with AOF `always` they must all still be there.
  // ZooKeeper likewise: a session outlives a restart or a leader's death when its client reconnects
  // in time, and its leases with it; a forced expiry lands in a hold whose holder writes after it.
  const bool long_holds = a_.fault == "failover" ||
                          (is_redis(dialect_) && (a_.fault == "server-restart" || a_.fault == "server-restart-aof" ||
                                                  a_.fault == "busy-script" || a_.fault.rfind("node-", 0) == 0)) ||
                          (members_ && (a_.fault == "server-restart" || a_.fault == "leader-kill" ||
                                        a_.fault == "session-expire" || a_.fault == "quorum-loss"));
  const std::string long_pause = s(a_.ttl_ms * 3 / 10);
  std::vector<std::string> argv = {a_.client_path,
                                   "--url", url,
                                   "--prefix", prefix_,
                                   "--log", a_.work + "/client-" + s(id) + ".log",
                                   "--run", run_tag_,
                                   "--client", s(id),
                                   "--ttl-ms", s(a_.ttl_ms),
                                   "--seed", s(static_cast<std::int64_t>(a_.seed)),
                                   "--pre-ms", a_.sabotage ? "30" : long_holds ? long_pause : (kill_fault ? "10" : (writer ? "2" : "5")),
                                   "--tx-ms", kill_fault ? "5" : (writer ? "4" : "0"),
                                   "--post-ms", long_holds ? long_pause : kill_fault ? "20" : (writer ? "2" : "10"),
                                   "--gap-ms", writer ? "2" : "5"};
  if (a_.fault == "pgbouncer") argv.push_back("--check-session-refused");
  if (!is_sql(dialect_)) {  // the resource is outside the lock service
    argv.push_back("--resource-url");
    argv.push_back(resource_url_);
  }
  if (a_.sabotage) argv.push_back("--unfenced");
  if (a_.fault == "session-expire") argv.push_back("--announce-session");
  std::vector<char*> args;
  for (auto& x : argv) args.push_back(x.data());
  args.push_back(nullptr);
  const std::string err = a_.work + "/client-" + s(id) + ".err";
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    setpgid(0, 0);
    dup2(out[1], STDOUT_FILENO);
    dup2(in[0], STDIN_FILENO);
    int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (e >= 0) dup2(e, STDERR_FILENO);
    execv(args[0], args.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(out[1]);
  close(in[0]);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  Client& c = clients_[id];
  c.id = id;
  c.pid = pid;
  c.out_fd = out[0];
  c.in_fd = in[1];
  c.alive = true;
  note("spawn " + s(id) + " pid " + s(pid));
}

void Run::read_client(Client& c) {
  for (;;) {
    char buf[4096];
    ssize_t n = read(c.out_fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return;  // EAGAIN
    if (n == 0) {
      close(c.out_fd);
      c.out_fd = -1;
      return;
    }
    c.buffer.append(buf, static_cast<std::size_t>(n));
    std::size_t nl;
    while ((nl = c.buffer.find('\n')) != std::string::npos) {
      std::string line = c.buffer.substr(0, nl);
      c.buffer.erase(0, nl + 1);
      on_line(c, line);
    }
  }
}

void Run::on_line(Client& c, const std::string& line) {
  const std::int64_t now = mono_ns();
  if (line == "ready") {
    c.ready = true;
  } else if (line.rfind("cs ", 0) == 0) {
    c.in_cs = true;
    c.cs_since = now;
    ++acquisitions_seen_;
    if (armed_ && target_ == 0 && a_.fault != "writer-kill") {
      target_ = c.id;
      precise_ = true;
      // client-kill: anywhere in the hold (before, during or after the write); client-stop: soon.
      act_at_ = now + static_cast<std::int64_t>(uniform(0, a_.fault == "client-stop" ? 5 : 30) * kMs);
      armed_ = false;
    }
  } else if (line.rfind("wb ", 0) == 0) {
    c.writing = true;
    if (armed_ && target_ == 0 && a_.fault == "writer-kill") {
      target_ = c.id;
      precise_ = true;
      act_at_ = now + static_cast<std::int64_t>(uniform(0, 4) * kMs);  // inside the write transaction, mostly
      armed_ = false;
    }
  } else if (line.rfind("we ", 0) == 0) {
    c.writing = false;
  } else if (line.rfind("out ", 0) == 0) {
    c.in_cs = false;
    c.writing = false;
  } else if (line == "bye") {
    c.said_bye = true;
  } else if (line.rfind("zs ", 0) == 0) {
    std::istringstream fields(line.substr(3));
    std::string id, password;
    fields >> id >> password;
    zk_sessions_[c.id] = parse_zk_session(id, password);
  }
}

void Run::reap_exits() {
  for (auto& [id, c] : clients_) {
    if (!c.alive) continue;
    int status = 0;
    pid_t r = waitpid(c.pid, &status, WNOHANG);
    if (r != c.pid) continue;
    if (c.out_fd >= 0) read_client(c);
    c.alive = false;
    if (c.in_fd >= 0) close(c.in_fd);
    c.in_fd = -1;
    if (!killed_.count(id) && !c.said_bye) {
      ++crashes_;
      death_[id] = mono_ns();
      std::fprintf(stderr, "fault_driver: client %d exited unexpectedly (status %d); see %s/client-%d.err\n", id,
                   status, a_.work.c_str(), id);
      note("crash " + s(id));
      if (!g_interrupted) spawn(next_id_++);
    }
  }
}

void Run::kill_client(Client& c, FaultEvent::Kind kind) {
  const std::int64_t t = mono_ns();
  kill(c.pid, SIGKILL);
  killed_.insert(c.id);
  death_[c.id] = t;
  events_.push_back({kind, t, 0, c.id, 0});
  note(std::string(to_string(kind)) + " " + s(c.id) + (c.in_cs ? " in-cs" : ""));
  wait_pid(c.pid, 10'000ms);
  if (c.out_fd >= 0) {
    read_client(c);
    if (c.out_fd >= 0) close(c.out_fd);
    c.out_fd = -1;
  }
  if (c.in_fd >= 0) close(c.in_fd);
  c.in_fd = -1;
  c.alive = false;
  c.in_cs = false;
}

Client* Run::random_client(bool only_in_cs) {
  std::vector<Client*> pool;
  for (auto& [id, c] : clients_) {
    if (c.alive && c.ready && !c.stopped && (!only_in_cs || c.in_cs)) pool.push_back(&c);
  }
  if (pool.empty()) return nullptr;
  return pool[std::uniform_int_distribution<std::size_t>(0, pool.size() - 1)(rng_)];
}

void Run::schedule_next(double lo_ttl, double hi_ttl) {
  next_at_ = mono_ns() + static_cast<std::int64_t>(uniform(lo_ttl, hi_ttl) * static_cast<double>(ttl_ns()));
}

void Run::stop_clients(bool stop) {
  for (auto& [id, c] : clients_) {
    if (!c.alive || c.stopped == stop) continue;
    kill(c.pid, stop ? SIGSTOP : SIGCONT);
    c.stopped = stop;
    events_.push_back({stop ? FaultEvent::kClientStop : FaultEvent::kClientCont, mono_ns(), 0, c.id, 0});
  }
}

void Run::session_kill(bool all) {
  Url url = parse_url(a_.admin_url);
  const std::string host = url.hosts.empty() ? "127.0.0.1" : url.hosts[0].host;
  int terminated = 0;
  if (dialect_ == Dialect::kPostgresql) {
    std::string names;
    for (auto& [id, c] : clients_) {
      if (!c.alive || (!all && std::uniform_int_distribution<int>(0, 1)(rng_) == 0)) continue;
      names += (names.empty() ? "'" : ", '") + run_tag_ + "_c" + s(id) + "'";
    }
    if (names.empty()) {
      Client* c = random_client(false);
      if (!c) return;
      names = "'" + run_tag_ + "_c" + s(c->id) + "'";
    }
    std::string out;
    int rc = run_command({"psql", "-X", "-A", "-t", "-q", "-h", host, "-p",
                          s(url.hosts.empty() || !url.hosts[0].port ? 5432 : url.hosts[0].port), "-U",
                          url.user.empty() ? "postgres" : url.user, "-d", url.path.empty() ? "postgres" : url.path,
                          "-c",
                          "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name IN (" +
                              names + ")"},
                         20'000ms, &out, err_path());
    if (rc == 0) terminated = std::atoi(out.c_str());
    note("session-kill " + names + " -> " + s(terminated));
  } else if (dialect_ == Dialect::kMysql) {
    for (char ch : url.user + url.path) {
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') throw UsageError("unexpected user/db name");
    }
    std::vector<std::string> base = {"mariadb", "-h", host, "-P",
                                     s(url.hosts.empty() || !url.hosts[0].port ? 3306 : url.hosts[0].port), "-u",
                                     url.user.empty() ? "root" : url.user, "-N", "-B"};
    if (!url.password.empty()) base.push_back("-p" + url.password);
    auto cmd = base;
    cmd.insert(cmd.end(), {"-e", "SELECT id FROM information_schema.processlist WHERE user = '" + url.user +
                                     "' AND db = '" + url.path + "' AND id <> CONNECTION_ID()"});
    std::string out;
    if (run_command(cmd, 20'000ms, &out, err_path()) != 0) {
      note("session-kill: processlist query failed");
      return;
    }
    std::istringstream ids(out);
    std::string kills;
    std::vector<std::string> found;
    for (std::string id; ids >> id;) found.push_back(id);
    for (const auto& id : found) {
      if (!all && std::uniform_int_distribution<int>(0, 1)(rng_) == 0) continue;
      kills += "KILL CONNECTION " + id + "; ";
      ++terminated;
    }
    if (kills.empty() && !found.empty()) {
      kills = "KILL CONNECTION " + found[std::uniform_int_distribution<std::size_t>(0, found.size() - 1)(rng_)] + "; ";
      terminated = 1;
    }
    if (!kills.empty()) {
      auto kill_cmd = base;
      kill_cmd.insert(kill_cmd.end(), {"--force", "-e", kills});
      run_command(kill_cmd, 20'000ms, nullptr, err_path());  // a connection may be gone already: ignored
    }
    note("session-kill " + kills);
  }
  events_.push_back({FaultEvent::kSessionKill, mono_ns(), 0, 0, terminated});
}

void Run::redis_client_kill(const std::string& type) {
  const int killed = redis_->client_kill(type);
  note("client-kill type " + type + " -> " + s(killed));
  events_.push_back({FaultEvent::kSessionKill, mono_ns(), 0, 0, killed});
}

void Run::server_restart() {
  const std::int64_t t = mono_ns();
  const bool pg = dialect_ == Dialect::kPostgresql;
  int rc = 0;
  if (members_ && a_.fault == "leader-kill") {
    // The leader's crash: the other two elect a new one meanwhile; it comes back as a follower.
    const int port = members_->leader();
    rc = port == 0 ? -1 : members_->kill(port);
    if (rc == 0) rc = members_->start(port);
    note("leader-kill " + s(port));
  } else if (members_) {
    // A clean stop and start, the data kept: ZooKeeper's sessions and etcd's leases survive it.
    rc = members_->restart();
  } else if (redis_) {
    // A crash, as PostgreSQL's immediate stop and MariaDB's kill: SIGKILL, then the same server
    // (its AOF, if it has one) comes back.
    const int port = redis_->ports().front();
    rc = redis_->kill(port);
    if (rc == 0) rc = redis_->start(port);
  } else {
    rc = run_command({a_.server_script, "restart", a_.state, pg ? "immediate" : "kill"}, 120'000ms, nullptr,
                     err_path());
  }
  const std::int64_t t_end = mono_ns();
  events_.push_back({FaultEvent::kServerRestart, t, t_end, 0, 0});
  note("server-restart rc " + s(rc) + " took " + fmt(static_cast<double>(t_end - t) / 1e6) + " ms");
  if (rc != 0) throw std::runtime_error("server restart failed (see " + err_path() + ")");
}

void Run::failover() {
  const std::int64_t t = mono_ns();
  int rc = 0;
  if (pair_mode_ == "async") {
    rc = run_command({a_.server_script, "lag", a_.state}, 30'000ms, nullptr, err_path());
    const auto behind = milliseconds(static_cast<std::int64_t>(uniform(0.3, 1.0) * a_.ttl_ms));
    note("failover: standby behind for " + s(behind.count()) + " ms");
    std::this_thread::sleep_for(behind);  // what the primary commits meanwhile never reaches the standby
  }
  const std::int64_t t_kill = mono_ns();
  if (rc == 0) rc = run_command({a_.server_script, "failover", a_.state}, 180'000ms, nullptr, err_path());
  const std::int64_t t_end = mono_ns();
  // [standby behind (or primary killed), new primary promoted and its standby rebuilt]: what the
  // oracle may excuse on an asynchronous pair.
  events_.push_back({FaultEvent::kServerRestart, t, t_end, 0, 0, t_kill});
  note("failover rc " + s(rc) + " (" + pair_mode_ + ") took " + fmt(static_cast<double>(t_end - t_kill) / 1e6) + " ms");
  if (rc != 0) throw std::runtime_error("failover failed (see " + err_path() + ")");
}

void Run::session_expire(Client& c) {
  const std::int64_t t = mono_ns();
  const auto it = zk_sessions_.find(c.id);
  const bool taken = it != zk_sessions_.end() && zk_->expire(it->second, 5000ms);
  const std::int64_t t_end = mono_ns();
  events_.push_back({FaultEvent::kSessionExpire, t, t_end, c.id, taken ? 1 : 0});
  note("session-expire " + s(c.id) + (c.in_cs ? " in-cs" : "") + (taken ? " taken over and closed" : " not taken over") +
       " in " + fmt(static_cast<double>(t_end - t) / 1e6) + " ms");
}

void Run::server_freeze() {
  // leader-stop: the ensemble's leader, long enough past the followers' syncLimit (2 s in
  // zookeeper.sh) that they elect another; it finds itself stale when it goes on.
  const bool leader = a_.fault == "leader-stop";
  const pid_t main_pid = members_ ? members_->pid(leader ? members_->leader() : members_->ports().front())
                             : server_pid(dialect_, a_.state, redis_ ? redis_->ports().front() : 0);
  if (main_pid == 0) throw std::runtime_error("no server pid under " + a_.state);
  const auto hold = milliseconds(static_cast<std::int64_t>(uniform(1.5, 2.5) * a_.ttl_ms)) + (leader ? 2000ms : 0ms);
  // The main process first (a stopped postmaster forks no new backends), then its children;
  // mariadbd and redis-server are one process each, and SIGSTOP stops all their threads.
  frozen_pids_ = {main_pid};
  watchdogs_.push_back(thaw_watchdog(frozen_pids_, hold + 2000ms));
  kill(main_pid, SIGSTOP);
  server_frozen_ = true;
  if (dialect_ == Dialect::kPostgresql) {
    for (pid_t child : child_pids(main_pid)) {
      frozen_pids_.push_back(child);
      kill(child, SIGSTOP);
    }
    watchdogs_.push_back(thaw_watchdog(frozen_pids_, hold + 2000ms));
  }
  thaw_at_ = mono_ns() + hold.count() * kMs;
  events_.push_back({FaultEvent::kServerStop, mono_ns(), 0, 0, static_cast<int>(frozen_pids_.size())});
  note("server-stop " + s(static_cast<std::int64_t>(frozen_pids_.size())) + " processes for " + s(hold.count()) + " ms");
}

void Run::server_thaw() {
  if (!server_frozen_) return;
  for (auto it = frozen_pids_.rbegin(); it != frozen_pids_.rend(); ++it) kill(*it, SIGCONT);
  server_frozen_ = false;
  // The backstop must not thaw a later freeze.
  for (pid_t w : watchdogs_) {
    kill(w, SIGKILL);
    wait_pid(w, 5000ms);
  }
  watchdogs_.clear();
  const std::int64_t t = mono_ns();
  events_.push_back({FaultEvent::kServerCont, t, 0, 0, 0});
  if (stale_leader_revokes_) events_.push_back({FaultEvent::kServerRestart, t, t + kStaleLeaderRevokes.count() * kMs, 0, 0});
  note("server-cont");
}

std::int64_t Run::nodes_left() {
  ManagerOptions options;
  options.table_prefix = prefix_;
  options.reaper = false;
  auto m = dblock::open(a_.admin_url, options);
  const std::int64_t until = mono_ns() + 2000 * kMs;
  for (;;) {
    std::int64_t n = 0;
    for (const LeaseInfo& info : m->list()) n += info.holders + std::max(0, info.waiters);
    if (n == 0 || mono_ns() > until) {
      note("nodes left " + s(n));
      return n;
    }
    std::this_thread::sleep_for(50ms);  // the server applies the closes of the clients' sessions
  }
}

void Run::interrupt() {
  const auto hold = interruption_->hold(milliseconds(a_.ttl_ms), uniform(0.0, 1.0));
  const std::string what = interruption_->begin();
  interrupted_ = true;
  interrupted_at_ = mono_ns();
  restore_at_ = mono_ns() + hold.count() * kMs;
  events_.push_back({FaultEvent::kInterrupt, mono_ns(), 0, 0, 0});
  note(what + " for " + s(hold.count()) + " ms");
}

void Run::restore() {
  if (!interrupted_) return;
  interruption_->end();
  interrupted_ = false;
  events_.push_back({FaultEvent::kRestore, mono_ns(), 0, 0, 0});
  // Nodes that came back empty: the oracle reads the span as a restart that lost leases.
  if (a_.fault.rfind("node-restart-empty", 0) == 0) {
    events_.push_back({FaultEvent::kServerRestart, interrupted_at_, mono_ns(), 0, 0});
  }
  note("restored");
}

// One step of the fault schedule; called whenever a timer may have expired or a client spoke.
void Run::step_faults() {
  const std::int64_t now = mono_ns();
  const std::string& f = a_.fault;
  if (f == "none") return;

  if (server_frozen_ && now >= thaw_at_) {
    server_thaw();
    schedule_next(1.0, 2.0);
  }
  if (interrupted_ && now >= restore_at_) {
    restore();
    if (f == "reply-cut") schedule_next(0.3, 1.0); else schedule_next(1.0, 2.0);  // a cut is short: more of them
  }
  if (stopped_client_ && now >= cont_at_) {
    Client& c = clients_[stopped_client_];
    kill(c.pid, SIGCONT);
    c.stopped = false;
    events_.push_back({FaultEvent::kClientCont, now, 0, c.id, 0});
    note("client-cont " + s(c.id));
    stopped_client_ = 0;
    schedule_next(0.5, 1.5);
  }
  if (target_ && now >= act_at_) {
    Client& c = clients_[target_];
    target_ = 0;
    // The fault is meant for a holder (or, writer-kill when armed, a writer): if the target left
    // its critical section meanwhile, wait for the next one.
    const bool missed = precise_ && (f == "writer-kill" ? !c.writing : !c.in_cs);
    if (missed) {
      armed_ = true;
      arm_deadline_ = now + 3 * ttl_ns();
    } else if (c.alive && !c.stopped) {
      if (f == "client-stop") {
        kill(c.pid, SIGSTOP);
        c.stopped = true;
        stopped_client_ = c.id;
        cont_at_ = now + static_cast<std::int64_t>(uniform(1.5, 2.5) * static_cast<double>(ttl_ns()));
        events_.push_back({FaultEvent::kClientStop, now, 0, c.id, 0});
        note("client-stop " + s(c.id) + (c.in_cs ? " in-cs" : ""));
        next_at_ = 0;
      } else if (f == "session-expire") {
        session_expire(c);
        schedule_next(1.0, 2.0);
      } else {
        kill_client(c, FaultEvent::kClientKill);
        spawn(next_id_++);
        // A killed holder blocks the lock until its TTL runs out: let the takeover happen first.
        if (f == "writer-kill") schedule_next(0.3, 1.2); else schedule_next(1.0, 2.0);
      }
    } else {
      schedule_next(0.2, 0.5);  // the target is gone (it crashed and was replaced): try again soon
    }
  }
  if (armed_ && now >= arm_deadline_) {  // nobody entered the critical section: try again later
    armed_ = false;
    schedule_next(0.2, 0.5);
  }
  if (next_at_ == 0 || now < next_at_ || armed_ || target_ || stopped_client_ || server_frozen_ || interrupted_) {
    return;
  }

  next_at_ = 0;
  if (f == "client-kill" || f == "pgbouncer" || f == "client-stop" || f == "writer-kill" || f == "session-expire") {
    if (f == "writer-kill" && std::uniform_int_distribution<int>(0, 1)(rng_) == 0) {
      // Half of the writer kills land at an arbitrary instant (acquire, renewal, release, idle).
      if (Client* c = random_client(false)) {
        target_ = c->id;
        precise_ = false;
        act_at_ = now;
        step_faults();
        return;
      }
    }
    Client* in_cs = f == "writer-kill" ? nullptr : random_client(true);
    if (in_cs) {
      target_ = in_cs->id;
      precise_ = true;
      act_at_ = now + static_cast<std::int64_t>(uniform(0, f == "client-stop" ? 5 : 30) * kMs);
    } else {
      armed_ = true;
      arm_deadline_ = now + 3 * ttl_ns();
    }
  } else if (f == "session-kill") {
    session_kill();
    schedule_next(0.3, 1.0);
  } else if (f == "conn-kill" || f == "pubsub-kill") {
    redis_client_kill(f == "conn-kill" ? "normal" : "pubsub");
    schedule_next(0.3, 1.0);
  } else if (f == "server-restart" || f == "server-restart-aof" || f == "leader-kill") {
    server_restart();
    schedule_next(2.0, 4.0);
  } else if (f == "failover") {
    failover();
    schedule_next(2.0, 4.0);
  } else if (f == "server-stop" || f == "leader-stop") {
    server_freeze();
  } else if (interruption_) {
    interrupt();
  }
}

void Run::stop_all_clients() {
  if (stopped_client_) {
    Client& c = clients_[stopped_client_];
    kill(c.pid, SIGCONT);
    c.stopped = false;
    events_.push_back({FaultEvent::kClientCont, mono_ns(), 0, c.id, 0});
    stopped_client_ = 0;
  }
  server_thaw();
  // relay-stall: the clients finish on a stalled path, so that their last calls and closing their
  // managers are checked against their bounds too; every other interruption ends first.
  if (interruption_ && interruption_->through_the_end()) {
    if (!interrupted_) interrupt();
  } else {
    restore();
  }
  // reply-cut: one more as the clients stop, given back in the loop below.
  const milliseconds stall = interruption_ ? interruption_->stall_at_the_stop() : milliseconds::zero();
  std::int64_t resume_at = 0;
  if (stall > milliseconds::zero()) interrupt();
  for (auto& [id, c] : clients_) {
    if (!c.alive || c.in_fd < 0) continue;
    (void)!write(c.in_fd, "stop\n", 5);
    close(c.in_fd);
    c.in_fd = -1;
  }
  // Each client finishes its iteration: at most one acquire wait (3 x TTL) plus a release.
  const std::int64_t deadline = mono_ns() + 3 * ttl_ns() + 20'000 * kMs;
  for (;;) {
    std::vector<pollfd> fds;
    bool any = false;
    for (auto& [id, c] : clients_) {
      if (c.alive) any = true;
      if (c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0});
    }
    if (!any || mono_ns() >= deadline) break;
    const bool timed = interrupted_ && stall > milliseconds::zero();
    if (timed && resume_at == 0 && mono_ns() >= restore_at_) {
      interruption_->cut_off();
      resume_at = mono_ns() + stall.count() * kMs;
      note("cut off for " + s(stall.count()) + " ms");
    } else if (timed && resume_at != 0 && mono_ns() >= resume_at) {
      restore();
    }
    poll(fds.data(), fds.size(), timed ? 5 : 50);
    for (auto& [id, c] : clients_) {
      if (c.out_fd >= 0) read_client(c);
    }
    for (auto& [id, c] : clients_) {
      if (!c.alive) continue;
      int status = 0;
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.alive = false;
        if (c.out_fd >= 0) read_client(c);  // its "bye" may have come after this round's read
        if (!c.said_bye && !killed_.count(id)) {
          ++crashes_;
          std::fprintf(stderr, "fault_driver: client %d exited at shutdown without finishing (status %d)\n", id, status);
        }
      }
    }
  }
  for (auto& [id, c] : clients_) {
    if (!c.alive) continue;
    std::fprintf(stderr, "fault_driver: client %d did not stop in time; killing it\n", id);
    kill_client(c, FaultEvent::kEndKill);
  }
  for (auto& [id, c] : clients_) {
    if (c.out_fd >= 0) close(c.out_fd);
    c.out_fd = -1;
  }
  restore();
}

int Run::execute() {
  dialect_ = dialect_of(a_.url);
  const bool pg = dialect_ == Dialect::kPostgresql;
  const std::string& f = a_.fault;
  const bool redis = is_redis(dialect_);
  if ((f == "session-kill" || f == "server-restart" || f == "server-stop" || f == "relay-stall" || f == "conn-full") &&
      dialect_ == Dialect::kSqlite) {
    usage(f + " needs a server backend");
  }
  if ((f == "session-kill" || f == "conn-full") && redis) usage(f + " needs an SQL server (Redis: conn-kill)");
  if ((f == "conn-kill" || f == "pubsub-kill" || f == "server-restart-aof") && !redis) usage(f + " needs a redis URL");
  if ((f == "writer-kill" || f == "disk-full") && redis) usage(f + " is an SQLite fault");
  if (f == "busy-script" && !redis) usage(f + " needs a redis or redlock URL");
  if (f == "server-restart-aof" && a_.state.empty()) usage(f + " needs --state");
  if (f == "pgbouncer" && !pg) usage("pgbouncer needs a postgresql URL (the pooler's)");
  if (f == "disk-full" && (dialect_ != Dialect::kSqlite || a_.url != disk_full_url(a_.work))) {
    usage("disk-full runs on SQLite in the work directory (no --url)");
  }
  if ((f == "server-restart" || f == "server-stop") && a_.state.empty()) usage(f + " needs --state");
  if (f == "failover") {
    if (!is_sql(dialect_) || dialect_ == Dialect::kSqlite) usage(f + " needs a PostgreSQL or MariaDB pair");
    std::ifstream mode(a_.state + "/mode");  // written by start-pair (PostgreSQL); MariaDB's replica is asynchronous
    if (!(mode >> pair_mode_)) pair_mode_ = "async";
    if (!std::ifstream(a_.state + "/primary")) usage(f + " needs --state of a pair (start-pair)");
  }
  const bool zookeeper = dialect_ == Dialect::kZookeeper;
  const bool etcd = dialect_ == Dialect::kEtcd;
  if (f == "session-expire" && !zookeeper) usage(f + " needs a zookeeper URL");
  if ((f == "leader-kill" || f == "leader-stop") && !zookeeper && !etcd) usage(f + " needs a zookeeper or etcd URL");
  if (f == "quorum-loss" && !etcd) usage(f + " needs an etcd URL");
  if (zookeeper && f != "none" && f != "client-kill" && f != "client-stop" && f != "session-expire" &&
      f != "server-restart" && f != "server-stop" && f != "relay-stall" && f != "leader-kill" && f != "leader-stop" &&
      f != "reply-cut") {
    usage(f + " does not apply to ZooKeeper");
  }
  if (etcd && f != "none" && f != "client-kill" && f != "client-stop" && f != "server-restart" && f != "server-stop" &&
      f != "relay-stall" && f != "leader-kill" && f != "leader-stop" && f != "quorum-loss") {
    usage(f + " does not apply to etcd");
  }
  if (f == "reply-cut" && (!zookeeper || parse_url(a_.url).hosts.size() != 1)) {
    usage(f + " needs a zookeeper URL naming one server (the relay stands in front of it)");
  }
  if ((f == "leader-kill" || f == "leader-stop") && (a_.state.empty() || parse_url(a_.url).hosts.size() < 3)) {
    usage(f + " needs an ensemble or cluster (a URL naming three servers) and --state");
  }
  if (f == "quorum-loss" && (a_.state.empty() || parse_url(a_.url).hosts.size() != 3)) {
    usage(f + " needs a cluster of three members (a URL naming all three) and --state");
  }
  // A session as long as the TTL (the least the test servers grant is 1 s): a lease is bound by
  // both, and a client stopped for longer than a TTL outlives its session.
  // reply-cut: ten times that, so that a node a client's closed manager left behind would hold the
  // name for long after the run (nodes_left), not a second.
  if (zookeeper && a_.url.find("session_timeout=") == std::string::npos) {
    a_.url = with_param(a_.url, "session_timeout", s(std::max(1000, a_.ttl_ms) * (f == "reply-cut" ? 10 : 1)));
  }
  const bool node_fault = f.rfind("node-", 0) == 0;
  if (node_fault && dialect_ != Dialect::kRedlock) usage(f + " needs a redlock URL");
  if (node_fault && a_.state.empty()) usage(f + " needs --state");
  if (redis && !a_.state.empty()) {
    std::ifstream mode(a_.state + "/aof-mode");  // written by scripts/servers/redis.sh start
    if (!(mode >> aof_mode_)) aof_mode_ = "no";
  }
  if (f == "server-restart-aof" && aof_mode_ != "always") {
    usage("server-restart-aof needs a server started with DBLOCK_REDIS_AOF=always (" + a_.state + "/aof-mode: " +
          aof_mode_ + ")");
  }
  // A node that comes back at once must come back with its keys: without them, a holder may be
  // left with a minority of nodes while another client takes a majority (docs/backends/redis.md).
  if ((f == "node-restart" || f == "node-restart-two") && aof_mode_ != "always" && !a_.durable) {
    usage(f + " needs servers started with DBLOCK_REDIS_AOF=always (" + a_.state + "/aof-mode: " + aof_mode_ +
          "), or --durable --expect-violation");
  }
  // The same restarts on nodes that come back empty: the overlaps they cause are admitted
  // (README, Redlock), each only if its earlier holder was told it had lost the lease.
  if (f.rfind("node-restart-empty", 0) == 0 && aof_mode_ == "always") {
    usage(f + " needs servers without AOF always (" + a_.state + "/aof-mode: " + aof_mode_ + ")");
  }
  if (f == "pgbouncer" && a_.url.find("prepared=") == std::string::npos) a_.url = with_param(a_.url, "prepared", "0");
  if (a_.server_script.empty()) {
    a_.server_script = std::string(DBLOCK_SOURCE_DIR) + "/scripts/servers/" +
                       (pg          ? "postgresql.sh"
                        : redis     ? "redis.sh"
                        : zookeeper ? "zookeeper.sh"
                        : etcd      ? "etcd.sh"
                                    : "mariadb.sh");
  }

  prefix_ = "fault" + s(getpid() % 100000) + "_" + s(static_cast<std::int64_t>(a_.seed % 100000)) + "_";
  run_tag_ = "dbf" + s(getpid() % 100000) + "s" + s(static_cast<std::int64_t>(a_.seed % 100000));
  if (a_.admin_url.empty()) a_.admin_url = a_.url;
  resource_url_ = resource_url(dialect_, a_.admin_url, a_.work);
  // The clients' URL only changes: setup and the oracle connect directly.
  if (f == "relay-stall") interruption_ = relay_stall(a_.url, a_.relay_path);
  if (f == "reply-cut") interruption_ = reply_cut(a_.url, a_.relay_path);
  if (f == "conn-full") {
    interruption_ = connections_full(a_.admin_url, prefix_,
                                     {[this] { stop_clients(true), session_kill(true); }, [this] { stop_clients(false); }});
  }
  if (f == "disk-full") interruption_ = disk_full(a_.work + "/db");  // before the file is made
  if (redis) redis_ = std::make_unique<RedisNodes>(a_.admin_url, a_.server_script, a_.state, err_path());
  if (zookeeper) {
    auto servers = std::make_unique<ZkServers>(a_.admin_url, a_.server_script, a_.state, err_path());
    zk_ = servers.get();
    members_ = std::move(servers);
  }
  if (etcd) members_ = etcd_members(a_.admin_url, a_.server_script, a_.state, err_path());
  stale_leader_revokes_ = etcd && f == "leader-stop" && !a_.durable;
  if (f == "quorum-loss") interruption_ = quorum_loss(*members_);
  if (f == "busy-script") interruption_ = busy_script(*redis_, milliseconds(a_.ttl_ms));
  if (node_fault) {
    const int count = f.size() > 4 && f.compare(f.size() - 4, 4, "-two") == 0 ? 2 : 1;
    const NodeFault how = f.rfind("node-restart", 0) == 0 ? NodeFault::kRestart
                          : f == "node-stop"              ? NodeFault::kFreeze
                                                          : NodeFault::kKill;
    interruption_ = node_outage(*redis_, count, how, a_.seed);
  }
  if (interruption_) a_.url = interruption_->client_url(a_.url);
  sql_ = resource_sql(dialect_of(resource_url_), prefix_);
  driver_log_.open(a_.work + "/driver.log");

  std::printf("fault run: backend=%s fault=%s seed=%llu clients=%d seconds=%.1f ttl=%d ms prefix=%s work=%s\n",
              dialect_name(dialect_), f.c_str(), static_cast<unsigned long long>(a_.seed), a_.clients, a_.seconds,
              a_.ttl_ms, prefix_.c_str(), a_.work.c_str());
  std::fflush(stdout);
  setup();

  for (int i = 0; i < a_.clients; ++i) spawn(next_id_++);
  // Wait (bounded) until every client connected, so the measured interval is the contended one.
  const std::int64_t ready_deadline = mono_ns() + 60'000 * kMs;
  for (;;) {
    bool all = true;
    std::vector<pollfd> fds;
    for (auto& [id, c] : clients_) {
      if (!c.ready) all = false;
      if (c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0});
    }
    if (all || g_interrupted) break;
    if (mono_ns() > ready_deadline) throw std::runtime_error("clients did not become ready within 60 s");
    poll(fds.data(), fds.size(), 100);
    for (auto& [id, c] : clients_) {
      if (c.out_fd >= 0) read_client(c);
    }
    reap_exits();
    if (crashes_ > 0) throw std::runtime_error("a client failed to start");
  }
  const std::int64_t start = mono_ns();
  const std::int64_t end = start + static_cast<std::int64_t>(a_.seconds * 1e9);
  if (f != "none") schedule_next(0.5, 1.0);

  const auto running = [&] {
    const bool course = interrupted_ && interruption_->runs_its_course();
    return course || (mono_ns() < end && (a_.max_acquisitions <= 0 || acquisitions_seen_ < a_.max_acquisitions));
  };
  while (!g_interrupted && running()) {
    // Past the end (an interruption running its course): its own timer below.
    std::int64_t wake = mono_ns() < end ? end : mono_ns() + 100 * kMs;
    for (std::int64_t t : {next_at_, act_at_ * (target_ != 0), arm_deadline_ * armed_, cont_at_ * (stopped_client_ != 0),
                           thaw_at_ * server_frozen_, restore_at_ * interrupted_}) {
      if (t > 0) wake = std::min(wake, t);
    }
    std::vector<pollfd> fds;
    for (auto& [id, c] : clients_) {
      if (c.alive && c.out_fd >= 0) fds.push_back({c.out_fd, POLLIN, 0});
    }
    // 1 ms granularity; the timers themselves are on mono_ns.
    int timeout = static_cast<int>(std::clamp<std::int64_t>((wake - mono_ns() + kMs - 1) / kMs, 0, 100));
    poll(fds.data(), fds.size(), timeout);
    for (auto& [id, c] : clients_) {
      if (c.alive && c.out_fd >= 0) read_client(c);
    }
    reap_exits();
    step_faults();
  }
  const std::int64_t clients_stopped_at = mono_ns();
  stop_all_clients();
  const std::int64_t left = f == "reply-cut" ? nodes_left() : 0;
  const double seconds = static_cast<double>(mono_ns() - start) / 1e9;
  for (pid_t w : watchdogs_) {
    kill(w, SIGKILL);  // the server is thawed already
    wait_pid(w, 5000ms);
  }
  watchdogs_.clear();

  // ---- oracle ----
  OracleInput in;
  in.ttl_ns = ttl_ns();
  in.ended_at = clients_stopped_at;
  in.baseline = f == "none";
  in.expect_session_refused = f == "pgbouncer";
  in.fence_only = !is_sql(dialect_);
  // Redlock: only nodes restarted empty at once lose leases (the other node faults keep a
  // majority's keys, restart nodes late, or freeze them).
  in.leases_volatile = (dialect_ == Dialect::kRedis && aof_mode_ != "always" && !a_.durable) ||
                       (f.rfind("node-restart-empty", 0) == 0 && !a_.durable) || stale_leader_revokes_;
  // An asynchronous standby promoted loses what it had not received: leases and writes.
  if (f == "failover" && pair_mode_ == "async") in.leases_volatile = in.writes_volatile = true;
  in.events = events_;
  in.death = death_;
  for (auto& [id, c] : clients_) {
    std::ifstream log(a_.work + "/client-" + s(id) + ".log");
    in.clients.push_back(parse_client_log(id, log));
  }
  std::string server_version;
  {
    auto m = open_admin(90s);
    admin_tx(*m, [&](Transaction& tx) {
      for (const auto& row : tx.query(sql_.select_ops)) {
        in.ops.push_back({as_int(row.at(0)), as_text(row.at(1)), as_int(row.at(2)), static_cast<int>(as_int(row.at(3)))});
      }
      auto res = tx.query(sql_.select_resource);
      if (res.size() != 1) throw std::runtime_error("resource row missing");
      in.resource_last_fence = as_int(res[0].at(0));
      in.resource_value = as_int(res[0].at(1));
      auto v = tx.query(sql_.server_version);
      if (!v.empty()) server_version = as_text(v[0].at(0));
    });
  }
  if (redis) server_version = redis_->version();  // the resource's SQLite is not the server under test
  if (members_) server_version = members_->version();
  Figures fig = evaluate(in);
  fig.client_crashes = crashes_;
  auto violations = fig.violations(in.baseline);
  if (left != 0) violations.push_back("nodes_left=" + s(left));
  std::string verdict = violations.empty() ? "ok" : "violation";
  std::string problem = fig.unproven(f);
  if (in.expect_session_refused && fig.session_refused == 0) problem = "session-lock refusal was never checked";
  if (!problem.empty() && verdict == "ok") verdict = "error";

  // ---- figures ----
  auto p = [&](double pct) { return percentile(fig.recovery_ms, pct); };
  std::printf("\n== %s / %s, seed %llu: %.1f s, %zu client processes, TTL %d ms ==\n", dialect_name(dialect_),
              f.c_str(), static_cast<unsigned long long>(a_.seed), seconds, clients_.size(), a_.ttl_ms);
  std::printf("server %s, dblock %s\n", server_version.c_str(), dblock::version());
  std::printf("acquisitions %lld, guarded writes %lld (acknowledged %lld), ops rows %lld, faults injected %lld\n",
              (long long)fig.acquisitions, (long long)fig.write_attempts, (long long)fig.acked, (long long)fig.ops,
              (long long)fig.faults);
  std::printf("safety (all must be 0):\n");
  std::printf("  accepted stale-fence writes     %lld\n", (long long)fig.stale_writes);
  std::printf("  acknowledged writes lost        %lld%s\n", (long long)fig.lost_acks,
              in.writes_volatile ? (" (committed on the old primary while its standby was behind: " +
                                    s(fig.acks_lost_to_failover) + ", allowed)").c_str()
                                 : "");
  std::printf("  writes doubled                  %lld\n", (long long)fig.doubled);
  std::printf("  phantom / mis-fenced ops        %lld\n", (long long)fig.phantom_ops);
  std::printf("  rejected writes that committed  %lld\n", (long long)fig.rejected_committed);
  if (in.fence_only) {
    std::printf("  guard passed, resource refused  — (no guard: the resource's fence check alone, refused %lld)\n",
                (long long)fig.rejected_resource);
  } else {
    std::printf("  guard passed, resource refused  %lld\n", (long long)fig.guard_bypass);
  }
  std::printf("  resource row inconsistent       %lld\n", (long long)fig.resource_mismatch);
  std::printf("  fence regressions               %lld (duplicates %lld, across restarts %lld)\n",
              (long long)fig.fence_regressions, (long long)fig.duplicate_fences, (long long)fig.restart_regressions);
  std::printf("  wrong-owner release/renew effects %lld (%lld probes, %lld failed under faults)\n",
              (long long)fig.wrong_owner_effects, (long long)fig.probes, (long long)fig.probe_errors);
  const bool excused = in.leases_volatile && (f == "server-restart" || f == "server-restart-aof" || f == "failover" ||
                                              f.rfind("node-restart-empty", 0) == 0 || stale_leader_revokes_);
  std::printf("  holds overlapping within safe-until %lld%s\n", (long long)fig.safe_overlaps,
              excused ? (" (after a restart that lost the leases: " + s(fig.restart_overlaps) + ", allowed)").c_str() : "");
  std::printf("  leases found lost before safe-until %lld%s\n", (long long)fig.lost_early,
              excused ? (" (lost to a restart: " + s(fig.lost_to_restart) + " releases, " +
                         s(fig.probe_gone_at_restart) + " probes; allowed)").c_str()
                      : "");
  if (f == "failover") {
    std::printf("  (holds across a failover %lld: kept %lld, holder told it was lost %lld, release in doubt %lld)\n",
                (long long)fig.holds_across_restart, (long long)fig.kept_across_restart,
                (long long)fig.told_lost_at_restart, (long long)fig.in_doubt_at_restart);
  }
  if (f == "session-expire") {
    std::printf("  (forced expiries: %lld holds cut where the expiry began, %lld releases/probes found the lease gone; allowed)\n",
                (long long)fig.expired_holds, (long long)fig.lost_to_expiry);
  }
  if (in.expect_session_refused) {
    std::printf("  session locks granted behind the pooler %lld (refused %lld, unchecked %lld)\n",
                (long long)fig.session_not_refused, (long long)fig.session_refused, (long long)fig.session_unchecked);
  }
  std::printf("  client crashes                  %lld\n", (long long)crashes_);
  if (f == "reply-cut") std::printf("  nodes left after the clients closed %lld\n", (long long)left);
  std::printf("  lease calls over their deadline %lld, waits given up early %lld (%lld calls; latest %.0f ms vs its bound: %s)\n",
              (long long)fig.overdue_calls, (long long)fig.early_giveups, (long long)fig.calls, fig.worst_call_ms,
              fig.worst_call.empty() ? "none" : fig.worst_call.c_str());
  std::printf("reported:\n");
  std::printf("  believed-hold overlaps          %lld, total %.1f ms%s\n", (long long)fig.overlaps, fig.overlap_ms,
              in.baseline ? " (must be 0 without faults)" : "");
  std::printf("  recovery after holder died/paused: n=%zu p50 %.0f ms, p99 %.0f ms, max %.0f ms (TTL %d ms; %lld of %lld kills hit a holder; %lld unrecovered)\n",
              fig.recovery_ms.size(), p(50), p(99), p(100), a_.ttl_ms, (long long)fig.kills_in_hold,
              (long long)fig.kills, (long long)fig.unrecovered);
  std::printf("  releases in doubt %lld, already lost %lld; leases lost: callbacks %lld, flagged at release %lld, expired on return %lld\n",
              (long long)fig.in_doubt_releases, (long long)fig.already_lost_releases, (long long)fig.lost_callbacks,
              (long long)fig.lost_at_release, (long long)fig.expired_on_return);
  std::printf("  guarded writes rejected by the guard %lld (lost() already true at %lld writes); failed in doubt %lld (committed %lld, absent %lld)\n",
              (long long)fig.rejected_guard, (long long)fig.lost_flag_at_write, (long long)fig.write_errors,
              (long long)fig.indoubt_committed, (long long)fig.indoubt_absent);
  std::printf("  acquire timeouts %lld, errors %lld, background errors %lld, malformed log lines %lld\n",
              (long long)fig.not_acquired, (long long)fig.errors, (long long)fig.background_errors,
              (long long)fig.malformed);
  std::printf("verdict: %s%s%s\n", verdict.c_str(), violations.empty() ? "" : " — ", [&] {
    std::string v;
    for (const auto& x : violations) v += (v.empty() ? "" : ", ") + x;
    return v;
  }().c_str());
  if (!problem.empty()) std::printf("run problem: %s\n", problem.c_str());

  std::string sv = server_version.substr(0, server_version.find(' '));  // "15.18 (Debian ...)" -> "15.18"
  for (char& ch : sv) {
    if (ch == '=') ch = '_';
  }
  std::string recovery;
  for (double r : fig.recovery_ms) recovery += (recovery.empty() ? "" : ",") + fmt(r);
  std::ostringstream result;
  // A failover row is named by its pair's replication (the report keeps them apart).
  const std::string row = f == "failover" ? f + "-" + pair_mode_ : f;
  result << "RESULT backend=" << dialect_name(dialect_) << " fault=" << row << " seed=" << a_.seed
         << " ttl_ms=" << a_.ttl_ms << " clients=" << a_.clients << " seconds=" << fmt(seconds)
         << " dblock=" << dblock::version() << " server=" << (sv.empty() ? "?" : sv)
         << " acquisitions=" << fig.acquisitions << " writes=" << fig.write_attempts << " acked=" << fig.acked
         << " ops=" << fig.ops << " faults=" << fig.faults << " stale_writes=" << fig.stale_writes
         << " lost_acks=" << fig.lost_acks << " doubled=" << fig.doubled << " phantom_ops=" << fig.phantom_ops
         << " rejected_committed=" << fig.rejected_committed << " guard_bypass=" << fig.guard_bypass
         << " resource_mismatch=" << fig.resource_mismatch << " fence_regressions=" << fig.fence_regressions
         << " duplicate_fences=" << fig.duplicate_fences << " restart_regressions=" << fig.restart_regressions
         << " wrong_owner_effects=" << fig.wrong_owner_effects << " probes=" << fig.probes
         << " safe_overlaps=" << fig.safe_overlaps << " session_not_refused=" << fig.session_not_refused
         << " client_crashes=" << crashes_ << " overdue_calls=" << fig.overdue_calls
         << " early_giveups=" << fig.early_giveups << " worst_call_ms=" << fmt(fig.worst_call_ms, 0) << " overlaps=" << fig.overlaps << " overlap_ms=" << fmt(fig.overlap_ms)
         << " kills=" << fig.kills << " kills_in_hold=" << fig.kills_in_hold << " unrecovered=" << fig.unrecovered
         << " in_doubt_releases=" << fig.in_doubt_releases << " already_lost_releases=" << fig.already_lost_releases
         << " rejected_guard=" << fig.rejected_guard << " rejected_resource=" << fig.rejected_resource
         << " lost_early=" << fig.lost_early << " restart_overlaps=" << fig.restart_overlaps
         << " lost_to_restart=" << fig.lost_to_restart << " probe_gone_at_restart=" << fig.probe_gone_at_restart
         << " expired_holds=" << fig.expired_holds << " lost_to_expiry=" << fig.lost_to_expiry
         << " acks_lost_to_failover=" << fig.acks_lost_to_failover << " holds_across_restart=" << fig.holds_across_restart
         << " kept_across_restart=" << fig.kept_across_restart << " told_lost_at_restart=" << fig.told_lost_at_restart
         << " in_doubt_at_restart=" << fig.in_doubt_at_restart
         << " nodes_left=" << left << " write_errors=" << fig.write_errors
         << " indoubt_committed=" << fig.indoubt_committed << " lost_callbacks=" << fig.lost_callbacks
         << " lost_at_release=" << fig.lost_at_release << " errors=" << fig.errors
         << " recovery_ms=" << (recovery.empty() ? "-" : recovery) << " verdict=" << verdict;
  std::printf("%s\n", result.str().c_str());
  std::fflush(stdout);
  if (!a_.results.empty()) {
    std::ofstream out(a_.results, std::ios::app);
    out << result.str() << "\n";
  }

  if ((verdict == "ok" || (a_.expect_violation && verdict == "violation")) && !a_.keep) cleanup_tables();
  if (verdict != "ok" && !a_.expect_violation) std::printf("logs kept in %s\n", a_.work.c_str());
  if (a_.expect_violation) {
    std::printf("expected a violation (%s): %s\n", a_.sabotage ? "--sabotage" : "--durable",
                verdict == "violation" ? "found" : "NOT FOUND");
    return verdict == "violation" ? 0 : 1;
  }
  return verdict == "ok" ? 0 : (verdict == "violation" ? 1 : 2);
}

Args parse_run(int argc, char** argv) {
  Args a;
  for (int i = 2; i < argc; ++i) {
    std::string k = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage("missing value for " + k);
      return argv[++i];
    };
    if (k == "--fault") a.fault = next();
    else if (k == "--seed") a.seed = std::stoull(next());
    else if (k == "--url") a.url = next();
    else if (k == "--admin-url") a.admin_url = next();
    else if (k == "--state") a.state = next();
    else if (k == "--server-script") a.server_script = next();
    else if (k == "--client") a.client_path = next();
    else if (k == "--work") a.work = next();
    else if (k == "--results") a.results = next();
    else if (k == "--clients") a.clients = std::stoi(next());
    else if (k == "--seconds") a.seconds = std::stod(next());
    else if (k == "--max-acquisitions") a.max_acquisitions = std::stol(next());
    else if (k == "--ttl-ms") a.ttl_ms = std::stoi(next());
    else if (k == "--relay") a.relay_path = next();
    else if (k == "--keep") a.keep = true;
    else if (k == "--sabotage") a.sabotage = true;
    else if (k == "--expect-violation") a.expect_violation = true;
    else if (k == "--durable") a.durable = true;
    else usage("unknown argument " + k);
  }
  if (std::find(fault_kinds().begin(), fault_kinds().end(), a.fault) == fault_kinds().end()) usage("unknown fault " + a.fault);
  if (a.clients < 2 || a.clients > 64) usage("--clients must be in 2..64");
  if (a.ttl_ms < 100) usage("--ttl-ms must be >= 100");
  if (a.seconds <= 0 || a.seconds > 3600) usage("--seconds must be in (0, 3600]");
  if (a.client_path.empty()) a.client_path = self_dir() + "/fault_client";
  return a;
}

}  // namespace
}  // namespace dblock::fault

int main(int argc, char** argv) {
  using namespace dblock::fault;
  if (argc < 2) usage("missing command");
  std::string cmd = argv[1];
  if (cmd == "selftest") {
    auto failures = oracle_selftest();
    for (const auto& f : failures) std::printf("FAIL: %s\n", f.c_str());
    std::printf("oracle selftest: %s\n", failures.empty() ? "ok" : "FAILED");
    return failures.empty() ? 0 : 1;
  }
  if (cmd == "schemes") {  // the backends this build can open (scripts/fault.sh picks its matrix)
    for (const auto& scheme : dblock::available_schemes()) std::printf("%s\n", scheme.c_str());
    return 0;
  }
  if (cmd == "report") {
    return report(std::vector<std::string>(argv + 2, argv + argc));
  }
  if (cmd != "run") usage("unknown command " + cmd);
  Args args = parse_run(argc, argv);
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  setenv("DBLOCK_FAULT_DRIVER_PID", std::to_string(getpid()).c_str(), 1);
  bool own_work = false;
  if (args.work.empty()) {
    const char* base = std::getenv("TMPDIR");
    std::string tmpl = std::string(base && *base ? base : "/tmp") + "/dblock-fault-XXXXXX";
    if (!mkdtemp(tmpl.data())) {
      std::perror("mkdtemp");
      return 2;
    }
    args.work = tmpl;
    own_work = true;
  } else {
    std::filesystem::create_directories(args.work);
  }
  if (args.url.empty() && args.fault == "disk-full") {
    std::filesystem::create_directories(args.work + "/db");
    args.url = disk_full_url(args.work);
  } else if (args.url.empty()) {
    args.url = "sqlite://" + args.work + "/fault.db";
  }
  int rc = 2;
  const bool keep = args.keep;
  const std::string work = args.work;
  try {
    Run run(args);
    rc = run.execute();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fault_driver: run failed: %s (logs in %s)\n", e.what(), work.c_str());
    std::printf("RESULT-ERROR %s\n", e.what());
    return 2;
  }
  if (rc == 0 && own_work && !keep) {
    std::error_code ec;
    std::filesystem::remove_all(work, ec);
  }
  return rc;
}
