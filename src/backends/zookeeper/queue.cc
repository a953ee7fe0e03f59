// The attempts of the ZooKeeper service, alone (try_acquire) and in line (FairQueue), and the
// WakeEvents reads.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "dblock/errors.h"
#include "zookeeper_service.h"

namespace dblock::zookeeper {

namespace {

// Children ahead of `index` that do not hold: the waiters before it.
int waiters_ahead(const std::vector<Child>& sorted, std::size_t index) {
  int ahead = 0;
  for (std::size_t i = 0; i < index && i < sorted.size(); ++i) {
    if (!holds(sorted, i)) ++ahead;
  }
  return ahead;
}

// Whether a child other than `own` (the waiter's node) holds.
bool other_holder(const std::vector<Child>& sorted, std::optional<std::size_t> own) {
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i != own && holds(sorted, i)) return true;
  }
  return false;
}

// The child a refused waiter at `index` waits for: a writer the one just ahead, a reader the
// nearest writer ahead. Its ticket for the event: a writer's own, a reader's 0 (every reader
// behind that writer may go).
std::optional<std::size_t> awaited(const std::vector<Child>& sorted, std::size_t index) {
  if (index == 0 || index >= sorted.size()) return std::nullopt;
  if (!sorted[index].reader) return index - 1;
  for (std::size_t i = index; i-- > 0;) {
    if (sorted[i].writer) return i;
  }
  return std::nullopt;
}

std::optional<std::size_t> index_of(const std::vector<Child>& sorted, const std::string& name) {
  const auto at = std::find_if(sorted.begin(), sorted.end(), [&](const Child& c) { return c.name == name; });
  if (at == sorted.end()) return std::nullopt;
  return static_cast<std::size_t>(at - sorted.begin());
}

}  // namespace

std::optional<std::pair<std::string, NodeStat>> ZooKeeperService::waiting(const std::string& attempt) {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = waiting_.find(attempt);
  if (it == waiting_.end()) return std::nullopt;
  return it->second;
}

void ZooKeeperService::set_waiting(const std::string& attempt, std::optional<std::pair<std::string, NodeStat>> node) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (node) {
    waiting_[attempt] = std::move(*node);
  } else {
    waiting_.erase(attempt);
  }
}

FairQueue::Attempt ZooKeeperService::attempt_in_line(const AcquireRequest& request, const Place&) {
  return attempt(request, true);
}

FairQueue::Attempt ZooKeeperService::attempt(const AcquireRequest& request, bool queue) {
  if (request.mode == LockMode::kShared && options_.layout == Layout::kCuratorMutex) {
    throw UnsupportedError("zookeeper: layout=curator-mutex has no shared leases (InterProcessMutex)", kServiceName);
  }
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  const std::string dir = container(request.name);
  const std::string prefix = node_prefix(guid_of(*request.secret), options_.layout, request.mode);
  const std::string key = dir + "/" + prefix;

  // A waiter's node from its last attempt; else, only after an attempt of this secret that failed
  // once its create was sent, a node of this session that create made; else a new node.
  const bool retried = uncertain(key, true);
  std::vector<std::string> names;
  std::optional<std::pair<std::string, NodeStat>> own = waiting(key);
  if (own || retried) names = children_of(*s, dir, deadline);
  if (own && std::find(names.begin(), names.end(), own->first) == names.end()) own.reset();  // gone
  if (!own && retried) own = own_child(*s, dir, names, prefix, deadline);
  if (!own) {
    own = create_child(*s, dir, prefix, request.holder, deadline);
    names = children_of(*s, dir, deadline);
  }
  uncertain(key, false);  // from here on the outcome is known: held, in line, or deleted below

  const std::vector<Child> sorted = sorted_children(options_.layout, std::move(names));
  const std::optional<std::size_t> at = index_of(sorted, own->first);
  const std::string path = dir + "/" + own->first;
  Attempt out;
  if (at && holds(sorted, *at)) {
    set_waiting(key, std::nullopt);
    out.result.acquired = true;
    out.result.fence = own->second.czxid;
    out.result.expires_at_us = 0;  // the session bounds it, not a time on the server's clock
    out.result.granted_for = s->negotiated_timeout();
    out.result.tag = sorted[*at].sequence;
    remember(path, request, s->id());
    return out;
  }
  if (queue && at) {
    set_waiting(key, own);
    out.ticket = static_cast<std::int64_t>(sorted[*at].sequence) + 1;  // 0 means "not in line"
    out.position = waiters_ahead(sorted, *at);
    if (const auto ahead = awaited(sorted, *at)) {
      events_.watch(*s, request.name, dir + "/" + sorted[*ahead].name, sorted[*at].reader ? 0 : out.ticket);
    }
    return out;
  }
  set_waiting(key, std::nullopt);
  // Not holding and not in line: the node goes again (as Curator's acquire(0) does). A delete
  // that fails is sent again until the server confirms it: the node must not block the name.
  try {
    const Reply removed = s->remove(path, deadline);
    if (removed.rc == ZOK || removed.rc == ZNONODE) return out;
  } catch (const ConnectionError&) {
  }
  s->remove_eventually(path);
  return out;
}

void ZooKeeperService::leave(std::string_view name, const OwnerSecret& secret) {
  const auto deadline = deadline_now();
  const std::string dir = container(name);
  const std::string guid = guid_of(secret);
  for (LockMode mode : {LockMode::kExclusive, LockMode::kShared}) {
    const std::string key = dir + "/" + node_prefix(guid, options_.layout, mode);
    const auto node = waiting(key);
    if (!node) continue;
    set_waiting(key, std::nullopt);
    const std::shared_ptr<Session> s = session(deadline);
    const std::string path = dir + "/" + node->first;
    try {
      const Reply r = s->remove(path, deadline);
      if (r.rc == ZOK || r.rc == ZNONODE) continue;
    } catch (const ConnectionError&) {
    }
    s->remove_eventually(path);  // a dead waiter's node must not block the others
  }
}

FairQueue::Position ZooKeeperService::position(std::string_view name, const OwnerSecret& secret, std::int64_t) {
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  const std::string dir = container(name);
  const std::string guid = guid_of(secret);
  const std::vector<Child> sorted = sorted_children(options_.layout, children_of(*s, dir, deadline));
  Position out;
  std::optional<std::size_t> own;
  for (LockMode mode : {LockMode::kExclusive, LockMode::kShared}) {
    const auto node = waiting(dir + "/" + node_prefix(guid, options_.layout, mode));
    if (!node) continue;
    if (const auto at = index_of(sorted, node->first)) {
      own = at;
      out.waiters_ahead = waiters_ahead(sorted, *at);
    }
  }
  // The holder's time is unknown (its session bounds it): the session timeout as an upper bound.
  // The waiter's own node is no holder to wait for: once it holds, the waiter's attempt takes it.
  out.holder_remaining = other_holder(sorted, own)
                             ? std::chrono::duration_cast<std::chrono::milliseconds>(s->negotiated_timeout())
                             : std::chrono::milliseconds(0);
  return out;
}

std::optional<LeaseGrant> ZooKeeperService::confirm_grant(std::string_view name, const OwnerSecret& secret,
                                                          const LeaseGrant& claimed) {
  // This service posts no grants; a claimed one holds only if the waiter's node holds now.
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  const std::string dir = container(name);
  const std::string key = dir + "/" + node_prefix(guid_of(secret), options_.layout, LockMode::kExclusive);
  const auto node = waiting(key);
  if (!node) return std::nullopt;
  const std::vector<Child> sorted = sorted_children(options_.layout, children_of(*s, dir, deadline));
  const auto at = index_of(sorted, node->first);
  if (!at || !holds(sorted, *at)) return std::nullopt;
  set_waiting(key, std::nullopt);
  LeaseGrant grant = claimed;
  grant.fence = node->second.czxid;
  grant.granted_for = s->negotiated_timeout();
  grant.expires_at_us = 0;
  grant.tag = sorted[*at].sequence;
  return grant;
}

}  // namespace dblock::zookeeper
