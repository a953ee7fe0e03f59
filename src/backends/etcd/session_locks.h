// etcd session locks, as concurrency.Session and concurrency.Mutex make them: each held lock has an
// etcd lease of its own, kept alive while the handle lives, and its key "<prefix><name>/<lease id
// in hex>" in the etcd-mutex layout's line, so session locks, leases and `etcdctl lock` on one name
// exclude each other. No fence. The lock ends with its lease: release() and the handle's
// destruction revoke it; a process that stops keeping it alive loses it after the session TTL.
//
// Thread-safe; a handle is used by one thread at a time (its keep-alive runs on a thread of its
// own). Internal.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_SESSION_LOCKS_H_
#define DBLOCK_SRC_BACKENDS_ETCD_SESSION_LOCKS_H_

#include <chrono>
#include <memory>
#include <string>

#include "client.h"
#include "dblock/service/capabilities.h"

namespace dblock::etcd {

class EtcdSessionLocks final : public SessionLocks {
 public:
  // `client` outlives this and every handle it makes (the service owns all three).
  EtcdSessionLocks(Client& client, std::string prefix, std::chrono::seconds ttl)
      : client_(client), prefix_(std::move(prefix)), ttl_(ttl) {}

  // Grants a lease, puts the key if absent and, while an older key stands before it, waits for the
  // deletion of the one just ahead (a watch; the next read decides) until `wait` ends. Not
  // acquired: the lease is revoked, which deletes the key. Shared mode: UnsupportedError.
  std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                          std::chrono::milliseconds wait) override;

 private:
  Client& client_;
  const std::string prefix_;
  const std::chrono::seconds ttl_;
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_SESSION_LOCKS_H_
