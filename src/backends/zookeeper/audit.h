// The force-release records of the ZooKeeper service: PERSISTENT_SEQUENTIAL children
// "<root>/%%audit/r-<seq>" (no escaped lock name starts with "%%"), each written in the eviction's
// own multi-op. The data is the record's fields, each as "<decimal length>:<bytes>"; the time and
// the new fence are the record node's ctime and czxid. Pure functions; thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_AUDIT_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_AUDIT_H_

#include <optional>
#include <string>
#include <string_view>

#include "dblock/service/lease_service.h"

namespace dblock::zookeeper {

inline constexpr std::string_view kAuditNode = "%%audit";
inline constexpr std::string_view kAuditRecordPrefix = "r-";

// The data of a record: name, by, evicted, mode and old_fence of `record`.
std::string encode_record(const ForceReleaseRecord& record);
// Those fields back (at_us, new_fence and by_account untouched); nullopt when `data` is not a record.
std::optional<ForceReleaseRecord> decode_record(std::string_view data);

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_AUDIT_H_
