// ZooKeeper session locks: each held lock has a ZooKeeper session of its own, in which it is an
// EPHEMERAL_SEQUENTIAL node of the lock's container, named as Curator names its nodes (a fresh
// guid per lock). So leases, session locks and Curator's recipes on one name exclude each other.
// No fence. The lock ends with its session: release(), the handle's destruction, or the server
// expiring the session (a process that stops answering loses it after the session timeout).
//
// Thread-safe; a handle is used by one thread at a time. Internal.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_SESSION_LOCKS_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_SESSION_LOCKS_H_

#include <memory>
#include <string>

#include "dblock/service/capabilities.h"
#include "dblock/zookeeper/zookeeper.h"

namespace dblock::zookeeper {

class ZkSessionLocks final : public SessionLocks {
 public:
  // `root`: the lock containers' parent, as the service's (chroot + base).
  ZkSessionLocks(const Options& options, std::string root) : options_(options), root_(std::move(root)) {}

  // Opens a session (by the call's deadline, at most connect_timeout), creates the node and,
  // while it does not hold, waits for the node it waits for (an exists watch) until `wait` ends.
  // Not acquired: the session is closed, which deletes the node.
  std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                          std::chrono::milliseconds wait) override;

 private:
  Options options_;
  std::string root_;
};

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_SESSION_LOCKS_H_
