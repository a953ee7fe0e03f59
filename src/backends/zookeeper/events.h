// WakeEvents of the ZooKeeper service: a waiter's attempt that is refused watches the node it
// waits for (an exclusive waiter: the child just ahead; a reader: the nearest writer ahead), and
// that node's deletion posts kReleased naming the waiter's ticket (a reader's: 0, anyone's). A
// reconnected session posts kReleased for every subscribed name (events may have been missed).
// Events are hints: the waiter's next attempt reads the children and decides.
//
// Threads: watchers and completions run on the client's completion thread; they only post to the
// listener (which never blocks) and send asynchronous requests. The watch contexts belong to this
// object, which must outlive every session whose handle holds them (the service declares it
// before its session). Thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_EVENTS_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_EVENTS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "dblock/service/capabilities.h"
#include "dblock/service/thread_annotations.h"
#include "session.h"

namespace dblock::zookeeper {

class Events {
 public:
  struct Watch;  // one armed watch (events.cc)

  Events();
  ~Events();

  void set_listener(WakeEvents::Listener listener);
  void subscribe(std::string_view name);
  void unsubscribe(std::string_view name);

  // Watches `path` (a node of lock `name`) for its deletion, to post kReleased with `ticket`. A
  // watch of the same path and ticket already armed is not armed again. Never blocks.
  void watch(Session& session, std::string_view name, const std::string& path, std::int64_t ticket) noexcept;
  // Posts kReleased for every subscribed name (after a reconnect). Never blocks.
  void post_all() noexcept;

  // Posts kLost for `secret`'s lease on `name`. Never blocks.
  void post_lost(const std::string& name, const OwnerSecret& secret, const std::string& reason) noexcept;

  // For the client's callbacks (events.cc).
  void post_released(const std::string& name, std::int64_t ticket) noexcept;
  void disarm(Watch* watch) noexcept;

 private:
  // Gives `event` to the listener, if any; a listener's exception is dropped. Never blocks.
  void post(const WakeEvents::Event& event) noexcept;

  service::Mutex mutex_;
  WakeEvents::Listener listener_ DBLOCK_GUARDED_BY(mutex_);
  std::map<std::string, int> subscribed_;      // name -> count; guarded by mutex_
  std::map<std::string, std::unique_ptr<Watch>> armed_;  // path + ticket -> watch; guarded by mutex_
};

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_EVENTS_H_
