#include "redis_service.h"

#include <algorithm>

#include "dblock/errors.h"
#include "scripts.h"

namespace dblock::redis {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

std::string_view secret_bytes(const OwnerSecret& secret) {
  return std::string_view(reinterpret_cast<const char*>(secret.bytes.data()), secret.bytes.size());
}

// The most lease_lost() waits for the server.
constexpr milliseconds kLeaseLostBound{500};

std::string_view mode_arg(LockMode mode) { return mode == LockMode::kExclusive ? "x" : "s"; }

std::string number(std::int64_t n) { return std::to_string(n); }

// "key:value" lines of INFO; "" when absent.
std::string info_field(std::string_view info, std::string_view field) {
  const std::string key = "\n" + std::string(field) + ":";
  const std::size_t at = ("\n" + std::string(info)).find(key);
  if (at == std::string::npos) return "";
  const std::size_t start = at + key.size() - 1;
  const std::size_t end = info.find_first_of("\r\n", start);
  return std::string(info.substr(start, end - start));
}

}  // namespace

RedisService::RedisService(Options options)
    : options_(std::move(options)),
      pool_(options_),
      acquire_{"acquire", std::string(scripts::kPrelude).append(scripts::kAcquire), {}},
      renew_{"renew", std::string(scripts::kPrelude).append(scripts::kRenew), {}},
      release_{"release", std::string(scripts::kPrelude).append(scripts::kRelease), {}},
      force_release_{"force-release", std::string(scripts::kPrelude).append(scripts::kForceRelease), {}},
      describe_{"describe", std::string(scripts::kPrelude).append(scripts::kDescribe), {}},
      position_{"position", std::string(scripts::kPrelude).append(scripts::kPosition), {}},
      leave_{"leave", std::string(scripts::kPrelude).append(scripts::kLeave), {}},
      confirm_{"confirm", std::string(scripts::kPrelude).append(scripts::kConfirm), {}} {
  with_connection([&](Connection& c, SteadyClock::time_point deadline) {
    check_server_and_load(c, deadline);
    return 0;
  }, Repeat::kSafe);
  if (options_.listen) {
    subscriber_.emplace(options_, release_channel(options_.prefix),
                        [this](std::string_view name, const OwnerSecret& secret, const LeaseGrant& claimed) {
                          return confirm_grant(name, secret, claimed);
                        });
  }
}

void RedisService::check_server_and_load(Connection& c, SteadyClock::time_point deadline) {
  const Reply info = check_reply(c.command({"INFO"}, deadline), "INFO");
  const std::string policy = info_field(info.text(), "maxmemory_policy");
  if (!policy.empty() && policy != "noeviction") {
    throw UsageError("redis: the server's maxmemory-policy is " + policy +
                         ": it may evict live leases; dblock needs maxmemory-policy noeviction",
                     kServiceName);
  }
  if (info_field(info.text(), "role") == "slave") {
    throw UsageError("redis: the server is a replica; dblock needs a master (a replica's keys follow another server)",
                     kServiceName);
  }
  for (Script* s : {&acquire_, &renew_, &release_, &force_release_, &describe_, &position_, &leave_, &confirm_}) {
    s->sha = std::string(check_reply(c.command({"SCRIPT", "LOAD", s->text}, deadline), "SCRIPT LOAD").text());
  }
}

ServiceTraits RedisService::traits() const {
  ServiceTraits traits;
  traits.shared_leases = true;
  return traits;
}

LockKeys RedisService::keys(std::string_view name) const {
  // With no prefix a lease key is the name itself: one beginning with '{' could be a companion key
  // of another name.
  if (options_.prefix.empty() && !name.empty() && name.front() == '{') {
    throw UsageError("redis: with prefix \"\" a lock name may not begin with '{' (it could name another lock's "
                     "companion key)",
                     kServiceName);
  }
  return LockKeys(options_.prefix, name);
}

Reply RedisService::eval_on(Connection& c, const Script& script, const std::vector<std::string>& keys,
                            const std::vector<std::string_view>& args, SteadyClock::time_point deadline) {
  const std::string key_count = number(static_cast<std::int64_t>(keys.size()));
  std::vector<std::string_view> argv{"EVALSHA", script.sha, key_count};
  for (const auto& k : keys) argv.push_back(k);
  argv.insert(argv.end(), args.begin(), args.end());
  Reply reply = c.command(argv, deadline);
  if (reply.is_error() && error_code(reply) == "NOSCRIPT") {  // a restart or SCRIPT FLUSH emptied the cache
    argv[0] = "EVAL";
    argv[1] = script.text;
    reply = c.command(argv, deadline);
  }
  return check_reply(std::move(reply), script.name);
}

Reply RedisService::eval(const Script& script, const std::vector<std::string>& keys,
                         const std::vector<std::string_view>& args, Repeat repeat,
                         std::optional<SteadyClock::time_point> deadline) {
  return with_connection(
      [&](Connection& c, SteadyClock::time_point by) { return eval_on(c, script, keys, args, by); }, repeat,
      deadline);
}

// ---- leases ----

AcquireResult RedisService::try_acquire(const AcquireRequest& request) { return attempt(request, false, Place{}).result; }

FairQueue::Attempt RedisService::attempt_in_line(const AcquireRequest& request, const Place& place) {
  return attempt(request, true, place);
}

FairQueue::Attempt RedisService::attempt(const AcquireRequest& request, bool queue, const Place& place) {
  const LockKeys k = keys(request.name);
  const std::string ttl_us = number(request.ttl.count() * 1000);
  const std::string ticket = number(queue ? place.ticket : 0);
  const std::string hold_us = number(place.hold_for.count() * 1000);
  const Reply r = eval(acquire_, {k.lease, k.fence, k.queue, k.queue_info},
                       {secret_bytes(*request.secret), request.holder, ttl_us, mode_arg(request.mode), ticket,
                        queue ? "1" : "0", hold_us},
                       Repeat::kSafe);
  Attempt out;
  if (r[0].integer() == 1) {
    out.result.acquired = true;
    out.result.fence = r[1].integer();
    out.result.expires_at_us = r[2].integer();
    return out;
  }
  out.result.holder_remaining = milliseconds(r[1].integer(-1));
  if (r.size() >= 4) {
    out.ticket = r[2].integer();
    out.position = static_cast<int>(r[3].integer());
  }
  return out;
}

RenewResult RedisService::renew(const LeaseKey& lease, milliseconds ttl) {
  const LockKeys k = keys(lease.name);
  const std::string ttl_us = number(ttl.count() * 1000);
  const Reply r = eval(renew_, {k.lease}, {secret_bytes(*lease.secret), ttl_us, mode_arg(lease.mode)}, Repeat::kSafe);
  RenewResult result;
  result.renewed = r[0].integer() == 1;
  if (result.renewed) result.expires_at_us = r[1].integer();
  return result;
}

bool RedisService::release_script(const LeaseKey& lease, bool latch,
                                  std::optional<SteadyClock::time_point> deadline) {
  const LockKeys k = keys(lease.name);
  const std::string channel = release_channel(options_.prefix);
  const Reply r = eval(release_, {k.lease, k.fence, k.queue, k.queue_info, k.latch},
                       {secret_bytes(*lease.secret), mode_arg(lease.mode), channel, lease.name, latch ? "1" : "0"},
                       latch ? Repeat::kSafe : Repeat::kInDoubt, deadline);
  return r.integer() != 0;  // 2: released by the first try, whose reply was lost
}

bool RedisService::release(const LeaseKey& lease) { return release_script(lease, true, std::nullopt); }

void RedisService::lease_lost(const LeaseKey& lease) noexcept {
  try {
    // Called on the renewal thread with no deadline of its own: a short one, so that a stalled
    // connection delays neither the owner's on_lost nor the other leases' renewals.
    release_script(lease, false, SteadyClock::now() + kLeaseLostBound);
  } catch (const std::exception&) {
    // Best effort: the key expires on the server by itself.
  }
}

bool RedisService::force_release(std::string_view name, std::string_view by) {
  const LockKeys k = keys(name);
  const std::string channel = release_channel(options_.prefix);
  const Reply r = eval(force_release_, {k.lease, k.fence, k.queue, k.queue_info, audit_key(options_.prefix)},
                       {channel, name, by}, Repeat::kInDoubt);
  return r.integer() == 1;
}

std::optional<LeaseGrant> RedisService::confirm_grant(std::string_view name, const OwnerSecret& secret,
                                                      const LeaseGrant& claimed) {
  const LockKeys k = keys(name);
  const Reply r = eval(confirm_, {k.lease}, {secret_bytes(secret)}, Repeat::kSafe);
  if (r.size() < 3) return std::nullopt;
  LeaseGrant grant = claimed;
  grant.fence = r[0].integer();
  grant.expires_at_us = r[1].integer();
  grant.granted_for = microseconds(r[2].integer());
  grant.tag = 0;
  return grant;
}

// ---- the line ----

void RedisService::leave(std::string_view name, const OwnerSecret& secret) {
  const LockKeys k = keys(name);
  const Reply r = eval(leave_, {k.lease, k.queue, k.queue_info}, {secret_bytes(secret)}, Repeat::kSafe);
  // A release granted this waiter the lease after it gave up: hand it on, as its holder would.
  if (r.integer() == 1) release(LeaseKey{name, LockMode::kExclusive, &secret, 0});
}

FairQueue::Position RedisService::position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
  const LockKeys k = keys(name);
  const std::string t = number(ticket);
  const Reply r = eval(position_, {k.lease, k.queue, k.queue_info}, {secret_bytes(secret), t}, Repeat::kSafe);
  return Position{static_cast<int>(r[0].integer()), milliseconds(r[1].integer(-1))};
}

}  // namespace dblock::redis
