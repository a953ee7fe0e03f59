// dblock/zookeeper/zookeeper.h — the ZooKeeper backend (the C client, libzookeeper_mt): options and
// factory.
//
// The lock for NAME is the container node "<base>/<escaped NAME>" (created on demand; the server
// deletes it once empty). Each acquisition is an EPHEMERAL_SEQUENTIAL child named as Apache
// Curator names its own: "_c_<guid>-__WRIT__<seq>" / "_c_<guid>-__READ__<seq>"
// (InterProcessReadWriteLock, layout "rw") or "_c_<guid>-lock-<seq>" (InterProcessMutex, layout
// "curator-mutex"). The guid is the owner digest (the first 128 bits of SHA-256 of the owner
// secret) written as a UUID; the node's data is "dblock:" + the holder string. The fence is the node's czxid.
// A lease lives as long as the manager's ZooKeeper session (one per service): granted_for is the
// session timeout the server negotiated.
//
// Nodes are created with the ACL world:anyone READ|WRITE|CREATE|DELETE (no ADMIN: no other client
// can change their ACL), or, with credentials (Options::digest), only for that digest identity
// (the server's "auth" scheme: CREATOR_ALL).
//
// Thread safety: a backend is used by one LockManager, from many threads; it synchronises its own
// session. No ZooKeeper client type appears here.
#ifndef DBLOCK_ZOOKEEPER_ZOOKEEPER_H_
#define DBLOCK_ZOOKEEPER_ZOOKEEPER_H_

#include <chrono>
#include <memory>
#include <string>

#include "dblock/service/lease_service.h"

namespace dblock {
struct Url;
struct ServiceContext;
namespace zookeeper {

// How the children of a lock's container are named (the Curator recipe dblock interoperates with).
enum class Layout {
  kReadWrite,     // "rw": InterProcessReadWriteLock's __WRIT__ / __READ__ nodes; shared leases
  kCuratorMutex,  // "curator-mutex": InterProcessMutex's lock- nodes; exclusive leases only
};

struct Options {
  // The client's connect string: "host:port[,host:port...]" (no chroot here).
  std::string hosts = "127.0.0.1:2181";
  // The session's chroot: "" or an absolute path ("/app"); every path below is under it.
  std::string chroot;
  // The parent of the lock containers, absolute. "" derives it from the manager's table prefix:
  // "/dblock/locks" for the default prefix "dblock_", "/dblock/<prefix>locks" for another.
  std::string base;
  Layout layout = Layout::kReadWrite;
  // The session timeout asked for (1 s .. 60 s); the server may grant another (it clamps to its
  // minSessionTimeout..maxSessionTimeout), which bounds every lease of this service and is how long
  // a dead holder's node outlives it. From a URL without session_timeout: the manager's default
  // TTL, clamped to 1 s .. 60 s (make_service(url, context)).
  std::chrono::milliseconds session_timeout{10'000};
  // How long one attempt to open a session may take (shortened to the call's deadline when it
  // has one). An open that is part of a wait (open(url, options, deadline)) tries again until the
  // wait's deadline: no server reachable and no quorum are retryable ConnectionErrors. Also the
  // most a service's destruction waits for its session to reconnect, when nodes of the session
  // may be left on the server (closing a connected session deletes them at once).
  std::chrono::milliseconds connect_timeout{5'000};
  // "user:password" for ZooKeeper's digest authentication ("": none). With it, every node the
  // service creates (lock nodes, containers, the audit records and windows, their parents) is
  // readable and writable by that identity only (and the server's superuser); without it, by any
  // client, but no client can change a node's ACL. Sent to the server in clear text, as digest
  // authentication is.
  std::string digest;
  // force_release also evicts holders that are not dblock's (their node's data lacks dblock's
  // tag: Apache Curator's, say). Off: such a holder makes force_release a UsageError naming it.
  bool force_foreign = false;
};

// Opens the session (waiting for it until the call's deadline). Throws UsageError (bad options,
// naming the option) and ConnectionError (no server answered by the deadline).
std::unique_ptr<LeaseService> make_service(const Options& options, const std::string& table_prefix);

// From a parsed zookeeper:// URL:
//   zookeeper://[user:password@]h1:p1,h2:p2/chroot?session_timeout=MS&connect_timeout=S&base=/path
//     &layout=rw|curator-mutex&force_foreign=0|1
// (port 2181 when not given; session_timeout in milliseconds, connect_timeout in seconds; user and
// password: Options::digest). base defaults as Options::base says, from the context's table
// prefix; without session_timeout the session asks for the context's default TTL (1 s .. 60 s).
std::unique_ptr<LeaseService> make_service(const Url& url, const ServiceContext& context);
// The same with a context of `table_prefix` and a default TTL of 10 s (Options::session_timeout).
std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix);

}  // namespace zookeeper
}  // namespace dblock

#endif  // DBLOCK_ZOOKEEPER_ZOOKEEPER_H_
