#include "nodes.h"

#include <zookeeper/zookeeper.h>

#include "dblock/errors.h"
#include "paths.h"

namespace dblock::zookeeper {

namespace {

std::string parent_of(const std::string& path) {
  const std::size_t at = path.rfind('/');
  return at == 0 || at == std::string::npos ? std::string() : path.substr(0, at);
}

}  // namespace

void unexpected(const std::string& what, int rc) {
  throw Error("zookeeper: " + what + " failed: " + zerror(rc), kServiceName, std::to_string(rc));
}

std::vector<std::string> children_of(Session& s, const std::string& path, SteadyClock::time_point deadline) {
  Reply r = s.children(path, deadline);
  if (r.rc == ZNONODE) return {};
  if (r.rc != ZOK) unexpected("get children of " + path, r.rc);
  return std::move(r.children);
}

void create_parents(Session& s, const std::string& path, SteadyClock::time_point deadline) {
  const std::string parent = parent_of(path);
  if (!parent.empty()) {
    const Reply probe = s.exists(parent, deadline);
    if (probe.rc == ZNONODE) create_parents(s, parent, deadline);
  }
  const Reply r = s.create(path, "", ZOO_CONTAINER, deadline);
  if (r.rc != ZOK && r.rc != ZNODEEXISTS) unexpected("create " + path, r.rc);
}

std::pair<std::string, NodeStat> create_child(Session& s, const std::string& container, const std::string& prefix,
                                              std::string_view data, SteadyClock::time_point deadline) {
  const std::string path = container + "/" + prefix;
  const std::string value(data);
  // A container the server deleted between our create and the child's is made again: bounded.
  for (int round = 0; round < 3; ++round) {
    const Reply r = s.create(path, value, ZOO_EPHEMERAL_SEQUENTIAL, deadline);
    if (r.rc == ZOK) return {r.path.substr(r.path.rfind('/') + 1), r.stat};
    if (r.rc != ZNONODE) unexpected("create " + path, r.rc);
    create_parents(s, container, deadline);
  }
  throw ConnectionError("zookeeper: " + container + " kept disappearing while a lock node was created in it",
                        kServiceName);
}

}  // namespace dblock::zookeeper
