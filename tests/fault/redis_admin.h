// The Redis servers of a fault run (one, or Redlock's 3 or 5 masters), administered from outside
// the library: redis-cli for commands, scripts/servers/redis.sh to kill a server and start it
// again from its state directory. And the Redlock fault that uses them: node outages.
//
// Not thread-safe: the driver's thread only.
#ifndef DBLOCK_TESTS_FAULT_REDIS_ADMIN_H_
#define DBLOCK_TESTS_FAULT_REDIS_ADMIN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "interruptions.h"

namespace dblock::fault {

class RedisNodes {
 public:
  // `admin_url`: redis:// or redlock:// (credentials reach redis-cli through REDISCLI_AUTH, never
  // its command line). `script`, `state`: redis.sh and the servers' state directory (may be empty
  // when nothing is killed or started). Commands' stderr goes to `err_path`.
  RedisNodes(const std::string& admin_url, std::string script, std::string state, std::string err_path);

  const std::vector<int>& ports() const { return ports_; }
  // CLIENT KILL TYPE `type` on every node (the redis-cli sending it is skipped): connections closed.
  int client_kill(const std::string& type);
  // The first node's redis_version, "" if it cannot be read.
  std::string version();
  // Deletes every key named `prefix`* or {`prefix`* on every node reachable.
  void delete_keys(const std::string& prefix);
  // redis.sh kill (SIGKILL by pid) / start-one (the same server back from its state directory):
  // the script's exit status.
  int kill(int port);
  int start(int port);

 private:
  std::vector<std::string> cli(std::size_t node) const;

  std::vector<std::string> hosts_;
  std::vector<int> ports_;
  std::string user_;
  std::string db_;
  std::string script_;
  std::string state_;
  std::string err_path_;
};

// Redlock's node faults: begin() SIGKILLs `count` nodes drawn from `seed`, end() starts them again.
// `immediate`: back at once (node-restart: safe only when the nodes keep their keys, AOF always);
// else down for 1.5-2.5 TTL, longer than any lease lives (node-kill: the delayed restart that
// Redlock prescribes for nodes that come back empty). `nodes` must outlive the interruption.
std::unique_ptr<Interruption> node_outage(RedisNodes& nodes, int count, bool immediate, std::uint64_t seed);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_REDIS_ADMIN_H_
