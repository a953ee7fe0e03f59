#include "members.h"

#include <cstdlib>
#include <fstream>

#include "commands.h"
#include "dblock/errors.h"
#include "dblock/url.h"

namespace dblock::fault {

using namespace std::chrono_literals;

Members::Members(const std::string& admin_url, int default_port, std::string script, std::string state,
                 std::string pid_file, std::string err_path)
    : script_(std::move(script)), state_(std::move(state)), pid_file_(std::move(pid_file)), err_path_(std::move(err_path)) {
  for (const auto& h : parse_url(admin_url).hosts) ports_.push_back(h.port == 0 ? default_port : h.port);
  if (ports_.empty()) throw UsageError("fault harness: the URL names no server");
}

int Members::leader() {
  std::string out;
  if (run_command({script_, "leader", state_}, 20'000ms, &out, err_path_) != 0) return 0;
  return std::atoi(out.c_str());
}

pid_t Members::pid(int port) const {
  std::ifstream f(state_ + "/" + std::to_string(port) + "/" + pid_file_);
  long pid = 0;
  if (!(f >> pid) || pid <= 1) return 0;
  return static_cast<pid_t>(pid);
}

int Members::kill(int port) {
  return run_command({script_, "kill", state_, std::to_string(port)}, 30'000ms, nullptr, err_path_);
}

int Members::start(int port) {
  return run_command({script_, "start-one", state_, std::to_string(port)}, 60'000ms, nullptr, err_path_);
}

int Members::restart() { return run_command({script_, "restart", state_}, 90'000ms, nullptr, err_path_); }

namespace {

class EtcdMembers : public Members {
 public:
  using Members::Members;
  std::string version() const override {
    std::string out;
    const std::string at = "127.0.0.1:" + std::to_string(ports().front());
    if (run_command({"etcdctl", "--endpoints", at, "--command-timeout", "2s", "endpoint", "status", "-w", "fields"},
                    10'000ms, &out, err_path()) != 0) {
      return "";
    }
    const std::string key = "\"Version\" : \"";
    const auto from = out.find(key);
    if (from == std::string::npos) return "";
    const auto begin = from + key.size();
    return out.substr(begin, out.find('"', begin) - begin);
  }
};

}  // namespace

std::unique_ptr<Members> etcd_members(const std::string& admin_url, std::string script, std::string state,
                                      std::string err_path) {
  return std::make_unique<EtcdMembers>(admin_url, 2379, std::move(script), std::move(state), "etcd.pid",
                                       std::move(err_path));
}

}  // namespace dblock::fault
