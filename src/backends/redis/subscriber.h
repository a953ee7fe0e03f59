// The Redis service's wake events: one subscriber connection per service, owned by its thread,
// on the prefix's release channel. Internal. The payloads are EventFanout's (event_fanout.h), sent
// by the release scripts (scripts.h, hand_on); any client can PUBLISH one, so a grant counts only
// once confirm_grant has read the lease.
//
// hiredis 0.14 kills a context whose read times out, so the subscriber never sets one: it polls
// its socket (100 ms, so a shutdown is noticed) and PINGs the server every second; a connection
// that stays silent past kSilence is dropped and made again, and every subscribed name is told to
// look (events may have been missed). Waiters poll meanwhile.
//
// Thread-safe. set_listener(nullptr) returns only once no listener call is in flight.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_SUBSCRIBER_H_
#define DBLOCK_SRC_BACKENDS_REDIS_SUBSCRIBER_H_

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "dblock/capabilities.h"
#include "dblock/redis/redis.h"
#include "event_fanout.h"

namespace dblock::redis {

class Connection;

class Subscriber final : public WakeEvents {
 public:
  using Confirm = std::function<std::optional<LeaseGrant>(std::string_view name, const OwnerSecret& secret,
                                                          const LeaseGrant& claimed)>;

  Subscriber(Options options, std::string channel, Confirm confirm);
  ~Subscriber() override;

  void set_listener(Listener listener) override;
  void subscribe(std::string_view name) override { fanout_.subscribe(name); }
  void unsubscribe(std::string_view name) override { fanout_.unsubscribe(name); }
  std::optional<LeaseGrant> confirm_grant(std::string_view name, const OwnerSecret& secret,
                                          const LeaseGrant& claimed) override {
    return confirm_(name, secret, claimed);
  }

 private:
  void loop();
  // One connection's life: subscribes, then reads until it fails or the subscriber stops.
  void serve(Connection& c);
  bool stopping();

  const Options options_;
  const std::string channel_;
  const Confirm confirm_;

  detail::EventFanout fanout_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stop_ = false;  // GUARDED_BY(mutex_)
  std::thread thread_;
};

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_SUBSCRIBER_H_
