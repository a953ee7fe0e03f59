// The members of a replicated lock service under a fault run (a ZooKeeper ensemble, an etcd
// cluster, or one standalone server of either), administered from outside the library through
// their scripts/servers/ script: find the leader, SIGKILL a member, start it again, restart every
// member keeping its data; and its pid and version for the report.
//
// Not thread-safe: the driver's thread only.
#ifndef DBLOCK_TESTS_FAULT_MEMBERS_H_
#define DBLOCK_TESTS_FAULT_MEMBERS_H_

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace dblock::fault {

class Members {
 public:
  // `admin_url`: the URL naming every member (a port of 0 is `default_port`). `script`, `state`:
  // the member script and the members' state directory, where each member's pid is in
  // <state>/<port>/`pid_file`. Commands' stderr goes to `err_path`.
  Members(const std::string& admin_url, int default_port, std::string script, std::string state, std::string pid_file,
          std::string err_path);
  virtual ~Members() = default;

  const std::vector<int>& ports() const { return ports_; }
  bool ensemble() const { return ports_.size() > 1; }
  // The leader's client port (standalone: its port); 0 when none answers. `script leader STATE`.
  int leader();
  // The server process's pid of the member on `port` (its pid file), 0 when none.
  pid_t pid(int port) const;
  // `script kill` (SIGKILL by pid) / `start-one` (back from its state directory, awaited until it
  // serves) / `restart` of every member (clean stop, start, data kept): the script's exit status.
  int kill(int port);
  int start(int port);
  int restart();
  // The first member's server version ("3.8.0", "3.4.23"), "" if it cannot be read.
  virtual std::string version() const = 0;

 protected:
  const std::string& err_path() const { return err_path_; }

 private:
  std::vector<int> ports_;
  std::string script_;
  std::string state_;
  std::string pid_file_;
  std::string err_path_;
};

// etcd members (scripts/servers/etcd.sh): the version from `etcdctl endpoint status`.
std::unique_ptr<Members> etcd_members(const std::string& admin_url, std::string script, std::string state,
                                      std::string err_path);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_MEMBERS_H_
