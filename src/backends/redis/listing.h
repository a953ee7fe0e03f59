// Read-only admin calls on one node, shared by the Redis services: the lease keys (SCAN, never
// KEYS), their descriptions, the force-release history (the audit stream). Internal.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_LISTING_H_
#define DBLOCK_SRC_BACKENDS_REDIS_LISTING_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service.h"
#include "node.h"

namespace dblock::redis {

// Every key under `prefix` that may be a lease (companion keys, which begin with '{', left out).
std::vector<std::string> scan_lease_keys(Node& node, std::string_view prefix);
// The leases at `lease_keys` (a few hundred per script call). Another client's string is listed
// when `foreign_too`; names are the keys without `prefix`.
std::vector<LeaseInfo> describe(Node& node, const std::vector<std::string>& lease_keys, std::string_view prefix,
                                bool foreign_too);
// Newest first, at most `limit`, of every name or of `name`.
std::vector<ForceReleaseRecord> read_audit(Node& node, std::string_view prefix, std::optional<std::string_view> name,
                                           std::size_t limit);
// Sorts by name and drops repeated names.
void sort_by_name(std::vector<LeaseInfo>& leases);

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_LISTING_H_
