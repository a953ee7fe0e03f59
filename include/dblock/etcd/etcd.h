// dblock/etcd/etcd.h — the etcd backend (etcd's v3 API over gRPC): options and factory.
//
// Layouts (layout= in the URL):
//   etcd-mutex (the default): etcd's own concurrency.Mutex, the one `etcdctl lock NAME` uses. The
//     lock NAME is the key range "<prefix>NAME/"; every contender puts a key "<prefix>NAME/<lease
//     id in hex>" bound to an etcd lease of its own, and the contender whose key has the lowest
//     create revision holds the lock; a waiter keeps its key (FIFO) and watches the one ahead.
//     With prefix "" dblock and `etcdctl lock NAME` contend for the same lock (and dblock's
//     Election and `etcdctl elect NAME`). Readers of a shared lease and permits of a semaphore
//     stand in the same line (a reader holds when only readers are ahead of it, fewer than its
//     permits); acquire_all puts every name's key in one transaction.
//   python-etcd3: python-etcd3's Lock. The lock NAME is the one key "<prefix>NAME" (prefix
//     "/locks/", python-etcd3's, unless the URL names one), created if absent and bound to the
//     holder's lease; waiters watch for its deletion and try again (no line).
// Either way the fence is the holding key's create revision: etcd's revision only grows, across
// leader elections and restarts, and is never reused.
//
// Leases: the acquisitions' keys are bound to etcd leases the backend shares among them, one per
// TTL in whole seconds (etcd counts a lease on the leader, at least what was asked), kept alive by
// the engine's renewals; a key and its lock go with its lease when that ends. etcd has no clock a
// client can read: a lease's end is not an instant on the service's clock (LeaseBound::kSession),
// and list() reports none.
//
// Waiting: a waiter keeps its key (its place in line, FIFO by create revision) and watches the
// key just ahead of it; a watch event is a hint, the next range read decides.
//
// Scheduled jobs (hold_at_least): a run released inside its window keeps its key, bound to an etcd
// lease of the window's rest, counted from the answer that granted the run (both layouts).
//
// Thread safety: a backend is used by one LockManager, from many threads; it synchronises its own
// channels. No gRPC or protobuf type appears here.
#ifndef DBLOCK_ETCD_ETCD_H_
#define DBLOCK_ETCD_ETCD_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dblock/service/lease_service.h"

namespace dblock {
struct Url;
namespace etcd {

struct Options {
  enum class Layout { kMutex, kPythonEtcd3 };
  struct Endpoint {
    std::string host = "127.0.0.1";
    int port = 2379;
  };
  // Members of one cluster: any reachable one serves (calls move to the next when one is down).
  std::vector<Endpoint> endpoints{Endpoint{}};
  std::string user;      // etcd auth; empty: none
  std::string password;  // never printed
  // Prepended to every lock name: the lock NAME is the key range "<prefix>NAME/". At most 128
  // bytes without control characters; "" is etcdctl's and concurrency.Mutex's own namespace.
  std::string prefix = "dblock/";
  std::chrono::milliseconds connect_timeout{5'000};  // reaching a member, shortened to the call's deadline
  // A session lock's own etcd lease (etcd-mutex layout): kept alive while it is held; a process
  // that stops keeping it alive loses the lock this long after (concurrency.Session's TTL).
  std::chrono::seconds session_ttl{10};
  Layout layout = Layout::kMutex;
  // TLS to the members (served with etcd's --cert-file), as etcdctl's --cacert, --cert, --key:
  // off unless `enabled`. The members' certificates are checked against `ca_file`'s CAs (PEM), or
  // gRPC's default roots where it is empty; `cert_file` and `key_file` (PEM, both or neither)
  // are the client's certificate, for members that ask for one (--client-cert-auth). The files
  // are read when the service is made; the key's content is never printed.
  struct Tls {
    bool enabled = false;
    std::string ca_file;
    std::string cert_file;
    std::string key_file;
  };
  Tls tls;
};

// Connects to a member (and authenticates). Throws ConnectionError (no member reachable, not
// etcd), PermissionError (authentication refused), UsageError (bad options).
std::unique_ptr<LeaseService> make_service(const Options& options);

// From a parsed etcd:// URL: etcd://[user:password@]h1:2379,h2:2379/<prefix>?connect_timeout=S
// &session_ttl=S&layout=etcd-mutex|python-etcd3&tls=1&cacert=PATH&cert=PATH&key=PATH. The URL's
// path ("locks" is "locks/") or prefix= is the prefix; where neither is given, the manager's table
// prefix (etcd-mutex) or "/locks/" (python-etcd3). cacert=, cert= or key= turn TLS on as tls=1 does.
std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix);

}  // namespace etcd
}  // namespace dblock

#endif  // DBLOCK_ETCD_ETCD_H_
