// dblock/etcd/guard.h — the guard on etcd: the application's own writes to keys in the same etcd,
// committed in one transaction only while a lease is held with its fence.
//
//   auto locks = dblock::open("etcd://10.0.0.1:2379/app");
//   auto lease = locks->acquire("orders", std::chrono::seconds(10));
//   dblock::etcd::commit_guarded(*locks, *lease, {dblock::etcd::put("config/orders-next", "42")});
//
// The transaction compares the lease's key (held_key()) with the revision it was made at, which
// is the lease's fence, and writes only if they match: etcd commits the writes only while that key
// exists as it was made then. A release, a force-release or the end of the key's etcd lease
// deletes the key, and no key is ever made again at a past revision, so a holder that lost its
// lease writes nothing. (A scheduled job's run released inside its window leaves its key, rebound
// to the window's etcd lease, until the window ends: nobody else holds the name meanwhile, and an
// application's own compare still passes; commit_guarded() refuses a released lease at once.) An application with an etcd client of its own writes the same compare:
// `If(create_revision(held_key(...)) == lease.fence())`, then its puts and deletes.
//
// Thread safety: as the manager's own calls. Each call is bounded by the lease's safe-until (at
// least 2 s), as the SQL services' run_guarded is.
#ifndef DBLOCK_ETCD_GUARD_H_
#define DBLOCK_ETCD_GUARD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dblock/lease.h"
#include "dblock/lock_manager.h"

namespace dblock::etcd {

// One write of a guarded commit: a put of `value` at `key`, or, without a value, a delete of `key`.
struct Write {
  std::string key;
  std::optional<std::string> value;
};
inline Write put(std::string key, std::string value) { return Write{std::move(key), std::move(value)}; }
inline Write erase(std::string key) { return Write{std::move(key), std::nullopt}; }

// Commits `writes` in one etcd transaction that succeeds only if `lease`'s key is still the one
// made at its fence. Returns the revision etcd committed them at. The service decides, not the
// local lost() flag.
// Throws:
//   LeaseLostError   the lease's key is gone or was made again, or this manager holds no key for
//                    it (a released lease): nothing was written
//   UsageError       an empty Lease handle, no writes, an empty key, a key under the service's
//                    key prefix (where the locks' keys and dblock's audit records are; with the
//                    prefix "", etcdctl's namespace, a key of the lock's own: its line
//                    "NAME/..." or python-etcd3's key), or more writes than the
//                    member takes in one transaction (etcd's --max-txn-ops, 128 by default)
//   UnsupportedError `manager` is not on etcd
//   PermissionError  the user's role may not write one of the keys
//   ConnectionError  no member answered by the deadline: the writes may or may not have been
//                    committed (read them back to know)
// REQUIRES: `lease` was acquired from `manager`.
std::int64_t commit_guarded(LockManager& manager, const Lease& lease, const std::vector<Write>& writes);

// The key `lease` holds its lock with on etcd (the one commit_guarded() compares). Throws
// LeaseLostError when `manager` holds no key for it at its fence, UsageError and UnsupportedError
// as commit_guarded().
std::string held_key(LockManager& manager, const Lease& lease);

}  // namespace dblock::etcd

#endif  // DBLOCK_ETCD_GUARD_H_
