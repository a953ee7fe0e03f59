// The Redis services' wake events (Events): one subscriber connection per node, each owned by its
// thread, on the prefix's release channel, all feeding one EventFanout. Internal. The payloads are
// EventFanout's (event_fanout.h), sent by the release scripts (scripts.h, hand_on); any client can
// PUBLISH one, so a grant counts only once confirm_grant has read the lease.
//
// hiredis 0.14 kills a context whose read times out, so a subscriber never sets one: it polls its
// socket (100 ms, so a shutdown is noticed) and PINGs the server every second; a connection that
// stays silent past kSilence is dropped and made again, and every subscribed name is told to look
// (events may have been missed). Waiters poll meanwhile.
//
// Thread-safe. set_listener(nullptr) returns only once no listener call is in flight.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_SUBSCRIBER_H_
#define DBLOCK_SRC_BACKENDS_REDIS_SUBSCRIBER_H_

#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dblock/redis/redis.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/event_fanout.h"
#include "dblock/service/thread_annotations.h"

namespace dblock::redis {

class Connection;

// One node's subscriber thread, started by start(), stopped by the destructor.
class Subscriber {
 public:
  Subscriber(Options node, std::string channel, service::EventFanout& fanout)
      : options_(std::move(node)), channel_(std::move(channel)), fanout_(fanout) {}
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;
  void start();

 private:
  void loop();
  // One connection's life: subscribes, then reads until it fails or the subscriber stops.
  void serve(Connection& c);
  bool stopping();

  const Options options_;
  const std::string channel_;
  service::EventFanout& fanout_;
  service::Mutex mutex_;
  std::condition_variable cv_;
  bool stop_ DBLOCK_GUARDED_BY(mutex_) = false;
  std::thread thread_;
};

// WakeEvents over the subscribers of one or more nodes.
class Events final : public WakeEvents {
 public:
  // `nodes`: one subscriber each, on `channel`.
  Events(const std::vector<Options>& nodes, const std::string& channel);

  void set_listener(Listener listener) override;
  void subscribe(std::string_view name) override { fanout_.subscribe(name); }
  void unsubscribe(std::string_view name) override { fanout_.unsubscribe(name); }

 private:
  service::EventFanout fanout_{0};
  std::once_flag started_;
  // Destroyed first (declared last): their threads stop before the fanout goes.
  std::vector<std::unique_ptr<Subscriber>> subscribers_;
};

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_SUBSCRIBER_H_
