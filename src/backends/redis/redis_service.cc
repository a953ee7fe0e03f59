#include "redis_service.h"

#include <algorithm>
#include <utility>

#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "listing.h"
#include "script_calls.h"

namespace dblock::redis {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// How often renewals and attempts read the server's maxmemory-policy again (at most).
constexpr std::chrono::seconds kPolicyCheckEvery{1};

// The value of `field` in INFO's "field:value" lines, "" when absent.
std::string info_value(std::string_view info, std::string_view field) {
  for (std::size_t at = 0; at < info.size();) {
    const std::size_t end = std::min(info.find_first_of("\r\n", at), info.size());
    const std::string_view line = info.substr(at, end - at);
    if (line.size() > field.size() && line.substr(0, field.size()) == field && line[field.size()] == ':') {
      return std::string(line.substr(field.size() + 1));
    }
    at = end + 1;
  }
  return "";
}

}  // namespace

RedisService::RedisService(const Options& options) : node_(options, deadline_now()) {
  check_permissions(node_, prefix(), deadline_now());
  policy_checked_at_ = SteadyClock::now();  // the node checked it at open
  if (options.listen) {
    events_.emplace(std::vector<Options>{options}, release_channel(options.prefix));
  }
}

ServiceTraits RedisService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = true;
  traits.permits = true;
  traits.hold_at_least = true;
  return traits;
}


// ---- leases ----

AcquireResult RedisService::try_acquire(const AcquireRequest& request) { return attempt(request, false, Place{}).result; }

FairQueue::Attempt RedisService::attempt_in_line(const AcquireRequest& request, const Place& place) {
  return attempt(request, true, place);
}

// ---- the eviction policy ----

std::string RedisService::evicting_policy() {
  {
    service::MutexLock lock(policy_mutex_);
    const auto now = SteadyClock::now();
    if (now - policy_checked_at_ < kPolicyCheckEvery) return policy_;
    policy_checked_at_ = now;  // this call reads it; the others meanwhile (and after a failure) go on as last read
  }
  const Reply info = node_.with_connection(
      [](Connection& c, SteadyClock::time_point deadline) {
        return check_reply(c.command({"INFO", "memory"}, deadline), "INFO memory");
      },
      Repeat::kSafe);
  std::string policy = info_value(info.text(), "maxmemory_policy");
  if (policy == "noeviction") policy.clear();
  service::MutexLock lock(policy_mutex_);
  policy_ = policy;
  if (!policy_.empty()) policy_reported_ = false;
  return policy_;
}

void RedisService::refuse_evicting_policy(std::string_view policy) const {
  throw UsageError("redis: the maxmemory-policy of " + node_.address() + " is now " + std::string(policy) +
                       ": it may evict live leases, so dblock acquires and renews none there (it needs "
                       "maxmemory-policy noeviction)",
                   kServiceName);
}

FairQueue::Attempt RedisService::attempt(const AcquireRequest& request, bool queue, const Place& place) {
  if (const std::string policy = evicting_policy(); !policy.empty()) refuse_evicting_policy(policy);
  AcquireCall call = AcquireCall::of(request);
  call.queue = queue;
  call.ticket = queue ? place.ticket : 0;
  call.hold_for = place.hold_for;
  const std::vector<std::string> argv = call.argv();
  const Reply r = node_.eval(node_.scripts().acquire, acquire_keys(keys(request.name)),
                             std::vector<std::string_view>(argv.begin(), argv.end()), Repeat::kSafe);
  const AcquireReply reply = AcquireReply::read(r);
  Attempt out;
  switch (reply.outcome) {
    case AcquireReply::Outcome::kPermitsDiffer:
      throw service::permits_mismatch(kServiceName, request.name, reply.held_permits, request.permits);
    case AcquireReply::Outcome::kAcquired:
      out.result.acquired = true;
      out.result.fence = reply.fence;
      out.result.expires_at_us = reply.expires_at_us;
      return out;
    case AcquireReply::Outcome::kRefused:
      out.result.holder_remaining = reply.holder_remaining;
      out.ticket = reply.ticket;
      out.position = reply.position;
      return out;
  }
  return out;
}

std::vector<AcquireResult> RedisService::try_acquire_all(const std::vector<AcquireRequest>& requests) {
  if (const std::string policy = evicting_policy(); !policy.empty()) refuse_evicting_policy(policy);
  std::vector<std::string> key_list, values;
  values.reserve(requests.size() * 2);  // stable: args below view into it
  for (const AcquireRequest& request : requests) {
    const LockKeys k = keys(request.name);
    key_list.insert(key_list.end(), {k.lease, k.fence, k.queue, k.queue_info});
    values.push_back(std::to_string(request.ttl.count() * 1000));
    values.push_back(std::string(mode_arg(request.mode)));
  }
  std::vector<std::string_view> args{requests.empty() ? std::string_view() : requests.front().holder};
  for (std::size_t i = 0; i < requests.size(); ++i) {
    args.insert(args.end(), {secret_bytes(*requests[i].secret), values[2 * i], values[2 * i + 1]});
  }
  const Reply r = node_.eval(node_.scripts().acquire_all, key_list, args, Repeat::kSafe);
  const AcquireAllReply reply = AcquireAllReply::read(r, requests.size());
  if (reply.outcome == AcquireAllReply::Outcome::kPermitsDiffer && reply.differing < requests.size()) {
    throw service::permits_mismatch(kServiceName, requests[reply.differing].name, reply.held_permits, 0);
  }
  std::vector<AcquireResult> out;
  for (const AcquireAllReply::Taken& taken : reply.taken) {
    AcquireResult& result = out.emplace_back();
    result.acquired = true;
    result.fence = taken.fence;
    result.expires_at_us = taken.expires_at_us;
  }
  return out;
}

RenewResult RedisService::renew(const LeaseKey& lease, milliseconds ttl) {
  // A policy switched after open may evict a lease while it is held: a lease there is lost. The
  // first renewal after a check that found it says why (a background error, retried soon); the
  // retry, and every other renewal while it lasts, is refused, which loses the lease at once.
  if (const std::string policy = evicting_policy(); !policy.empty()) {
    {
      service::MutexLock lock(policy_mutex_);
      if (!std::exchange(policy_reported_, true)) refuse_evicting_policy(policy);
    }
    return RenewResult{};
  }
  const LockKeys k = keys(lease.name);
  const std::string ttl_us = std::to_string(ttl.count() * 1000);
  const Reply r = node_.eval(node_.scripts().renew, {k.lease}, {secret_bytes(*lease.secret), ttl_us, mode_arg(lease.mode)}, Repeat::kSafe);
  const RenewReply reply = RenewReply::read(r);
  RenewResult result;
  result.renewed = reply.renewed;
  result.expires_at_us = reply.expires_at_us;
  return result;
}

bool RedisService::release_script(const LeaseKey& lease, bool latch,
                                  std::optional<SteadyClock::time_point> deadline) {
  const LockKeys k = keys(lease.name);
  const std::string channel = release_channel(prefix());
  const std::string hold_us = std::to_string(lease.hold_at_least.count() * 1000);
  const Reply r = node_.eval(node_.scripts().release, {k.lease, k.fence, k.queue, k.queue_info, k.latch(owner_digest(*lease.secret))},
                       {secret_bytes(*lease.secret), mode_arg(lease.mode), channel, lease.name, latch ? "1" : "0", "0", hold_us},
                       latch ? Repeat::kSafe : Repeat::kInDoubt, deadline);
  return r.integer() != 0;  // 2: released by the first try, whose reply was lost
}

bool RedisService::release(const LeaseKey& lease) { return release_script(lease, true, std::nullopt); }

void RedisService::lease_lost(const LeaseKey& lease) noexcept {
  try {
    release_script(lease, false, lease_lost_deadline());
  } catch (const std::exception&) {
    // Best effort: the key expires on the server by itself.
  }
}

bool RedisService::force_release(std::string_view name, std::string_view by) {
  const LockKeys k = keys(name);
  const std::string channel = release_channel(prefix());
  const Reply r = node_.eval(node_.scripts().force_release, {k.lease, k.fence, k.queue, k.queue_info, audit_key(prefix())},
                       {channel, name, by}, Repeat::kInDoubt);
  return r.integer() == 1;
}

std::optional<LeaseGrant> RedisService::confirm_grant(std::string_view name, const OwnerSecret& secret,
                                                      const LeaseGrant& claimed) {
  const LockKeys k = keys(name);
  const Reply r = node_.eval(node_.scripts().confirm, {k.lease}, {secret_bytes(secret)}, Repeat::kSafe);
  const ConfirmReply reply = ConfirmReply::read(r);
  if (!reply.held) return std::nullopt;
  LeaseGrant grant = claimed;
  grant.fence = reply.fence;
  grant.expires_at_us = reply.expires_at_us;
  grant.granted_for = reply.granted_for;
  grant.tag = 0;
  return grant;
}

// ---- admin ----

std::vector<LeaseInfo> RedisService::list(std::optional<std::string_view> name) {
  if (name) return describe(node_, {keys(*name).lease}, prefix(), true);
  // With prefix "" other strings in the database cannot be told from other clients' locks.
  std::vector<LeaseInfo> out = describe(node_, scan_lease_keys(node_, prefix()), prefix(),
                                        !prefix().empty());
  sort_by_name(out);
  return out;
}

std::vector<ForceReleaseRecord> RedisService::force_releases(std::optional<std::string_view> name, std::size_t limit) {
  return read_audit(node_, prefix(), name, limit);
}

// ---- the line ----

void RedisService::leave(std::string_view name, const OwnerSecret& secret) {
  const LockKeys k = keys(name);
  const Reply r = node_.eval(node_.scripts().leave, {k.lease, k.queue, k.queue_info}, {secret_bytes(secret)}, Repeat::kSafe);
  // A release granted this waiter the lease after it gave up: hand it on, as its holder would.
  if (r.integer() == 1) release(LeaseKey{name, LockMode::kExclusive, &secret, 0});
}

FairQueue::Position RedisService::position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
  const LockKeys k = keys(name);
  const std::string t = std::to_string(ticket);
  const Reply r = node_.eval(node_.scripts().position, {k.lease, k.queue, k.queue_info}, {secret_bytes(secret), t}, Repeat::kSafe);
  const PositionReply reply = PositionReply::read(r);
  return Position{reply.ahead, reply.holder_remaining};
}

}  // namespace dblock::redis
