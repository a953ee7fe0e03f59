// Force-release records (AuditLog) as etcd keys. Internal.
//
// A record is the key "<prefix>\x7f" "audit/<name>/<evicted fence in 16 hex digits>", put in the
// transaction that deletes the evicted key: its create revision is the name's fence after the
// eviction. DEL (0x7f) is a control character no lock name may contain, so no lock's keys reach
// these. The value is the record's fields, one per line (names and holder strings carry no
// control characters; a shared holders' record has an eighth, "shared"); the time is the forcing
// host's wall clock (etcd has no clock to read).
#ifndef DBLOCK_SRC_BACKENDS_ETCD_AUDIT_H_
#define DBLOCK_SRC_BACKENDS_ETCD_AUDIT_H_

#include <optional>
#include <string>
#include <string_view>

#include "dblock/lease_info.h"
#include "etcd/mvcc/mvccpb/kv.pb.h"

namespace dblock::etcd {

// Where the records of the namespace `prefix` live, and whether `key` is one of them.
std::string audit_prefix(std::string_view prefix);
bool is_audit_key(std::string_view key, std::string_view prefix);
// The record key of the eviction of `name`'s holder of fence `old_fence`.
std::string audit_key(std::string_view prefix, std::string_view name, std::int64_t old_fence);
// The value stored for `record` (new_fence is the key's create revision, not stored).
std::string encode_record(const ForceReleaseRecord& record);
// The record a key holds; nullopt for a value this version cannot read.
std::optional<ForceReleaseRecord> decode_record(const mvccpb::KeyValue& kv);

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_AUDIT_H_
