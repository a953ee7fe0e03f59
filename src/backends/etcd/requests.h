// The etcd requests and values both layouts build. Internal.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_REQUESTS_H_
#define DBLOCK_SRC_BACKENDS_ETCD_REQUESTS_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "dblock/service/lease_service.h"
#include "etcd/etcdserver/etcdserverpb/rpc.pb.h"

namespace dblock::etcd {

// Every key that begins with `prefix` ("": every key).
void whole_prefix(etcdserverpb::RangeRequest& r, const std::string& prefix);
// The oldest (ASCEND) or newest (DESCEND) key under `prefix` by create revision.
etcdserverpb::RangeRequest first_by_creation(const std::string& prefix, etcdserverpb::RangeRequest::SortOrder order);
// "`key` was created at `revision`" (0: it does not exist).
etcdserverpb::Compare created_at(const std::string& key, std::int64_t revision);
// "`key` is bound to `lease`".
etcdserverpb::Compare leased_by(const std::string& key, std::int64_t lease);
// What a dblock contender's key holds: the digest of its owner secret (the first 128 bits of
// SHA-256 of its 16 bytes, in hex: a reader of the keys learns no secret), then for a shared
// acquisition "/" and its permits (0: a reader of a read-write lock), a space, the holder.
std::string contender_value(const OwnerSecret& secret, std::string_view holder, LockMode mode = LockMode::kExclusive,
                            int permits = 0);
// The value of a scheduled job's key once its run was released inside the window: no owner's
// digest matches it, and `list` shows `holder` as the holder of the window.
std::string window_value(std::string_view holder);
bool is_window_value(const std::string& value);
// What a key's value says of its contender. Another client's key is exclusive.
struct ContenderView {
  bool dblock = false;
  bool shared = false;
  int permits = 0;     // shared only
  std::string holder;  // dblock's holder string, or what another client wrote there
};
ContenderView view_of(const std::string& value);
// The holder a key's value names: dblock's holder string, or what another client wrote there
// (etcdctl's concurrency.Mutex writes "", python-etcd3 a 16-byte UUID, shown in hex).
std::string holder_of(const std::string& value);

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_REQUESTS_H_
