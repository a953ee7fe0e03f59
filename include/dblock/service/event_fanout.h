// The engine-facing half of a service's wake events (WakeEvents), the same for every service that
// pushes them over a channel (PostgreSQL's LISTEN, Redis's SUBSCRIBE): the listener, the names
// waiters are subscribed to, and the one payload format. A service owns one and its own thread feeds it.
//
// Payloads (fields separated by \x1f; lock names never contain control characters): "<name>"
// (anyone may look), "<name>\x1f<ticket of the waiter whose turn it is>", or, when a release
// granted that waiter the lease, "<name>\x1f<ticket>\x1f<fence>\x1f<granted us>\x1f<expiry us>".
// Anything else wakes every waiter of the name without naming one. A grant is a claim anyone who
// can reach the channel can make: the engine confirms it (WakeEvents::confirm_grant) before it counts.
//
// Thread-safe. set_listener(nullptr) returns only once no listener call is in flight.
#ifndef DBLOCK_SERVICE_EVENT_FANOUT_H_
#define DBLOCK_SERVICE_EVENT_FANOUT_H_

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "dblock/service/capabilities.h"
#include "dblock/service/thread_annotations.h"

namespace dblock::service {

class EventFanout {
 public:
  // `grant_tag`: the tag a granted lease carries (LeaseGrant::tag).
  explicit EventFanout(std::uint32_t grant_tag) : grant_tag_(grant_tag) {}

  // Returns whether a listener is set now (the service's thread then has someone to feed).
  bool set_listener(WakeEvents::Listener listener);
  void subscribe(std::string_view name);
  void unsubscribe(std::string_view name);

  // One payload from the channel, to the listener.
  void dispatch(std::string_view payload);
  // After the channel was (re)made: events may have been missed, so every subscribed name is told
  // to look.
  void dispatch_all();

 private:
  const std::uint32_t grant_tag_;
  std::mutex dispatch_mutex_;  // held while the listener runs; taken before mutex_
  Mutex mutex_;
  WakeEvents::Listener listener_ DBLOCK_GUARDED_BY(mutex_);
  std::map<std::string, int> subscribed_ DBLOCK_GUARDED_BY(mutex_);
};

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_EVENT_FANOUT_H_
