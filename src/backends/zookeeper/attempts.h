// What the ZooKeeper service knows about the nodes its attempts made, per attempt key
// "<container>/<prefix>" (one owner secret's nodes of one mode on one lock): a waiter's kept node,
// attempts running now, attempts whose create failed once it was sent (their node may exist:
// "uncertain" for the same secret's next attempt, "suspect" for the orphan sweep).
//
// Thread-safe. Its mutex is never held across a call to the server: the client's completion
// thread (the sweep) takes it too.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_ATTEMPTS_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_ATTEMPTS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "dblock/service/thread_annotations.h"
#include "session.h"

namespace dblock::zookeeper {

// A node of this session: its name in the container and its Stat.
using OwnNode = std::pair<std::string, NodeStat>;

class Attempts {
 public:
  // An attempt of `key` starts. Returns whether an earlier one failed once its create was sent.
  bool begin(const std::string& key);
  // The attempt's outcome is known (held, in line, or its node deleted): no longer uncertain.
  void settle(const std::string& key);
  // The attempt, on session `session`, ends, whatever happened. One that ended before settle()
  // (an error after its create may have been sent, or after it made its node) leaves a suspect:
  // its node may exist. Returns whether to sweep `key` now (a suspect no sweep has claimed, and no
  // other attempt of it runs): then it is claimed.
  bool end(const std::string& key, std::int64_t session);

  std::optional<OwnNode> waiting(const std::string& key);
  void set_waiting(const std::string& key, std::optional<OwnNode> node);
  // The waiters' nodes whose keys begin with `prefix` (one secret's, whatever its mode and
  // permits), with their keys.
  std::vector<std::pair<std::string, OwnNode>> waiting_under(const std::string& prefix);

  // The suspects of `session`, each marked as being swept (suspects of other sessions are dropped:
  // their nodes went with their sessions). A suspect being swept is not returned again.
  std::vector<std::string> to_sweep(std::int64_t session);
  // The sweep of `key` ended. kComplete forgets the suspect; kFailed (no connection) leaves it to
  // the next reconnect; kDeferred (an attempt of `key` ran) to that attempt's end. Returns whether
  // to sweep again now (deferred, and the attempt ended meanwhile): then it stays claimed.
  bool swept(const std::string& key, SweepOutcome outcome);
  // Whether the node `path` of `key`, of this session, is an orphan: no attempt of `key` runs now
  // (else nullopt: judge later), it is not a waiter's node and `held(path)` is false. For an
  // orphan, `doom(path)` runs before the lock is released, so that no attempt adopts it after.
  std::optional<bool> judge(const std::string& key, const std::string& path,
                            const std::function<bool(const std::string&)>& held,
                            const std::function<void(const std::string&)>& doom);

  // Whether any node of an attempt may exist: a waiter's kept node, or an attempt whose outcome
  // is not known (a suspect, or one unsettled now).
  bool any();

  // The session was replaced: every node of the old one is gone.
  void clear();

 private:
  service::Mutex mutex_;
  std::set<std::string> uncertain_ DBLOCK_GUARDED_BY(mutex_);
  std::map<std::string, int> running_ DBLOCK_GUARDED_BY(mutex_);  // key -> attempts running
  // key -> the session its attempt ended unsettled on
  std::map<std::string, std::int64_t> suspects_ DBLOCK_GUARDED_BY(mutex_);
  std::set<std::string> sweeping_ DBLOCK_GUARDED_BY(mutex_);
  std::map<std::string, OwnNode> waiting_ DBLOCK_GUARDED_BY(mutex_);
};

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_ATTEMPTS_H_
