#include "redis_admin.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "commands.h"
#include "dblock/errors.h"
#include "dblock/url.h"

namespace dblock::fault {

using namespace std::chrono_literals;

RedisNodes::RedisNodes(const std::string& admin_url, std::string script, std::string state, std::string err_path)
    : script_(std::move(script)), state_(std::move(state)), err_path_(std::move(err_path)) {
  const Url url = parse_url(admin_url);
  for (const auto& h : url.hosts) {
    hosts_.push_back(h.host.empty() ? "127.0.0.1" : h.host);
    ports_.push_back(h.port == 0 ? 6379 : h.port);
  }
  if (hosts_.empty()) {
    hosts_.push_back("127.0.0.1");
    ports_.push_back(6379);
  }
  user_ = url.user;
  db_ = url.path;
  if (!url.password.empty()) setenv("REDISCLI_AUTH", url.password.c_str(), 1);  // not on the command line
}

std::vector<std::string> RedisNodes::cli(std::size_t node) const {
  std::vector<std::string> cmd = {"redis-cli", "-h", hosts_[node], "-p", std::to_string(ports_[node])};
  if (!user_.empty()) cmd.insert(cmd.end(), {"--user", user_});
  if (!db_.empty()) cmd.insert(cmd.end(), {"-n", db_});
  return cmd;
}

int RedisNodes::client_kill(const std::string& type) {
  int killed = 0;
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    auto cmd = cli(i);
    cmd.insert(cmd.end(), {"CLIENT", "KILL", "TYPE", type});
    std::string out;
    if (run_command(cmd, 20'000ms, &out, err_path_) == 0) killed += std::atoi(out.c_str());
  }
  return killed;
}

std::string RedisNodes::version() {
  auto cmd = cli(0);
  cmd.insert(cmd.end(), {"INFO", "server"});
  std::string out;
  if (run_command(cmd, 20'000ms, &out, err_path_) != 0) return "";
  const auto at = out.find("redis_version:");
  if (at == std::string::npos) return "";
  const auto from = at + std::strlen("redis_version:");
  return out.substr(from, out.find_first_of("\r\n", from) - from);
}

void RedisNodes::delete_keys(const std::string& prefix) {
  for (std::size_t i = 0; i < ports_.size(); ++i) {
    std::vector<std::string> keys;
    for (const std::string& pattern : {prefix + "*", "{" + prefix + "*"}) {
      auto cmd = cli(i);
      cmd.insert(cmd.end(), {"--scan", "--pattern", pattern});
      std::string out;
      if (run_command(cmd, 20'000ms, &out, err_path_) != 0) break;
      std::istringstream lines(out);
      for (std::string key; std::getline(lines, key);) {
        if (!key.empty()) keys.push_back(key);
      }
    }
    if (keys.empty()) continue;
    auto cmd = cli(i);
    cmd.push_back("DEL");
    cmd.insert(cmd.end(), keys.begin(), keys.end());
    run_command(cmd, 20'000ms, nullptr, err_path_);
  }
}

int RedisNodes::kill(int port) {
  return run_command({script_, "kill", state_, std::to_string(port)}, 60'000ms, nullptr, err_path_);
}

int RedisNodes::start(int port) {
  return run_command({script_, "start-one", state_, std::to_string(port)}, 60'000ms, nullptr, err_path_);
}

bool RedisNodes::freeze(int port) { return signal_server(port, SIGSTOP); }
bool RedisNodes::thaw(int port) { return signal_server(port, SIGCONT); }

bool RedisNodes::signal_server(int port, int sig) {
  std::ifstream in(state_ + "/" + std::to_string(port) + "/redis.pid");
  pid_t pid = 0;
  return (in >> pid) && pid > 1 && ::kill(pid, sig) == 0;
}

int RedisNodes::command(std::size_t node, const std::vector<std::string>& args, std::string* out) {
  auto cmd = cli(node);
  cmd.insert(cmd.end(), args.begin(), args.end());
  return run_command(cmd, 20'000ms, out, err_path_);
}

pid_t RedisNodes::start_as(std::size_t node, const std::string& user, const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {"redis-cli", "-h", hosts_[node], "-p", std::to_string(ports_[node]), "--user", user,
                                  "--pass", "-", "--no-auth-warning"};
  if (!db_.empty()) cmd.insert(cmd.end(), {"-n", db_});
  cmd.insert(cmd.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : cmd) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      dup2(null, STDIN_FILENO);
      dup2(null, STDOUT_FILENO);
    }
    const int err = ::open(err_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (err >= 0) dup2(err, STDERR_FILENO);
    execvp(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

namespace {

class NodeOutage : public Interruption {
 public:
  NodeOutage(RedisNodes& nodes, int count, NodeFault how, std::uint64_t seed)
      : nodes_(nodes), count_(count), how_(how), rng_(seed) {
    if (count_ < 1 || static_cast<std::size_t>(count_) >= nodes_.ports().size()) {
      throw UsageError("node outage: " + std::to_string(count_) + " of " + std::to_string(nodes_.ports().size()) +
                       " nodes (needs at least one left)");
    }
  }
  ~NodeOutage() override {
    try {
      end();
    } catch (const std::exception&) {  // a server that cannot start again: the run has failed already
    }
  }

  std::chrono::milliseconds hold(std::chrono::milliseconds ttl, double u) const override {
    return how_ == NodeFault::kRestart ? 0ms : Interruption::hold(ttl, u);
  }
  bool runs_its_course() const override { return true; }
  std::string begin() override {
    std::vector<int> ports = nodes_.ports();
    std::shuffle(ports.begin(), ports.end(), rng_);
    ports.resize(static_cast<std::size_t>(count_));
    std::string line = how_ == NodeFault::kRestart ? "node-restart" : how_ == NodeFault::kFreeze ? "node-stop" : "node-kill";
    for (int port : ports) {
      if (how_ == NodeFault::kFreeze) {
        if (!nodes_.freeze(port)) throw std::runtime_error("cannot SIGSTOP the server of port " + std::to_string(port));
      } else if (nodes_.kill(port) != 0) {
        throw std::runtime_error("redis.sh kill " + std::to_string(port) + " failed");
      }
      down_.push_back(port);
      line += " " + std::to_string(port);
    }
    return line;
  }
  void end() override {
    for (int port : down_) {
      if (how_ == NodeFault::kFreeze) {
        if (!nodes_.thaw(port)) throw std::runtime_error("cannot SIGCONT the server of port " + std::to_string(port));
      } else if (nodes_.start(port) != 0) {
        throw std::runtime_error("redis.sh start-one " + std::to_string(port) + " failed");
      }
    }
    down_.clear();
  }

 private:
  RedisNodes& nodes_;
  int count_;
  NodeFault how_;
  std::mt19937_64 rng_;
  std::vector<int> down_;
};

// Loops on the server's clock for ARGV[1] µs; returns how many times it read it.
constexpr const char* kBusyLoop =
    "local t = redis.call('TIME') local start, n = t[1] * 1000000 + t[2], 0 "
    "repeat t = redis.call('TIME') n = n + 1 until t[1] * 1000000 + t[2] - start >= tonumber(ARGV[1]) "
    "return n";

class BusyScript : public Interruption {
 public:
  BusyScript(RedisNodes& nodes, std::chrono::milliseconds ttl) : nodes_(nodes), ttl_(ttl) {
    std::string out;
    if (nodes_.command(0, {"CONFIG", "GET", "busy-reply-threshold"}, &out) == 0) {
      std::istringstream lines(out);
      std::string name;
      std::getline(lines, name);
      std::getline(lines, threshold_);
    }
    if (threshold_.empty()) threshold_ = "5000";
    if (nodes_.command(0, {"ACL", "SETUSER", kUser, "reset", "on", "nopass", "-@all", "+eval", "+time"}) != 0 ||
        nodes_.command(0, {"CONFIG", "SET", "busy-reply-threshold", std::to_string(ttl_.count())}) != 0) {
      throw std::runtime_error("busy-script: cannot make the ACL user or set busy-reply-threshold on node 0");
    }
  }
  ~BusyScript() override {
    try {
      end();
    } catch (const std::exception&) {
    }
    nodes_.command(0, {"CONFIG", "SET", "busy-reply-threshold", threshold_});
    nodes_.command(0, {"ACL", "DELUSER", kUser});
  }

  std::chrono::milliseconds hold(std::chrono::milliseconds ttl, double u) const override {
    loop_ = std::chrono::milliseconds(static_cast<std::int64_t>((2.5 + u) * static_cast<double>(ttl.count())));
    return loop_;
  }
  std::string begin() override {
    pid_ = nodes_.start_as(0, kUser, {"EVAL", kBusyLoop, "0", std::to_string(loop_.count() * 1000)});
    if (pid_ < 0) throw std::runtime_error("busy-script: cannot start redis-cli");
    return "busy-script on port " + std::to_string(nodes_.ports().front()) + " for " + std::to_string(loop_.count()) +
           " ms (BUSY after " + std::to_string(ttl_.count()) + " ms)";
  }
  // The script ends by itself; waits for it (bounded), and only then kills it, as an admin would.
  void end() override {
    if (pid_ <= 0) return;
    if (!wait_pid(pid_, loop_ + 10'000ms)) {
      nodes_.command(0, {"SCRIPT", "KILL"});
      ::kill(pid_, SIGKILL);
      wait_pid(pid_, 5'000ms);
    }
    pid_ = -1;
  }

 private:
  static constexpr const char* kUser = "dblock_fault_busy";
  RedisNodes& nodes_;
  const std::chrono::milliseconds ttl_;
  mutable std::chrono::milliseconds loop_{0};  // drawn by hold(), which the driver calls before begin()
  std::string threshold_;
  pid_t pid_ = -1;
};

}  // namespace

std::unique_ptr<Interruption> node_outage(RedisNodes& nodes, int count, NodeFault how, std::uint64_t seed) {
  return std::make_unique<NodeOutage>(nodes, count, how, seed);
}

std::unique_ptr<Interruption> busy_script(RedisNodes& nodes, std::chrono::milliseconds ttl) {
  return std::make_unique<BusyScript>(nodes, ttl);
}

}  // namespace dblock::fault
