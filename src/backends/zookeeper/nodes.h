// Node operations shared by the ZooKeeper service's leases and session locks: reading a
// container's children and creating a lock node, with the containers above it made on demand.
// Each call is bounded by `deadline`; thread-safe as Session is.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_NODES_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_NODES_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "session.h"

namespace dblock::zookeeper {

// Throws Error naming `what` and ZooKeeper's code.
[[noreturn]] void unexpected(const std::string& what, int rc);

// Children of `path` (none when it does not exist).
std::vector<std::string> children_of(Session& s, const std::string& path, SteadyClock::time_point deadline);

// Makes `path` and its missing parents as container nodes (the server deletes them once empty).
void create_parents(Session& s, const std::string& path, SteadyClock::time_point deadline);

// Creates the EPHEMERAL_SEQUENTIAL child "<container>/<prefix><seq>" holding `data`, making the
// container when missing. Returns the child's name (without the container) and its Stat.
std::pair<std::string, NodeStat> create_child(Session& s, const std::string& container, const std::string& prefix,
                                              std::string_view data, SteadyClock::time_point deadline);

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_NODES_H_
