// dblock/redis/redis.h — the Redis backend (hiredis): options and factory.
//
// The lock for NAME is the key "<prefix>NAME", a hash (mode, owner digest, holder, fence, times,
// renewals; one field per reader of a shared lease) that expires on the server's clock. Beside it,
// in the same cluster slot, "{<prefix>NAME}:fence" (the fence counter, never deleted),
// "{<prefix>NAME}:q" and ":qi" (the waiters' line) and "{<prefix>NAME}:latch" (recent releases, so
// that a release retried after a lost reply reports the true outcome). Every state change is one
// Lua script that reads the server's TIME; owner secrets are stored as SHA-1 digests.
//
// Mixed fleets: with prefix "" the key is exactly NAME, the key redis-py's Lock, node-redlock or
// redsync use for NAME with `SET NAME token NX PX ttl`. A string value there is a live holder until
// its PX ends: dblock waits for it and never overwrites or deletes it, except by a recorded
// force-release; their `SET NX` fails while dblock holds the hash.
//
// Waiting: one subscriber connection per manager on the channel "{<prefix>}:release"; a release
// hands the lease to the first waiter in line and publishes the grant, which the waiter confirms
// with a read of the hash before it counts (anyone who can PUBLISH can forge one).
//
// Server requirements: Redis >= 7.0 as a master with maxmemory-policy noeviction (checked at
// open). Persistence decides what a restart keeps: README, "Redis".
//
// Thread safety: a backend is used by one LockManager, from many threads; it synchronises its own
// connections. No hiredis type appears here.
#ifndef DBLOCK_REDIS_REDIS_H_
#define DBLOCK_REDIS_REDIS_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dblock/service/lease_service.h"

namespace dblock {
struct Url;
namespace redis {

struct Options {
  std::string host = "127.0.0.1";
  int port = 6379;
  std::string user;      // ACL user; empty: the password alone (AUTH password), or none
  std::string password;  // never printed
  int database = 0;      // SELECT; 0-65535 (the server's `databases` setting decides how many exist)
  // Prepended to every lock name to make its key. At most 128 bytes without control characters or
  // braces; "" puts dblock's keys where single-key clients keep theirs (see above).
  std::string prefix = "dblock_";
  std::chrono::milliseconds connect_timeout{5'000};  // each connect, shortened to the call's deadline
  // Wake waiters by pub/sub, on one connection per manager besides the pool. Default true; with
  // false waiters poll (ManagerOptions::max_poll).
  bool listen = true;
};

// Connects and checks the server (a master, maxmemory-policy noeviction). Throws ConnectionError
// (unreachable, wrong password), PermissionError (an ACL forbids a command dblock needs),
// UsageError (bad options, an evicting policy, a replica).
std::unique_ptr<LeaseService> make_service(const Options& options);

// From a parsed redis:// URL: redis://[user:password@]host[:port][/db]?prefix=...&connect_timeout=S
// &listen=0. The prefix defaults to `table_prefix`.
std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix);

// Redlock over 3 or 5 independent masters (README, "Redlock"): `nodes` differ in host, port,
// credentials and database; prefix, connect_timeout and listen are the first node's. Exclusive
// leases only. Throws as make_service(), for any node, and UsageError for another number of nodes.
std::unique_ptr<LeaseService> make_redlock_service(const std::vector<Options>& nodes);

// From a parsed redlock:// URL: redlock://[user:password@]h1:p1,h2:p2,h3:p3[/db]?prefix=...
// (3 or 5 hosts; the credentials and database apply to every node).
std::unique_ptr<LeaseService> make_redlock_service(const Url& url, const std::string& table_prefix);

}  // namespace redis
}  // namespace dblock

#endif  // DBLOCK_REDIS_REDIS_H_
