#include "redis_admin.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
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

namespace {

class NodeOutage : public Interruption {
 public:
  NodeOutage(RedisNodes& nodes, int count, bool immediate, std::uint64_t seed)
      : nodes_(nodes), count_(count), immediate_(immediate), rng_(seed) {
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
    return immediate_ ? 0ms : Interruption::hold(ttl, u);
  }
  bool runs_its_course() const override { return true; }
  std::string begin() override {
    std::vector<int> ports = nodes_.ports();
    std::shuffle(ports.begin(), ports.end(), rng_);
    ports.resize(static_cast<std::size_t>(count_));
    std::string line = immediate_ ? "node-restart" : "node-kill";
    for (int port : ports) {
      if (nodes_.kill(port) != 0) throw std::runtime_error("redis.sh kill " + std::to_string(port) + " failed");
      down_.push_back(port);
      line += " " + std::to_string(port);
    }
    return line;
  }
  void end() override {
    for (int port : down_) {
      if (nodes_.start(port) != 0) throw std::runtime_error("redis.sh start-one " + std::to_string(port) + " failed");
    }
    down_.clear();
  }

 private:
  RedisNodes& nodes_;
  int count_;
  bool immediate_;
  std::mt19937_64 rng_;
  std::vector<int> down_;
};

}  // namespace

std::unique_ptr<Interruption> node_outage(RedisNodes& nodes, int count, bool immediate, std::uint64_t seed) {
  return std::make_unique<NodeOutage>(nodes, count, immediate, seed);
}

}  // namespace dblock::fault
