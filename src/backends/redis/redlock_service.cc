#include "redlock_service.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <map>
#include <tuple>

#include "dblock/errors.h"
#include "listing.h"
#include "script_calls.h"

namespace dblock::redis {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;


std::string text(std::string_view s) { return std::string(s); }

bool said(const std::optional<Reply>& r, std::int64_t value) {
  return r && status_of(*r) == value;
}

}  // namespace

RedlockService::RedlockService(const std::vector<Options>& nodes, bool raise_fences)
    : prefix_(nodes.at(0).prefix), raise_fences_(raise_fences) {
  for (const Options& node : nodes) nodes_.push_back(std::make_unique<Node>(node));
  // Every node is connected and checked at once, each within its connect_timeout; the open is
  // decided as soon as a majority is (the others are checked on their first call).
  const auto deadline = std::min(deadline_now(), SteadyClock::now() + nodes.at(0).connect_timeout);
  std::vector<std::string> failures;
  const Replies probed = on_nodes(
      &ScriptSet::describe, {}, {}, deadline, {}, [this](const Replies& r) { return answers(r) >= quorum(); },
      &failures);
  const std::size_t reached = answers(probed);
  for (std::size_t i = 0; i < probed.size(); ++i) {
    if (!probed[i]) continue;
    if (probed[i]->is_error()) check_reply(static_cast<const ReplyView&>(*probed[i]), "redlock");  // e.g. NOPERM
    // Every command and key dblock needs, on each node that answered (one that did not is
    // checked for its configuration on its first call, and meets a missing grant there).
    check_permissions(*nodes_[i], prefix_, deadline);
  }
  if (reached < quorum()) {
    std::string why;
    for (const std::string& f : failures) why += (why.empty() ? "" : "; ") + f;
    // Retryable: nodes that come up within an open's wait are used (open(url, options, deadline)).
    throw ConnectionError("redlock: " + std::to_string(reached) + " of " + std::to_string(nodes.size()) +
                              " nodes reachable; a lease needs " + std::to_string(quorum()) +
                              (why.empty() ? "" : " (" + why + ")"),
                          kServiceName, {}, true);
  }
  if (nodes.at(0).listen) {
    events_.emplace(nodes, release_channel(prefix_));  // no GrantEvents: Redlock grants nothing
  }
}

ServiceTraits RedlockService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = false;
  return traits;
}

RedlockService::Replies RedlockService::on_nodes(Which which, const std::vector<std::string>& keys,
                                                 const std::vector<std::string>& args, SteadyClock::time_point deadline,
                                                 const std::vector<bool>& to, const Decided& decided,
                                                 std::vector<std::string>* failures) {
  std::vector<std::unique_ptr<Node::Exchange>> exchanges(nodes_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    if (to.empty() || to[i]) exchanges[i] = nodes_[i]->begin(nodes_[i]->scripts().*which, keys, args, deadline);
  }
  Replies replies(nodes_.size());
  std::vector<pollfd> fds;
  std::vector<std::size_t> polled;
  const auto started = SteadyClock::now();
  // Once the replies decide the round, the other nodes get as long again as the deciding ones
  // took (and 1 ms): a node that is merely a little slower is still heard (its fence raised with
  // the others'), a stopped one costs the round no more than that.
  std::optional<SteadyClock::time_point> until;
  for (;;) {
    bool open = false;
    for (std::size_t i = 0; i < exchanges.size(); ++i) {
      auto& e = exchanges[i];
      if (!e) continue;
      if (e->finished()) {
        replies[i] = e->take_reply();
        if (failures != nullptr && !e->failure().empty()) failures->push_back(e->failure());
        e.reset();
      } else {
        open = true;
      }
    }
    if (!open) break;
    auto now = SteadyClock::now();
    if (!until && decided && decided(replies)) until = std::min(deadline, now + (now - started) + milliseconds(1));
    const auto end = until.value_or(deadline);
    if (now >= end) break;
    fds.clear();
    polled.clear();
    for (std::size_t i = 0; i < exchanges.size(); ++i) {
      if (!exchanges[i]) continue;
      fds.push_back(pollfd{exchanges[i]->fd(), exchanges[i]->events(), 0});
      polled.push_back(i);
    }
    // Wakes at the soonest deadline too, so that an exchange past it is finished.
    const auto wait_ms = std::chrono::ceil<milliseconds>(end - now).count();
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<std::int64_t>(wait_ms, 1, 1000)));
    if (n < 0 && errno != EINTR) break;
    const auto after = SteadyClock::now();
    for (std::size_t j = 0; j < polled.size(); ++j) {
      auto& e = exchanges[polled[j]];
      e->advance(n > 0 ? fds[j].revents : 0);
      e->expire(after);
    }
  }
  return replies;  // an exchange not finished by now is dropped: no answer from its node
}

std::size_t RedlockService::answers(const Replies& replies) {
  return static_cast<std::size_t>(std::count_if(replies.begin(), replies.end(), [](const auto& r) { return r.has_value(); }));
}

void RedlockService::check_errors(const Replies& replies) const {
  std::map<std::string, std::size_t> codes;
  for (const auto& r : replies) {
    if (r && r->is_error() && ++codes[text(error_code(*r))] >= quorum()) check_reply(static_cast<const ReplyView&>(*r), "redlock");
  }
}

RedlockService::Decided RedlockService::reaching(std::size_t asked, std::int64_t value) const {
  return [this, asked, value](const Replies& replies) {
    const std::size_t answered = answers(replies);
    if (asked < quorum()) return answered >= asked;  // no majority among them: every answer counts
    const std::size_t yes = count_said(replies, value);
    return yes >= quorum() || yes + (asked - answered) < quorum();
  };
}

std::size_t RedlockService::count_said(const Replies& replies, std::int64_t value) {
  return static_cast<std::size_t>(std::count_if(replies.begin(), replies.end(), [value](const auto& r) { return said(r, value); }));
}

std::size_t RedlockService::raise(const LockKeys& k, const OwnerSecret& secret, std::int64_t fence,
                                  const std::vector<bool>& held, SteadyClock::time_point deadline) {
  const std::size_t asked = static_cast<std::size_t>(std::count(held.begin(), held.end(), true));
  const Replies raised = on_nodes(&ScriptSet::raise_fence, {k.lease, k.fence},
                                  {text(secret_bytes(secret)), std::to_string(fence)}, deadline, held, reaching(asked, 1));
  return count_said(raised, 1);
}

AcquireResult RedlockService::try_acquire(const AcquireRequest& request) {
  if (request.mode != LockMode::kExclusive) throw UnsupportedError("redlock: no shared leases", kServiceName);
  const LockKeys k = keys(request.name);
  const auto sent_at = SteadyClock::now();
  // A grant is worth nothing after its validity window: the round ends there at the latest.
  const auto deadline = std::min(deadline_now(), sent_at + request.ttl - drift(request.ttl));
  AcquireCall call = AcquireCall::of(request);
  call.permits = 0;  // Redlock has no semaphores: the trait says so, and the engine refuses them
  const Replies replies = on_nodes(&ScriptSet::acquire, acquire_keys(k), call.argv(), deadline, {},
                                   reaching(nodes_.size(), 1));
  check_errors(replies);
  std::vector<bool> held(nodes_.size(), false);
  std::int64_t fence = 0;
  std::int64_t remaining = -1;  // the soonest a refusing node's holder expires
  for (std::size_t i = 0; i < replies.size(); ++i) {
    if (!replies[i] || replies[i]->is_error()) continue;
    const AcquireReply reply = AcquireReply::read(*replies[i]);
    held[i] = reply.outcome == AcquireReply::Outcome::kAcquired;
    if (held[i]) fence = std::max(fence, reply.fence);
    const std::int64_t left = held[i] ? -1 : reply.holder_remaining.count();
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
  // Given back on every node when any took it or did not answer (a late node may still take it
  // for this secret), without waiting for more than the round needs.
  const std::size_t answered = answers(replies);
  if (count > 0 || answered < nodes_.size()) {
    release_all(LeaseKey{request.name, LockMode::kExclusive, request.secret, 0}, false,
                std::max(deadline, SteadyClock::now() + kLeastRoundTime));
  }
  if (answered < quorum()) {
    throw ConnectionError("redlock: " + std::to_string(answered) + " of " + std::to_string(nodes_.size()) +
                              " nodes answered within the lease's validity and the call's deadline; a lease needs " + std::to_string(quorum()),
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
  const std::size_t n = nodes_.size();
  // Decided once a majority renewed, or a majority found it gone.
  const Replies replies = on_nodes(&ScriptSet::renew, {k.lease}, {secret, ttl_us, "x"}, deadline, {},
                                   [this, n](const Replies& r) {
                                     return reaching(n, 1)(r) || count_said(r, 0) >= quorum();
                                   });
  std::vector<bool> renewed(n), lost(n);
  std::int64_t fence = 0;
  for (std::size_t i = 0; i < replies.size(); ++i) {
    renewed[i] = said(replies[i], 1);
    lost[i] = said(replies[i], 0);
    if (renewed[i]) fence = std::max(fence, RenewReply::read(*replies[i]).fence);
  }
  std::size_t count = count_said(replies, 1);
  const std::size_t gone = count_said(replies, 0);
  if (count > 0 && gone > 0 && gone < quorum()) {
    // Nodes that lost the key (a restart): take them again, with the lease's fence.
    AcquireCall call;
    call.secret = lease.secret;
    call.ttl = ttl;
    const Replies retaken = on_nodes(&ScriptSet::acquire, acquire_keys(k), call.argv(), deadline, lost, reaching(gone, 1));
    std::vector<bool> again(n);
    for (std::size_t i = 0; i < retaken.size(); ++i) {
      again[i] = lost[i] && retaken[i] && !retaken[i]->is_error() &&
                 AcquireReply::read(*retaken[i]).outcome == AcquireReply::Outcome::kAcquired;
    }
    count += raise_fences_ ? raise(k, *lease.secret, fence, again, deadline)
                           : static_cast<std::size_t>(std::count(again.begin(), again.end(), true));
  }
  RenewResult result;
  const bool in_time = SteadyClock::now() - sent_at + drift(ttl) < ttl;
  if (count >= quorum() && in_time) {
    result.renewed = true;
    return result;
  }
  if (gone >= quorum()) return result;  // a majority no longer has it: lost now
  // A minority "not held" proves nothing (a node the
  // lease never took answers so too, while the others restart with their keys): the engine
  // tries again until the lease's safe-until, then it is lost.
  throw ConnectionError("redlock: the lease was renewed on " + std::to_string(count) + " of " +
                            std::to_string(n) + " nodes in time",
                        kServiceName);
}

std::pair<std::size_t, std::size_t> RedlockService::release_all(const LeaseKey& lease, bool latch,
                                                                SteadyClock::time_point deadline) {
  const LockKeys k = keys(lease.name);
  const std::size_t n = nodes_.size();
  // Decided once a majority released, or a majority does not hold it (released on 1 and 2 "not
  // held": the lease was gone), or neither can happen any more.
  const Replies replies =
      on_nodes(&ScriptSet::release, {k.lease, k.fence, k.queue, k.queue_info, k.latch(owner_digest(*lease.secret))},
               {text(secret_bytes(*lease.secret)), "x", release_channel(prefix_), text(lease.name), latch ? "1" : "0", "1", "0"},
               deadline, {}, [this, n](const Replies& r) {
                 const std::size_t released = count_said(r, 1) + count_said(r, 2), not_held = count_said(r, 0);
                 const std::size_t pending = n - answers(r);
                 return released >= quorum() || not_held >= quorum() ||
                        (released + pending < quorum() && not_held + pending < quorum());
               });
  return {count_said(replies, 1) + count_said(replies, 2), count_said(replies, 0)};
}

bool RedlockService::release(const LeaseKey& lease) {
  const auto [released, not_held] = release_all(lease, true, deadline_now());
  if (released >= quorum()) return true;
  // A majority no longer had it (taken over after a node lost it, or expired): the lease was
  // gone, whatever a minority still held.
  if (not_held >= quorum()) return false;
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

// A lease is listed when a majority of all the nodes show it (one holder, one fence); its details
// are the first such node's. One shown by fewer, that the nodes which did not answer could make a
// majority of, may be held or not: the listing of every name leaves it out, the inspection of
// one name throws ConnectionError rather than call it free.
std::vector<LeaseInfo> RedlockService::list(std::optional<std::string_view> name) {
  std::vector<std::string> lease_keys;
  if (name) {
    lease_keys.push_back(keys(*name).lease);
  } else {
    std::size_t scanned = 0;
    for (auto& node : nodes_) {
      try {
        auto found = scan_lease_keys(*node, prefix_);
        lease_keys.insert(lease_keys.end(), found.begin(), found.end());
        ++scanned;
      } catch (const ConnectionError&) {
      }
    }
    if (scanned < quorum()) {
      throw ConnectionError("redlock: too few nodes answered the listing by the call's deadline", kServiceName);
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
  if (answered < quorum()) throw ConnectionError("redlock: too few nodes answered the listing by the call's deadline", kServiceName);
  const std::size_t silent = nodes_.size() - answered;
  std::vector<LeaseInfo> out;
  for (auto& [key, entry] : seen) {
    if (entry.first < quorum() && name && entry.first + silent >= quorum()) {
      throw ConnectionError("redlock: '" + std::string(*name) + "' shows " + entry.second.holder + " as its holder on " +
                                std::to_string(entry.first) + " of the " + std::to_string(answered) +
                                " nodes that answered, and the silent ones could make a majority: cannot tell whether it is held",
                            kServiceName);
    }
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
