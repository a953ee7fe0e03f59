// Read-only calls on one node, shared by the Redis services: the lease keys (SCAN, never KEYS),
// their descriptions, the force-release history (the audit stream), the ACL check made at open.
// A lease or a record that cannot be read is listed as unreadable, never fails the listing.
// Internal.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_LISTING_H_
#define DBLOCK_SRC_BACKENDS_REDIS_LISTING_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service/lease_service.h"
#include "node.h"

namespace dblock::redis {

// Every key under `prefix` that may be a lease (companion keys, which begin with '{', left out).
std::vector<std::string> scan_lease_keys(Node& node, std::string_view prefix);
// The leases at `lease_keys` (a few hundred per script call). Another client's string is listed
// when `foreign_too`, a dblock lease that cannot be read always (its holder says why:
// "(unreadable lease: ...)"); names are the keys without `prefix`.
std::vector<LeaseInfo> describe(Node& node, const std::vector<std::string>& lease_keys, std::string_view prefix,
                                bool foreign_too);
// Newest first, at most `limit`, of every name or of `name`. A record whose numbers cannot be read
// is returned with them 0 and `evicted` saying so ("(unreadable record <id>: ...)").
std::vector<ForceReleaseRecord> read_audit(Node& node, std::string_view prefix, std::optional<std::string_view> name,
                                           std::size_t limit);
// Checks, by `deadline`, that the connection's ACL user may run every command dblock sends or its
// scripts call, on the keys of `prefix` and its release channel (scripts.h, kPermissions; the
// subscriber's commands only when node.options().listen). Throws PermissionError naming what is
// missing; writes nothing.
void check_permissions(Node& node, std::string_view prefix, SteadyClock::time_point deadline);
// Sorts by name and drops repeated names.
void sort_by_name(std::vector<LeaseInfo>& leases);

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_LISTING_H_
