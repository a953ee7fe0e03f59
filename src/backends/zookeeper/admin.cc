// The admin calls of the ZooKeeper service: force_release and list.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "dblock/errors.h"
#include "zookeeper_service.h"

namespace dblock::zookeeper {

namespace {

// The children of a container that hold the lock now, as Curator decides.
std::vector<Child> holders_of(const std::vector<Child>& sorted) {
  std::vector<Child> out;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (holds(sorted, i)) out.push_back(sorted[i]);
  }
  return out;
}

// Audit records will live under "<root>/%%audit"; no escaped name starts with "%%".
constexpr std::string_view kAuditNode = "%%audit";

}  // namespace

bool ZooKeeperService::force_release(std::string_view name, std::string_view) {
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  const std::string dir = container(name);
  const std::vector<Child> holding = holders_of(sorted_children(options_.layout, children_of(*s, dir, deadline)));
  bool evicted = false;
  for (const Child& child : holding) {
    const std::string path = dir + "/" + child.name;
    const Reply r = s->remove(path, deadline);
    if (r.rc != ZOK && r.rc != ZNONODE) {
      throw Error("zookeeper: delete " + path + " failed: " + zerror(r.rc), kServiceName, std::to_string(r.rc));
    }
    evicted = evicted || r.rc == ZOK;
  }
  return evicted;
}

std::optional<LeaseInfo> ZooKeeperService::describe(Session& s, const std::string& name,
                                                    SteadyClock::time_point deadline) {
  const std::string dir = container(name);
  const std::vector<Child> holding = holders_of(sorted_children(options_.layout, children_of(s, dir, deadline)));
  LeaseInfo info;
  info.name = name;
  info.holders = 0;
  for (const Child& child : holding) {
    const Reply r = s.get(dir + "/" + child.name, deadline);
    if (r.rc == ZNONODE) continue;  // released meanwhile
    if (r.rc != ZOK) throw Error("zookeeper: get " + dir + "/" + child.name + " failed: " + zerror(r.rc), kServiceName);
    if (child.reader) info.mode = LockMode::kShared;
    if (!info.holder.empty()) info.holder += ',';
    info.holder += r.data.empty() ? child.name : r.data;  // a foreign holder shows as its node
    if (r.stat.czxid > info.fence) {
      info.fence = r.stat.czxid;
      info.acquired_at_us = r.stat.ctime_ms * 1000;
      info.renewals = r.stat.version;
    }
    ++info.holders;
  }
  if (info.holders == 0) return std::nullopt;
  return info;
}

std::vector<LeaseInfo> ZooKeeperService::list(std::optional<std::string_view> name) {
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  std::vector<LeaseInfo> out;
  if (name) {
    if (auto info = describe(*s, std::string(*name), deadline)) out.push_back(std::move(*info));
    return out;
  }
  for (const std::string& segment : children_of(*s, root_, deadline)) {
    if (segment == kAuditNode) continue;
    const std::optional<std::string> lock = unescape_name(segment);
    if (!lock) continue;  // not a container dblock named
    if (auto info = describe(*s, *lock, deadline)) out.push_back(std::move(*info));
  }
  std::sort(out.begin(), out.end(), [](const LeaseInfo& a, const LeaseInfo& b) { return a.name < b.name; });
  return out;
}

}  // namespace dblock::zookeeper
