#include "redlock_service.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "dblock/errors.h"
#include "listing.h"

namespace dblock::redis {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;


std::string text(std::string_view s) { return std::string(s); }

bool said(const std::optional<Reply>& r, std::int64_t value) {
  return r && !r->is_error() && (r->is_array() ? r->size() > 0 && (*r)[0].integer() == value : r->integer() == value);
}

}  // namespace

RedlockService::RedlockService(const std::vector<Options>& nodes, bool raise_fences)
    : prefix_(nodes.at(0).prefix), raise_fences_(raise_fences) {
  const auto deadline = deadline_now();
  std::size_t reached = 0;
  for (const Options& node : nodes) {
    nodes_.push_back(std::make_unique<Node>(node, deadline, /*tolerate_unreachable=*/true));
    reached += nodes_.back()->checked();
  }
  if (reached < quorum()) {
    throw ConnectionError("redlock: " + std::to_string(reached) + " of " + std::to_string(nodes.size()) +
                              " nodes reachable; a lease needs " + std::to_string(quorum()),
                          kServiceName);
  }
  if (nodes.at(0).listen) {
    events_.emplace(nodes, release_channel(prefix_),
                    [](std::string_view, const OwnerSecret&, const LeaseGrant&) -> std::optional<LeaseGrant> {
                      return std::nullopt;  // Redlock grants nothing: a grant event is forged
                    });
  }
}

ServiceTraits RedlockService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = false;
  return traits;
}

RedlockService::Replies RedlockService::on_nodes(Which which, const std::vector<std::string>& keys,
                                                 const std::vector<std::string>& args, SteadyClock::time_point deadline,
                                                 const std::vector<bool>& to) {
  std::vector<std::optional<Node::Sent>> sent(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (to.empty() || to[i]) sent[i] = nodes_[i]->send(nodes_[i]->scripts().*which, keys, args, deadline);
  }
  Replies replies(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (sent[i]) replies[i] = nodes_[i]->receive(*sent[i], deadline);
  }
  return replies;
}

void RedlockService::check_errors(const Replies& replies) const {
  std::map<std::string, std::size_t> codes;
  for (const auto& r : replies) {
    if (r && r->is_error() && ++codes[text(error_code(*r))] >= quorum()) check_reply(static_cast<const ReplyView&>(*r), "redlock");
  }
}

std::size_t RedlockService::raise(const LockKeys& k, const OwnerSecret& secret, std::int64_t fence,
                                  const std::vector<bool>& held, SteadyClock::time_point deadline) {
  const Replies raised =
      on_nodes(&ScriptSet::raise_fence, {k.lease, k.fence}, {text(secret_bytes(secret)), std::to_string(fence)}, deadline, held);
  return static_cast<std::size_t>(std::count_if(raised.begin(), raised.end(), [](const auto& r) { return said(r, 1); }));
}

AcquireResult RedlockService::try_acquire(const AcquireRequest& request) {
  if (request.mode != LockMode::kExclusive) throw UnsupportedError("redlock: no shared leases", kServiceName);
  const LockKeys k = keys(request.name);
  const auto deadline = deadline_now();
  const auto sent_at = SteadyClock::now();
  const Replies replies = on_nodes(&ScriptSet::acquire, {k.lease, k.fence, k.queue, k.queue_info},
                                   {text(secret_bytes(*request.secret)), text(request.holder),
                                    std::to_string(request.ttl.count() * 1000), "x", "0", "0", "0", "0"},
                                   deadline);
  check_errors(replies);
  std::vector<bool> held(nodes_.size(), false);
  std::int64_t fence = 0;
  std::int64_t remaining = -1;  // the soonest a refusing node's holder expires
  std::size_t answered = 0;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i] || replies[i]->is_error()) continue;
    ++answered;
    held[i] = said(replies[i], 1);
    if (held[i]) fence = std::max(fence, (*replies[i])[1].integer());
    const std::int64_t left = held[i] ? -1 : (*replies[i])[1].integer(-1);
    if (left >= 0) remaining = remaining < 0 ? left : std::min(remaining, left);
  }
  const std::size_t count = static_cast<std::size_t>(std::count(held.begin(), held.end(), true));
  const bool in_time = SteadyClock::now() - sent_at + drift(request.ttl) < request.ttl;
  AcquireResult result;
  if (count >= quorum() && in_time && (!raise_fences_ || raise(k, *request.secret, fence, held, deadline) >= quorum())) {
    result.acquired = true;
    result.fence = fence;
    return result;
  }
  if (count > 0) release_all(LeaseKey{request.name, LockMode::kExclusive, request.secret, 0}, false, deadline);
  if (answered < quorum()) {
    throw ConnectionError("redlock: " + std::to_string(answered) + " of " + std::to_string(nodes_.size()) +
                              " nodes answered; a lease needs " + std::to_string(quorum()),
                          kServiceName);
  }
  result.holder_remaining = milliseconds(count > 0 ? 0 : remaining);
  return result;
}

RenewResult RedlockService::renew(const LeaseKey& lease, milliseconds ttl) {
  const LockKeys k = keys(lease.name);
  const auto deadline = deadline_now();
  const auto sent_at = SteadyClock::now();
  const std::string secret = text(secret_bytes(*lease.secret));
  const std::string ttl_us = std::to_string(ttl.count() * 1000);
  const Replies replies = on_nodes(&ScriptSet::renew, {k.lease}, {secret, ttl_us, "x"}, deadline);
  std::vector<bool> renewed(nodes_.size()), lost(nodes_.size());
  std::int64_t fence = 0;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    renewed[i] = said(replies[i], 1);
    lost[i] = said(replies[i], 0);
    if (renewed[i]) fence = std::max(fence, (*replies[i])[2].integer());
  }
  std::size_t count = static_cast<std::size_t>(std::count(renewed.begin(), renewed.end(), true));
  if (count > 0 && count < nodes_.size() && std::count(lost.begin(), lost.end(), true) > 0) {
    // Nodes that lost the key (a restart): take them again, with the lease's fence.
    const Replies retaken = on_nodes(&ScriptSet::acquire, {k.lease, k.fence, k.queue, k.queue_info},
                                     {secret, "", ttl_us, "x", "0", "0", "0", "0"}, deadline, lost);
    std::vector<bool> again(nodes_.size());
    for (std::size_t i = 0; i < retaken.size(); ++i) again[i] = lost[i] && said(retaken[i], 1);
    count += raise_fences_ ? raise(k, *lease.secret, fence, again, deadline)
                           : static_cast<std::size_t>(std::count(again.begin(), again.end(), true));
  }
  RenewResult result;
  const bool in_time = SteadyClock::now() - sent_at + drift(ttl) < ttl;
  if (count >= quorum() && in_time) {
    result.renewed = true;
    return result;
  }
  if (static_cast<std::size_t>(std::count(lost.begin(), lost.end(), true)) >= quorum()) return result;  // lost
  throw ConnectionError("redlock: the lease was renewed on " + std::to_string(count) + " of " +
                            std::to_string(nodes_.size()) + " nodes in time",
                        kServiceName);
}

std::pair<std::size_t, std::size_t> RedlockService::release_all(const LeaseKey& lease, bool latch,
                                                                SteadyClock::time_point deadline) {
  const LockKeys k = keys(lease.name);
  const Replies replies =
      on_nodes(&ScriptSet::release, {k.lease, k.fence, k.queue, k.queue_info, k.latch(owner_digest(*lease.secret))},
               {text(secret_bytes(*lease.secret)), "x", release_channel(prefix_), text(lease.name), latch ? "1" : "0", "1", "0"},
               deadline);
  std::size_t released = 0, not_held = 0;
  for (const auto& r : replies) {
    released += said(r, 1) || said(r, 2);
    not_held += said(r, 0);
  }
  return {released, not_held};
}

bool RedlockService::release(const LeaseKey& lease) {
  const auto [released, not_held] = release_all(lease, true, deadline_now());
  if (released >= quorum()) return true;
  if (released == 0 && not_held >= quorum()) return false;
  throw InDoubtError("redlock: released on " + std::to_string(released) + " of " + std::to_string(nodes_.size()) +
                         " nodes, not held on " + std::to_string(not_held),
                     kServiceName);
}

void RedlockService::lease_lost(const LeaseKey& lease) noexcept {
  try {
    release_all(lease, false, lease_lost_deadline());
  } catch (const std::exception&) {
    // Best effort: the keys expire on the nodes by themselves.
  }
}

bool RedlockService::force_release(std::string_view name, std::string_view by) {
  const LockKeys k = keys(name);
  const Replies replies = on_nodes(&ScriptSet::force_release, {k.lease, k.fence, k.queue, k.queue_info, audit_key(prefix_)},
                                   {release_channel(prefix_), text(name), text(by)}, deadline_now());
  check_errors(replies);
  if (std::none_of(replies.begin(), replies.end(), [](const auto& r) { return r && !r->is_error(); })) {
    throw InDoubtError("redlock: no node answered the force-release", kServiceName);
  }
  return std::any_of(replies.begin(), replies.end(), [](const auto& r) { return said(r, 1); });
}

// A name is listed when a majority of the nodes that answer hold it; its details are the first
// such node's.
std::vector<LeaseInfo> RedlockService::list(std::optional<std::string_view> name) {
  std::vector<std::string> lease_keys;
  if (name) {
    lease_keys.push_back(keys(*name).lease);
  } else {
    for (auto& node : nodes_) {
      try {
        auto found = scan_lease_keys(*node, prefix_);
        lease_keys.insert(lease_keys.end(), found.begin(), found.end());
      } catch (const ConnectionError&) {
      }
    }
    std::sort(lease_keys.begin(), lease_keys.end());
    lease_keys.erase(std::unique(lease_keys.begin(), lease_keys.end()), lease_keys.end());
  }
  // A lease is one holder with one fence on a quorum of nodes (its acquire raised them all to the
  // same fence); the other nodes may show a waiter's partial take meanwhile.
  std::map<std::tuple<std::string, std::string, std::int64_t>, std::pair<std::size_t, LeaseInfo>> seen;
  std::size_t answered = 0;
  for (auto& node : nodes_) {
    try {
      for (LeaseInfo& info : describe(*node, lease_keys, prefix_, name.has_value())) {
        auto& entry = seen.try_emplace({info.name, info.holder, info.fence}, 0, info).first->second;
        ++entry.first;
      }
      ++answered;
    } catch (const ConnectionError&) {
    }
  }
  if (answered < quorum()) throw ConnectionError("redlock: too few nodes answered the listing", kServiceName);
  std::vector<LeaseInfo> out;
  for (auto& [key, entry] : seen) {
    if (entry.first < quorum()) continue;
    entry.second.waiters = -1;  // Redlock keeps no line (no FairQueue): unknown
    out.push_back(std::move(entry.second));
  }
  return out;
}

std::vector<ForceReleaseRecord> RedlockService::force_releases(std::optional<std::string_view> name, std::size_t limit) {
  for (auto& node : nodes_) {
    try {
      return read_audit(*node, prefix_, name, limit);
    } catch (const ConnectionError&) {
    }
  }
  throw ConnectionError("redlock: no node answered", kServiceName);
}

}  // namespace dblock::redis
