// The attempts of the ZooKeeper service, alone (try_acquire) and in line (FairQueue), and the
// WakeEvents reads.
#include <zookeeper/zookeeper.h>

#include <algorithm>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "nodes.h"
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

}  // namespace

FairQueue::Attempt ZooKeeperService::attempt_in_line(const AcquireRequest& request, const Place&) {
  return attempt(request, true);
}

FairQueue::Attempt ZooKeeperService::attempt(const AcquireRequest& request, bool queue) {
  if (request.mode == LockMode::kShared && options_.layout == Layout::kCuratorMutex) {
    throw UnsupportedError("zookeeper: layout=curator-mutex has no shared leases (InterProcessMutex)", kServiceName);
  }
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  const std::string key = container(request.name) + "/" +
                          node_prefix(guid_of(*request.secret), options_.layout, request.mode, request.permits);
  // Ends the attempt whatever happens; a suspect of this key is swept once no attempt of it runs.
  struct End {
    ZooKeeperService& service;
    Session& session;
    const std::string& key;
    ~End() {
      if (service.attempts_.end(key, session.id())) service.sweep(session, key);
    }
  } end{*this, *s, key};
  return attempt_once(*s, request, key, queue, deadline);
}

FairQueue::Attempt ZooKeeperService::attempt_once(Session& s, const AcquireRequest& request, const std::string& key,
                                                  bool queue, SteadyClock::time_point deadline) {
  const std::size_t cut = key.rfind('/');
  const std::string dir = key.substr(0, cut);
  const std::string prefix = key.substr(cut + 1);
  // A waiter's node from its last attempt; else, only after an attempt of this secret that failed
  // once its create was sent, a node of this session that create made; else a new node.
  const bool retried = attempts_.begin(key);
  std::vector<std::string> names;
  std::optional<OwnNode> own = attempts_.waiting(key);
  if (own || retried) names = children_of(s, dir, deadline);
  if (own && std::find(names.begin(), names.end(), own->first) == names.end()) own.reset();  // gone
  if (!own && retried) own = own_child(s, dir, names, prefix, deadline);
  const bool fresh = !own;  // the node is made by this attempt: its ctime is "now"
  if (!own) {
    // An error from here until settle() leaves the node, if made, to the same secret's next
    // attempt and to the sweep (Attempts::end).
    own = create_child(s, dir, prefix, node_data(request.holder), deadline);
    names = children_of(s, dir, deadline);
  }
  attempts_.settle(key);  // from here on the outcome is known: held, in line, or deleted below
  if (const std::optional<std::string> other = other_recipe_child(options_.layout, names)) {
    // The other Curator recipe's holders would not see this node, nor this layout theirs.
    attempts_.set_waiting(key, std::nullopt);
    remove_node(s, dir + "/" + own->first, deadline);
    throw recipe_mismatch(options_.layout, request.name, *other);
  }

  const bool window = has_window(names);
  const std::vector<Child> sorted = sorted_children(options_.layout, std::move(names));
  const std::optional<std::size_t> at = index_of(sorted, own->first);
  const std::string path = dir + "/" + own->first;
  const std::optional<int> conflict = at ? permits_conflict(sorted, *at) : std::nullopt;
  Attempt out;
  if (at && !conflict && holds(sorted, *at)) {
    attempts_.set_waiting(key, std::nullopt);
    Held times;
    times.fence = own->second.czxid;
    times.acquired_ms = times.seen_ms = own->second.ctime_ms;
    const std::optional<std::chrono::milliseconds> closed =
        window_at_grant(s, request, path, fresh, window, times, deadline);
    if (closed) {
      // Inside a scheduled job's window: refused, as a live holder would refuse it.
      remove_node(s, path, deadline);
      out.result.holder_remaining = *closed;
      return out;
    }
    out.result.acquired = true;
    out.result.fence = own->second.czxid;
    out.result.expires_at_us = 0;  // the session bounds it, not a time on the server's clock
    out.result.granted_for = s.negotiated_timeout();
    out.result.tag = sorted[*at].sequence;
    remember(path, request, s.id(), times);
    return out;
  }
  if (queue && at && !conflict) {
    attempts_.set_waiting(key, own);
    out.ticket = static_cast<std::int64_t>(sorted[*at].sequence) + 1;  // 0 means "not in line"
    out.position = waiters_ahead(sorted, *at);
    watch_turn(s, request.name, dir, sorted, *at, out.ticket);
    return out;
  }
  attempts_.set_waiting(key, std::nullopt);
  // Not holding and not in line: the node goes again (as Curator's acquire(0) does). A delete
  // that fails is sent again until the server confirms it: the node must not block the name.
  remove_node(s, path, deadline);
  if (conflict) throw service::permits_mismatch(kServiceName, request.name, *conflict, request.permits);
  return out;
}

void ZooKeeperService::remove_node(Session& s, const std::string& path, SteadyClock::time_point deadline) {
  try {
    const Reply removed = s.remove(path, deadline);
    if (removed.rc == ZOK || removed.rc == ZNONODE) return;
  } catch (const ConnectionError&) {
  }
  s.remove_eventually(path);
}

void ZooKeeperService::watch_turn(Session& s, std::string_view name, const std::string& dir,
                                  const std::vector<Child>& sorted, std::size_t at, std::int64_t ticket) {
  const Child& own = sorted[at];
  const auto ahead = awaited(sorted, at);
  if (own.permits > 0 && !ahead) {
    // No writer ahead: the permit waits for any of the holding readers ahead to leave.
    for (std::size_t holder : permit_holders_ahead(sorted, at)) events_.watch(s, name, dir + "/" + sorted[holder].name, 0);
    return;
  }
  if (ahead) events_.watch(s, name, dir + "/" + sorted[*ahead].name, own.reader ? 0 : ticket);
}

void ZooKeeperService::leave(std::string_view name, const OwnerSecret& secret) {
  const auto deadline = deadline_now();
  const std::string dir = container(name);
  // Every mode and permit count of this secret: the waiter's nodes all begin "_c_<guid>-".
  for (const auto& [key, node] : attempts_.waiting_under(dir + "/_c_" + guid_of(secret) + "-")) {
    attempts_.set_waiting(key, std::nullopt);
    const std::shared_ptr<Session> s = session(deadline);
    remove_node(*s, dir + "/" + node.first, deadline);  // a dead waiter's node must not block the others
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
  for (const auto& [key, node] : attempts_.waiting_under(dir + "/_c_" + guid + "-")) {
    if (const auto at = index_of(sorted, node.first)) {
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

}  // namespace dblock::zookeeper
