// The admin calls of the ZooKeeper service: force_release (with its audit record), the audit log,
// and list.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "audit.h"
#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "nodes.h"
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

// A container's lock children (`names`), each recipe's sorted and judged by that recipe's rule:
// `layout`'s nodes (and any child of neither recipe) as `layout`, the other recipe's as its own.
// Neither recipe waits for the other's nodes, so each has holders of its own (an acquire refuses
// to join such a container: recipe_mismatch).
struct Judged {
  std::vector<Child> holding;
  int lock_nodes = 0;  // every child but the window
};
Judged judge(Layout layout, const std::vector<std::string>& names) {
  std::vector<std::string> own, other;
  for (const std::string& name : names) (other_recipe(layout, name) ? other : own).push_back(name);
  Judged out;
  for (auto [which, part] : {std::pair{layout, &own}, std::pair{other_layout(layout), &other}}) {
    const std::vector<Child> sorted = sorted_children(which, std::move(*part));
    out.lock_nodes += static_cast<int>(sorted.size());
    for (Child& child : holders_of(sorted)) out.holding.push_back(std::move(child));
  }
  return out;
}

[[noreturn]] void throw_foreign(std::string_view name, const std::string& child, const std::string& data) {
  throw UsageError("zookeeper: '" + std::string(name) + "' is held by a client that is not dblock (" +
                       shown_holder(data, child) +
                       ", e.g. Apache Curator); add force_foreign=1 to the URL to force-release it too",
                   kServiceName);
}

// Rounds of force_release when holders change under it (released, or the audit node missing).
constexpr int kEvictionRounds = 4;

}  // namespace

void ZooKeeperService::up_to_date(Session& s, SteadyClock::time_point deadline) {
  const Reply r = s.sync(root_, deadline);
  if (r.rc != ZOK && r.rc != ZNONODE) unexpected("sync " + root_, r.rc);
}

std::string ZooKeeperService::audit_dir() const { return root_ + "/" + std::string(kAuditNode); }

std::optional<ZooKeeperService::Eviction> ZooKeeperService::eviction(Session& s, std::string_view name,
                                                                     std::string_view by,
                                                                     SteadyClock::time_point deadline) {
  const std::string dir = container(name);
  const std::vector<std::string> names = children_of(s, dir, deadline);
  const std::vector<Child> holding = judge(options_.layout, names).holding;
  Eviction out;
  ForceReleaseRecord record;
  record.name = std::string(name);
  record.by = std::string(by);
  std::vector<std::string> evicted;
  if (has_window(names)) {
    // A scheduled job's window goes too; when it is all that holds the name, it is what is evicted,
    // at the version judged live (a window a later run wrote meanwhile is not touched).
    const std::optional<LiveWindow> live = holding.empty() ? live_window(s, dir, deadline) : std::nullopt;
    if (holding.empty() && !live) return std::nullopt;
    if (live) {
      evicted.push_back(live->window.holder);
      record.old_fence = live->window.fence;
    }
    out.ops.push_back(MultiOp{false, dir + "/" + std::string(kWindowNode), "", 0, live ? live->version : -1});
  }
  if (holding.empty() && out.ops.empty()) return std::nullopt;
  for (const Child& child : holding) {
    const std::string path = dir + "/" + child.name;
    const Reply r = s.get(path, deadline);
    if (r.rc == ZNONODE) continue;  // released meanwhile
    if (r.rc != ZOK) unexpected("get " + path, r.rc);
    if (child.reader) record.mode = LockMode::kShared;
    if (!holder_in(r.data) && !options_.force_foreign) throw_foreign(name, child.name, r.data);
    evicted.push_back(shown_holder(r.data, child.name));
    record.old_fence = std::max(record.old_fence, r.stat.czxid);
    out.ops.push_back(MultiOp{false, path, "", 0});
  }
  if (evicted.empty()) return Eviction{};  // the holders went meanwhile: a window may be left, look again
  record.evicted = service::joined_holders(std::move(evicted));
  out.ops.push_back(MultiOp{true, audit_dir() + "/" + std::string(kAuditRecordPrefix), encode_record(record),
                            ZOO_PERSISTENT_SEQUENTIAL});
  return out;
}

bool ZooKeeperService::force_release(std::string_view name, std::string_view by) {
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  up_to_date(*s, deadline);  // an admin acts on every holder, whichever server it went through
  for (int round = 0; round < kEvictionRounds; ++round) {
    const std::optional<Eviction> e = eviction(*s, name, by, deadline);
    if (!e) return false;
    if (e->ops.empty()) continue;
    // The holders' deletes and the record: all or none.
    const Reply r = s->multi(e->ops, deadline);
    if (r.rc == ZOK) return true;
    if (r.rc != ZNONODE && r.rc != ZBADVERSION) unexpected("force-release of " + container(name), r.rc);
    // A holder or the window went or changed meanwhile, or the audit node does not exist yet: look again.
    create_parents(*s, audit_dir(), deadline);
  }
  throw ConnectionError("zookeeper: the holders of " + container(name) + " kept changing during a force-release",
                        kServiceName);
}

std::vector<ForceReleaseRecord> ZooKeeperService::force_releases(std::optional<std::string_view> name,
                                                                 std::size_t limit) {
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  up_to_date(*s, deadline);  // records made through other servers
  const std::string dir = audit_dir();
  std::vector<std::string> records = children_of(*s, dir, deadline);
  // Newest first: the sequence (10 digits) orders them.
  std::sort(records.begin(), records.end(), std::greater<>());
  std::vector<ForceReleaseRecord> out;
  for (const std::string& node : records) {
    if (out.size() >= limit) break;
    const Reply r = s->get(dir + "/" + node, deadline);
    if (r.rc == ZNONODE) continue;
    if (r.rc != ZOK) unexpected("get " + dir + "/" + node, r.rc);
    std::optional<ForceReleaseRecord> record = decode_record(r.data);
    if (!record || (name && record->name != *name)) continue;
    record->at_us = r.stat.ctime_ms * 1000;
    record->new_fence = r.stat.czxid;  // the eviction's zxid: every later node's czxid is greater
    out.push_back(std::move(*record));
  }
  return out;
}

std::optional<LeaseInfo> ZooKeeperService::describe(Session& s, const std::string& name,
                                                    SteadyClock::time_point deadline) {
  const std::string dir = container(name);
  const std::vector<std::string> names = children_of(s, dir, deadline);
  const Judged judged = judge(options_.layout, names);
  const std::vector<Child>& holding = judged.holding;
  LeaseInfo info;
  info.name = name;
  info.holders = 0;
  info.bound = LeaseBound::kSession;  // every lock node is ephemeral: it ends with its session
  info.waiters = judged.lock_nodes - static_cast<int>(holding.size());  // every lock node not holding waits
  std::vector<std::string> holders;
  for (const Child& child : holding) {
    const Reply r = s.get(dir + "/" + child.name, deadline);
    if (r.rc == ZNONODE) continue;  // released meanwhile
    if (r.rc != ZOK) unexpected("get " + dir + "/" + child.name, r.rc);
    if (child.reader) {
      info.mode = LockMode::kShared;
      info.permits = child.permits;
    }
    holders.push_back(shown_holder(r.data, child.name));
    if (r.stat.czxid > info.fence) {
      info.fence = r.stat.czxid;
      info.acquired_at_us = r.stat.ctime_ms * 1000;
      info.renewals = r.stat.version;
    }
    ++info.holders;
  }
  if (info.holders == 0) {
    if (!has_window(names)) return std::nullopt;
    return describe_window(s, name, deadline);
  }
  info.holder = service::joined_holders(std::move(holders));
  return info;
}

std::vector<LeaseInfo> ZooKeeperService::list(std::optional<std::string_view> name) {
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  up_to_date(*s, deadline);  // leases taken through other servers
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
