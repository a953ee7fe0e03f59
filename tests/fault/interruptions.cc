#include "interruptions.h"

#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

#include "dblock/dblock.h"
#include "dblock/url.h"
#include "members.h"
#include "relay.h"

namespace dblock::fault {

using namespace std::chrono_literals;
using std::chrono::milliseconds;

std::chrono::milliseconds Interruption::hold(milliseconds ttl, double u) const {
  return milliseconds(static_cast<std::int64_t>((1.5 + u) * static_cast<double>(ttl.count())));
}

namespace {

// A relay in front of the server `url` names first, whose address the clients use instead.
class Relayed : public Interruption {
 public:
  Relayed(const std::string& url, const std::string& relay_path, std::string fault) : fault_(std::move(fault)) {
    const Url parsed = parse_url(url);
    if (parsed.hosts.empty() || parsed.hosts[0].port == 0) throw UsageError(fault_ + " needs a URL with host:port");
    server_at_ = parsed.hosts[0].host + ":" + std::to_string(parsed.hosts[0].port);
    relay_ = std::make_unique<dblock::testing::TcpRelay>(relay_path, parsed.hosts[0].port);
    relay_at_ = relay_->address();
  }
  std::string client_url(const std::string& url) const override {
    const std::size_t at = url.find(server_at_);
    if (at == std::string::npos) throw UsageError(fault_ + ": cannot find " + server_at_ + " in " + url);
    return url.substr(0, at) + relay_at_ + url.substr(at + server_at_.size());
  }

 protected:
  std::unique_ptr<dblock::testing::TcpRelay> relay_;  // killed when destroyed
  std::string fault_, server_at_, relay_at_;
};

class RelayStall : public Relayed {
 public:
  RelayStall(const std::string& url, const std::string& relay_path) : Relayed(url, relay_path, "relay-stall") {}
  milliseconds hold(milliseconds ttl, double u) const override {
    // Longer than a client's wait (3 TTL) plus a call's least time (2 s) plus the oracle's slack
    // (1 s): a call stuck until the path comes back shows as overdue, whatever it was doing.
    return 3 * ttl + milliseconds(4000 + static_cast<std::int64_t>(1000 * u));
  }
  bool through_the_end() const override { return true; }
  std::string begin() override {
    relay_->pause();
    paused_ = true;
    return "relay-pause " + relay_at_;
  }
  void end() override {
    if (!paused_) return;
    relay_->resume();
    paused_ = false;
  }

 private:
  bool paused_ = false;
};

class ReplyCut : public Relayed {
 public:
  ReplyCut(const std::string& url, const std::string& relay_path) : Relayed(url, relay_path, "reply-cut") {}
  milliseconds hold(milliseconds, double u) const override {
    // Long enough for the contenders' requests of the moment (creates, deletes, reads) to reach
    // the server, short of a client's own timeouts.
    return milliseconds(20 + static_cast<std::int64_t>(180 * u));
  }
  // Past a release's least time (2 s), so that a holder's last release goes in doubt and its
  // manager closes while the path is still stalled; short of a closing manager's wait for its
  // session to reconnect (connect_timeout, 5 s).
  milliseconds stall_at_the_stop() const override { return milliseconds(3000); }
  std::string begin() override {
    relay_->mute_replies();
    muted_ = true;
    return "reply-mute " + relay_at_;
  }
  void cut_off() override {
    relay_->cut_and_pause();  // the replies are lost, and no connection gets through for a while
    muted_ = false;
    paused_ = true;
  }
  void end() override {
    if (paused_) relay_->resume();
    if (muted_) relay_->cut();  // what the server answered meanwhile is lost with the connections
    muted_ = paused_ = false;
  }

 private:
  bool muted_ = false;
  bool paused_ = false;
};

class ConnectionsFull : public Interruption {
 public:
  ConnectionsFull(std::string admin_url, std::string table_prefix, ClientHooks clients)
      : admin_url_(std::move(admin_url)), table_prefix_(std::move(table_prefix)), clients_(std::move(clients)) {}
  std::string begin() override {
    // Full first; then, with the clients stopped, their sessions go and their slots are taken,
    // so that they meet a full server when they go on.
    fill();
    for (int i = 0; i < 2 && !held_.empty(); ++i) held_.pop_back();  // room for the session killer
    clients_.stop_and_disconnect();
    const std::string refused = fill(500ms);  // sessions end a little after they are told to
    clients_.resume();
    return "conn-full " + std::to_string(held_.size()) + " connections; refused: " + refused;
  }
  void end() override {
    // Closing a manager can take tens of milliseconds: close them 16 at a time.
    constexpr std::size_t kClosers = 16;
    std::vector<std::vector<std::unique_ptr<LockManager>>> parts(kClosers);
    for (std::size_t i = 0; i < held_.size(); ++i) parts[i % kClosers].push_back(std::move(held_[i]));
    held_.clear();
    std::vector<std::thread> closers;
    for (auto& part : parts) closers.emplace_back([part = std::move(part)]() mutable { part.clear(); });
    for (auto& t : closers) t.join();
  }

 private:
  // Opens managers until the server refuses one and `patience` has passed (or up to a cap far
  // above any test server's max_connections); returns the last refusal.
  std::string fill(milliseconds patience = 0ms) {
    const auto until = std::chrono::steady_clock::now() + patience;
    std::string refused = "none (stopped at the cap)";
    ManagerOptions options;
    options.table_prefix = table_prefix_;
    options.reaper = false;
    options.auto_migrate = false;  // the run's tables exist: each open is one connection and a version check
    constexpr std::size_t kCap = 2000;
    while (held_.size() < kCap) {
      try {
        held_.push_back(dblock::open(admin_url_, options));
      } catch (const ConnectionError& e) {
        refused = e.what();
        std::replace(refused.begin(), refused.end(), '\n', ' ');
        if (std::chrono::steady_clock::now() >= until) break;
        std::this_thread::sleep_for(10ms);  // polls for slots being freed, bounded by `patience`
      }
    }
    return refused;
  }
  std::string admin_url_, table_prefix_;
  ClientHooks clients_;
  std::vector<std::unique_ptr<LockManager>> held_;
};

class DiskFull : public Interruption {
 public:
  explicit DiskFull(std::string dir) : dir_(std::move(dir)) {
    if (::mount("tmpfs", dir_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0700") != 0) {
      throw std::runtime_error("disk-full: cannot mount a tmpfs on " + dir_ + " (" + std::strerror(errno) +
                               "; the fault needs root)");
    }
  }
  ~DiskFull() override {
    end();
    ::umount2(dir_.c_str(), MNT_DETACH);
  }
  std::string begin() override {
    const std::string path = dir_ + "/filler";
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) throw std::runtime_error("disk-full: cannot create " + path);
    static const std::vector<char> block(64 * 1024, 'x');
    std::size_t written = 0;
    for (std::size_t i = 0; i < 1024; ++i) {  // 64 MiB at most: more than the tmpfs holds
      const ssize_t n = ::write(fd, block.data(), block.size());
      if (n <= 0) break;
      written += static_cast<std::size_t>(n);
    }
    for (std::size_t chunk = 4096; chunk > 0; chunk /= 2) {  // the last pages too
      while (::write(fd, block.data(), chunk) > 0) written += chunk;
    }
    ::close(fd);
    filled_ = true;
    return "disk-full " + std::to_string(written / 1024) + " KiB written";
  }
  void end() override {
    if (!filled_) return;
    ::unlink((dir_ + "/filler").c_str());
    filled_ = false;
  }

 private:
  std::string dir_;
  bool filled_ = false;
};

}  // namespace

namespace {

class QuorumLoss : public Interruption {
 public:
  explicit QuorumLoss(Members& members) : members_(members) {
    if (members_.ports().size() != 3) throw UsageError("quorum-loss needs a cluster of three members");
  }
  ~QuorumLoss() override {
    try {
      end();
    } catch (const std::exception&) {
      // A member that did not come back: the run has failed already, and the fixture stops it.
    }
  }
  std::string begin() override {
    const int leader = members_.leader();
    const std::vector<int>& ports = members_.ports();
    const auto at = std::find(ports.begin(), ports.end(), leader);
    const std::size_t first = at == ports.end() ? 0 : static_cast<std::size_t>(at - ports.begin());
    for (int port : {ports[first], ports[(first + 1) % ports.size()]}) {
      if (members_.kill(port) != 0) throw std::runtime_error("quorum-loss: killing the member on " + std::to_string(port) + " failed");
      down_.push_back(port);
    }
    return "quorum-loss: killed " + std::to_string(down_[0]) + " (leader " + std::to_string(leader) + ") and " +
           std::to_string(down_[1]);
  }
  // Starts every member it killed, each tried whatever the others did; throws once after.
  void end() override {
    std::string failed;
    for (int port : down_) {
      if (members_.start(port) != 0) failed += " " + std::to_string(port);
    }
    down_.clear();
    if (!failed.empty()) throw std::runtime_error("quorum-loss: members that did not start again:" + failed);
  }

 private:
  Members& members_;
  std::vector<int> down_;
};

}  // namespace

std::unique_ptr<Interruption> quorum_loss(Members& members) { return std::make_unique<QuorumLoss>(members); }

std::unique_ptr<Interruption> relay_stall(const std::string& url, const std::string& relay_path) {
  return std::make_unique<RelayStall>(url, relay_path);
}

std::unique_ptr<Interruption> reply_cut(const std::string& url, const std::string& relay_path) {
  return std::make_unique<ReplyCut>(url, relay_path);
}

std::unique_ptr<Interruption> connections_full(const std::string& admin_url, const std::string& table_prefix,
                                               ClientHooks clients) {
  return std::make_unique<ConnectionsFull>(admin_url, table_prefix, std::move(clients));
}

std::unique_ptr<Interruption> disk_full(const std::string& dir) { return std::make_unique<DiskFull>(dir); }

}  // namespace dblock::fault
