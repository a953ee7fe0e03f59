// The Redis lock service. Internal; the public face is dblock/redis/redis.h.
//
// Connections: a pool for the scripts (each used by one thread at a time) and one subscriber
// connection owned by the subscriber's thread. Every call is bounded by call_deadline() (at most
// kLongestCall ahead when the engine set none).
//
// Capabilities: FairQueue (the waiters' zset), WakeEvents (subscriber.h), AuditLog (a stream the
// force-release script appends to). No Maintenance (keys expire on the server: nothing to reap,
// no schema), no HolderProbe (a release grants or names the next waiter), no SessionLocks, no
// SqlFeatures.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_REDIS_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_REDIS_REDIS_SERVICE_H_

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "connection.h"
#include "dblock/capabilities.h"
#include "dblock/errors.h"
#include "dblock/redis/redis.h"
#include "error_map.h"
#include "keys.h"
#include "subscriber.h"

namespace dblock::redis {

class RedisService final : public LeaseService, public FairQueue, public AuditLog {
 public:
  // Connects, checks the server and loads the scripts. Throws as make_service() documents.
  explicit RedisService(Options options);

  std::string_view name() const override { return kServiceName; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  // Compare-and-delete, so that the name is free at once rather than when its PX ends.
  void lease_lost(const LeaseKey& lease) noexcept override;
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  FairQueue* fair_queue() noexcept override { return this; }
  WakeEvents* wake_events() noexcept override { return subscriber_ ? &*subscriber_ : nullptr; }
  AuditLog* audit_log() noexcept override { return this; }

  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;

  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

  // Read by the subscriber: does `secret` hold `name` exclusively and live?
  std::optional<LeaseGrant> confirm_grant(std::string_view name, const OwnerSecret& secret, const LeaseGrant& claimed);

 private:
  struct Script {
    const char* name;
    std::string text;  // the prelude and the script
    std::string sha;   // SCRIPT LOAD's answer
  };
  // How a call may be repeated after a failed exchange.
  enum class Repeat {
    kSafe,     // idempotent, or made so by the script (a release reads its latch): once more on a fresh connection
    kInDoubt,  // never: a failure after sending is an InDoubtError
  };

  LockKeys keys(std::string_view name) const;
  Attempt attempt(const AcquireRequest& request, bool queue, const Place& place);
  // Runs `script` by the call's deadline on a pooled connection, repeating as `repeat` allows.
  Reply eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string_view>& args,
             Repeat repeat, std::optional<SteadyClock::time_point> deadline = std::nullopt);
  Reply eval_on(Connection& c, const Script& script, const std::vector<std::string>& keys,
                const std::vector<std::string_view>& args, SteadyClock::time_point deadline);
  // One call's exchange with the pool; `f(connection, deadline)`. Translates Broken.
  // `deadline`: the call's (deadline_now()) unless given.
  template <typename F>
  auto with_connection(F&& f, Repeat repeat, std::optional<SteadyClock::time_point> deadline = std::nullopt);
  bool release_script(const LeaseKey& lease, bool latch, std::optional<SteadyClock::time_point> deadline);
  // Checks the server (master, noeviction) and loads the scripts, on the first connection.
  void check_server_and_load(Connection& c, SteadyClock::time_point deadline);
  std::vector<LeaseInfo> describe(const std::vector<std::string>& lease_keys, bool foreign_too);

  const Options options_;
  Pool pool_;
  Script acquire_, renew_, release_, force_release_, describe_, position_, leave_, confirm_;
  std::optional<Subscriber> subscriber_;
};

// The deadline of the call being made: call_deadline(), at most kLongestCall ahead (a direct call
// on the service, outside the engine, has none).
inline constexpr std::chrono::seconds kLongestCall{60};
inline SteadyClock::time_point deadline_now() {
  return std::min(call_deadline(), SteadyClock::now() + kLongestCall);
}

template <typename F>
auto RedisService::with_connection(F&& f, Repeat repeat, std::optional<SteadyClock::time_point> given) {
  const auto deadline = given.value_or(deadline_now());
  for (int round = 0;; ++round) {
    bool fresh = false;
    try {
      std::unique_ptr<Connection> c = pool_.borrow(deadline, fresh);
      auto result = f(*c, deadline);
      pool_.give_back(std::move(c));
      return result;
    } catch (const Broken& broken) {
      // A pooled connection may be stale (the server restarted or dropped it): once more on a new one.
      if (round == 0 && !fresh && !broken.timed_out && (repeat == Repeat::kSafe || !broken.sent)) {
        pool_.clear();
        continue;
      }
      if (broken.sent && repeat == Repeat::kInDoubt) throw InDoubtError(broken.message, kServiceName);
      throw ConnectionError(broken.message, kServiceName, {}, !broken.timed_out);
    }
  }
}

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_REDIS_SERVICE_H_
