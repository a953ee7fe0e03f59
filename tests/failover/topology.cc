#include "topology.h"

#include <sys/wait.h>

#include <chrono>
#include <optional>
#include <stdexcept>

#include "process.h"

namespace dblock::testing {

namespace {

bool postgres(Topology::Kind kind) { return kind != Topology::Kind::kMariaDb; }

// Runs argv to its end (bounded by `timeout`); its stdout lines. Throws when it failed.
std::vector<std::string> run(const std::vector<std::string>& argv, std::chrono::seconds timeout) {
  Child child(argv);
  std::vector<std::string> lines;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    std::optional<std::string> line = child.read_line(left);
    if (!line) break;  // EOF (or the deadline)
    lines.push_back(*line);
  }
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
  const std::optional<int> status = child.wait(std::max(left, std::chrono::milliseconds(1)));
  if (!status || !WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
    std::string command;
    for (const auto& a : argv) command += a + " ";
    throw std::runtime_error("failed or timed out: " + command);
  }
  return lines;
}

std::string script_path(Topology::Kind kind) {
  return std::string(DBLOCK_SOURCE_DIR) + "/scripts/servers/" + (postgres(kind) ? "postgresql.sh" : "mariadb.sh");
}

}  // namespace

Topology::Topology(Kind kind, const std::string& state, int port_a, int port_b) : kind_(kind), state_(state) {
  std::vector<std::string> args{"start-pair", state_, std::to_string(port_a), std::to_string(port_b)};
  if (postgres(kind_)) args.push_back(kind_ == Kind::kPostgresSync ? "sync" : "async");
  try {
    script(args);
  } catch (...) {
    try {
      script({"stop", state_});  // what started before the failure
    } catch (...) {
    }
    throw;
  }
}

Topology::~Topology() {
  try {
    script({"stop", state_});
  } catch (...) {
    // the next start-pair stops what is left by its pid files
  }
}

std::string Topology::url() const {
  const std::string a = std::to_string(primary_port()), b = std::to_string(standby_port());
  return postgres(kind_) ? "postgresql://postgres@127.0.0.1:" + a + ",127.0.0.1:" + b + "/postgres"
                         : "mysql://dblock:dblock-pw@127.0.0.1:" + a + ",127.0.0.1:" + b + "/dblock_test";
}

int Topology::primary_port() const { return std::stoi(script({"primary-port", state_}).at(0)); }
int Topology::standby_port() const { return std::stoi(script({"standby-port", state_}).at(0)); }

void Topology::lag() { script({"lag", state_}); }

std::vector<std::string> Topology::failover() { return script({"failover", state_}); }

std::vector<std::string> Topology::admin(int port, const std::string& sql) const {
  if (postgres(kind_)) {
    return run({"psql", "-X", "-q", "-At", "-h", "127.0.0.1", "-p", std::to_string(port), "-U", "postgres", "-d",
                "postgres", "-v", "ON_ERROR_STOP=1", "-c", sql},
               std::chrono::seconds(30));
  }
  return run({"mariadb", "-h127.0.0.1", "-P" + std::to_string(port), "-uroot", "-N", "-B", "dblock_test", "-e", sql},
             std::chrono::seconds(30));
}

std::vector<std::string> Topology::script(const std::vector<std::string>& args) const {
  std::vector<std::string> argv{script_path(kind_)};
  argv.insert(argv.end(), args.begin(), args.end());
  return run(argv, std::chrono::seconds(180));
}

}  // namespace dblock::testing
