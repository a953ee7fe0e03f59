// The Redis servers of a fault run (one, or Redlock's 3 or 5 masters), administered from outside
// the library: redis-cli for commands, scripts/servers/redis.sh to kill a server and start it
// again from its state directory. And the faults that use them: Redlock's node outages, a busy
// script.
//
// Not thread-safe: the driver's thread only.
#ifndef DBLOCK_TESTS_FAULT_REDIS_ADMIN_H_
#define DBLOCK_TESTS_FAULT_REDIS_ADMIN_H_

#include <sys/types.h>

#include <chrono>
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
  // SIGSTOP / SIGCONT of one server, by the pid in its pid file (a stuck host: connects are still
  // accepted by the kernel, nothing is answered). False when the pid cannot be read or signalled.
  bool freeze(int port);
  bool thaw(int port);
  // redis-cli (as the admin) on node `node` with `args`: its exit status; stdout into `out`.
  int command(std::size_t node, const std::vector<std::string>& args, std::string* out = nullptr);
  // Starts redis-cli on node `node` as ACL user `user` (any password: a nopass user) with `args`,
  // without waiting: its pid, or -1.
  pid_t start_as(std::size_t node, const std::string& user, const std::vector<std::string>& args);

 private:
  std::vector<std::string> cli(std::size_t node) const;
  bool signal_server(int port, int sig);

  std::vector<std::string> hosts_;
  std::vector<int> ports_;
  std::string user_;
  std::string db_;
  std::string script_;
  std::string state_;
  std::string err_path_;
};

// Redlock's node faults on `count` nodes drawn from `seed`:
//  * kKill: SIGKILLed, started again after 1.5-2.5 TTL, longer than any lease lives (node-kill:
//    the delayed restart Redlock prescribes for nodes that come back empty);
//  * kRestart: SIGKILLed and started again at once (node-restart: with AOF always they keep their
//    keys; without it, node-restart-empty: they come back empty);
//  * kFreeze: SIGSTOPped for 1.5-2.5 TTL, then SIGCONTed (node-stop: a stuck host or path).
// `nodes` must outlive the interruption.
enum class NodeFault { kKill, kRestart, kFreeze };
std::unique_ptr<Interruption> node_outage(RedisNodes& nodes, int count, NodeFault how, std::uint64_t seed);

// busy-script: a client without admin rights (an ACL user that may run EVAL and TIME, nothing
// else) runs a script on the first node that loops on TIME for (2.5-3.5) TTL. Redis runs one
// script at a time and nothing beside it: every other client's command waits, unanswered, until
// busy-reply-threshold (set to one TTL for the run, default 5 s) has passed, and is then answered
// BUSY until the script ends by itself (nobody sends SCRIPT KILL). end() waits for it to end.
// The user is made when the interruption is, and removed (and the threshold put back) with it.
std::unique_ptr<Interruption> busy_script(RedisNodes& nodes, std::chrono::milliseconds ttl);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_REDIS_ADMIN_H_
