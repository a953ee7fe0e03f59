#include "zookeeper_service.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <thread>

#include "dblock/errors.h"
#include "nodes.h"

namespace dblock::zookeeper {

namespace {

// Between a release's tries while the connection is lost.
constexpr std::chrono::milliseconds kReleaseRetryPause{100};

}  // namespace

ZooKeeperService::ZooKeeperService(const Options& options, std::string root)
    : options_(options),
      root_(std::move(root)),
      session_config_{options.hosts, options.session_timeout, options.digest},
      session_locks_(options, root_) {
  session_ = std::make_shared<Session>(session_config_, connect_deadline(deadline_now()), hooks());
}

ZooKeeperService::~ZooKeeperService() {
  std::shared_ptr<Session> closing;
  {
    service::MutexLock lock(mutex_);
    closing.swap(session_);
  }
  if (closing != nullptr && !closing->expired() && may_leave_nodes(*closing)) {
    // Bounded: past its session timeout the server has expired the session, and its nodes, anyway.
    const auto bound = std::min(options_.connect_timeout,
                                std::chrono::duration_cast<std::chrono::milliseconds>(closing->negotiated_timeout()));
    closing->await_connected(SteadyClock::now() + bound);
  }
  closing.reset();  // joins the client's threads while every member is still alive
}

bool ZooKeeperService::may_leave_nodes(const Session& s) {
  if (s.owes_deletes() || attempts_.any()) return true;
  service::MutexLock lock(held_mutex_);
  return !held_.empty();
}

Session::Hooks ZooKeeperService::hooks() {
  Session::Hooks hooks;
  hooks.connected = [this](Session& s, std::int64_t id) {
    events_.post_all();
    if (id == 0) return;  // the first connection, before the handle was recorded: nothing to sweep
    for (const std::string& key : attempts_.to_sweep(id)) sweep(s, key);
  };
  hooks.expired = [this](std::int64_t session) { session_expired(session); };
  return hooks;
}

std::pair<std::int64_t, std::string> ZooKeeperService::session_credentials() {
  return session(deadline_now())->credentials();
}

std::chrono::milliseconds ZooKeeperService::session_timeout() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(session(deadline_now())->negotiated_timeout());
}

ServiceTraits ZooKeeperService::traits() const {
  ServiceTraits traits;
  traits.bound = LeaseBound::kSession;
  traits.shared_leases = options_.layout == Layout::kReadWrite;
  traits.permits = traits.shared_leases;
  traits.hold_at_least = true;
  return traits;
}

std::shared_ptr<Session> ZooKeeperService::session(SteadyClock::time_point deadline) {
  service::MutexLock lock(mutex_);
  if (session_ == nullptr || session_->expired()) {
    attempts_.clear();  // the expired session's nodes are gone
    session_.reset();    // an expired handle closes at once
    session_ = std::make_shared<Session>(session_config_, connect_deadline(deadline), hooks());
  }
  return session_;
}

SteadyClock::time_point ZooKeeperService::connect_deadline(SteadyClock::time_point deadline) const {
  return std::min(deadline, SteadyClock::now() + options_.connect_timeout);
}

std::string ZooKeeperService::own_path(const LeaseKey& lease) const {
  return container(lease.name) + "/" +
         node_name(guid_of(*lease.secret), options_.layout, lease.mode, lease.tag, lease.permits);
}

// ---- nodes ----

std::optional<std::pair<std::string, NodeStat>> ZooKeeperService::own_child(Session& s, const std::string& container,
                                                                          const std::vector<std::string>& names,
                                                                          const std::string& prefix,
                                                                          SteadyClock::time_point deadline) {
  for (const std::string& child : names) {
    if (child.rfind(prefix, 0) != 0 || s.doomed(container + "/" + child)) continue;
    const Reply r = s.exists(container + "/" + child, deadline);
    if (r.rc == ZOK && r.stat.ephemeral_owner == s.id()) return std::make_pair(child, r.stat);
  }
  return std::nullopt;
}

// ---- the lease calls ----

AcquireResult ZooKeeperService::try_acquire(const AcquireRequest& request) { return attempt(request, false).result; }

RenewResult ZooKeeperService::renew(const LeaseKey& lease, std::chrono::milliseconds) {
  const auto deadline = deadline_now();
  const std::shared_ptr<Session> s = session(deadline);
  const std::string path = own_path(lease);
  const std::optional<Held> held = held_of(path);
  RenewResult result;
  Reply r;
  try {
    // A lease this service did not take (not remembered): read, and never overwrite its data.
    r = held ? s->set(path, held->data, deadline) : s->exists(path, deadline);
  } catch (const ConnectionError& e) {
    // Its node went with the session (the handle may know it before any reply says so).
    if (e.sqlstate() == std::to_string(ZSESSIONEXPIRED) || s->expired()) return result;
    throw;
  }
  if (r.rc == ZNONODE) return result;  // force-released, or its session expired
  if (r.rc != ZOK) unexpected("renew " + path, r.rc);
  if (r.stat.ephemeral_owner != s->id()) return result;  // not this session's node
  if (held) saw_time(path, r.stat.mtime_ms);
  result.renewed = true;
  result.expires_at_us = 0;
  result.granted_for = s->negotiated_timeout();
  return result;
}

bool ZooKeeperService::release(const LeaseKey& lease) {
  const auto deadline = deadline_now();
  const std::string path = own_path(lease);
  // Whether this service took the node (a wrong secret names a node nobody took).
  const std::optional<Held> held = held_of(path);
  const bool taken_here = held.has_value();
  const bool window = taken_here && lease.hold_at_least > std::chrono::milliseconds::zero();
  forget(path);
  std::shared_ptr<Session> s;
  // A lost connection is tried again until the deadline (the client reconnects meanwhile); a
  // retry's "no such node" then counts as released when this service took the node: the first
  // delete may have done it. A node it did not take (another process's secret, or a wrong one)
  // is not claimed released on that guess.
  for (bool retried = false;; retried = true) {
    try {
      if (s == nullptr) s = session(deadline);
      const Reply r =
          window ? release_scheduled(*s, path, *held, lease.hold_at_least, deadline) : s->remove(path, deadline);
      if (r.rc != ZOK && r.rc != ZNONODE) unexpected("delete " + path, r.rc);
      return r.rc == ZOK || (retried && taken_here);
    } catch (const ConnectionError& e) {
      // The session expired meanwhile (another client closed it, or the server ended it): its
      // ephemeral node is gone with it, whether or not our delete came first. Already lost: no
      // retry can succeed on an expired handle, and the outcome is not in doubt.
      if (e.sqlstate() == std::to_string(ZSESSIONEXPIRED) || (s != nullptr && s->expired())) return false;
      if (SteadyClock::now() + kReleaseRetryPause >= deadline) {
        if (s != nullptr) s->remove_eventually(path);  // the node must not outlive the lease
        throw InDoubtError(std::string(e.what()) +
                               " (the release's outcome is unknown; its delete is sent again, and the node ends with "
                               "its session at the latest)",
                           kServiceName, e.sqlstate());
      }
    }
    std::this_thread::sleep_for(kReleaseRetryPause);
  }
}

void ZooKeeperService::lease_lost(const LeaseKey& lease) noexcept {
  try {
    const std::string path = own_path(lease);
    forget(path);
    std::shared_ptr<Session> s;
    {
      service::MutexLock lock(mutex_);
      s = session_;
    }
    if (s != nullptr && !s->expired()) s->remove_eventually(path);
  } catch (const std::exception&) {
    // Best effort: the node goes with its session anyway.
  }
}

// ---- what renew writes back ----

void ZooKeeperService::remember(const std::string& path, const AcquireRequest& request, std::int64_t session,
                                const Held& times) {
  service::MutexLock lock(held_mutex_);
  held_[path] = Held{node_data(request.holder), std::string(request.name), *request.secret, session,
                     times.fence, times.acquired_ms, times.seen_ms};
}

void ZooKeeperService::session_expired(std::int64_t session) noexcept {
  std::vector<Held> lost;
  try {
    service::MutexLock lock(held_mutex_);
    for (const auto& [path, held] : held_) {
      if (held.session == session) lost.push_back(held);
    }
  } catch (const std::exception&) {
    return;  // out of memory: the next renewal finds the nodes gone
  }
  for (const Held& held : lost) events_.post_lost(held.name, held.secret, "the ZooKeeper session expired");
}

std::optional<ZooKeeperService::Held> ZooKeeperService::held_of(const std::string& path) {
  service::MutexLock lock(held_mutex_);
  const auto it = held_.find(path);
  if (it == held_.end()) return std::nullopt;
  return it->second;
}

void ZooKeeperService::saw_time(const std::string& path, std::int64_t mtime_ms) {
  service::MutexLock lock(held_mutex_);
  const auto it = held_.find(path);
  if (it != held_.end()) it->second.seen_ms = std::max(it->second.seen_ms, mtime_ms);
}

void ZooKeeperService::forget(const std::string& path) {
  service::MutexLock lock(held_mutex_);
  held_.erase(path);
}

}  // namespace dblock::zookeeper
