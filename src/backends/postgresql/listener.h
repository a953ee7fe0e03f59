// The PostgreSQL service's wake events: one LISTEN connection per service, owned by its thread,
// on the shared release channel and on this instance's own wake channel. Internal.
//
// Payloads (fields separated by \x1f; lock names never contain control characters): "<name>"
// (anyone may look), "<name>\x1f<ticket of the waiter whose turn it is>", or, when the release
// granted that waiter the lease, "<name>\x1f<ticket>\x1f<fence>\x1f<granted us>\x1f<expiry us>"
// (sql::kReleaseExclusiveInPlace). Anything else wakes every waiter of the name without naming one.
// Any role that can connect can NOTIFY any channel: a grant payload is a claim, which the waiter
// has confirmed (confirm_grant) before it counts as the lease.
//
// Thread-safe. set_listener(nullptr) returns only once no listener call is in flight.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_LISTENER_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_LISTENER_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <mutex>
#include <string>
#include <thread>

#include "dblock/capabilities.h"
#include "socket_deadlines.h"

namespace dblock::postgresql {

class NotifyListener final : public WakeEvents {
 public:
  // Reads whether a secret holds a name (WakeEvents::confirm_grant), on the service's connections.
  using Confirm = std::function<std::optional<LeaseGrant>(std::string_view name, const OwnerSecret& secret,
                                                          const LeaseGrant& claimed)>;

  // `channel`: the shared channel every instance listens on; this instance also listens on
  // channel + "_" + wake_slot(). `grant_tag`: the tag a grant's lease carries.
  // `deadlines` bounds the LISTEN connection's setup and teardown; it outlives the listener.
  NotifyListener(std::string conninfo, std::string channel, std::uint32_t grant_tag, Confirm confirm,
                 dblock::sql::SocketDeadlines& deadlines);
  ~NotifyListener() override;

  const std::string& channel() const { return channel_; }
  // This instance's slot (0-1023) in its waiters' tickets: a release that names one of them
  // notifies channel() + "_" + slot only. Random, so that instances rarely share one.
  int wake_slot() const { return wake_slot_; }

  void set_listener(Listener listener) override;
  void subscribe(std::string_view name) override;
  void unsubscribe(std::string_view name) override;
  std::optional<LeaseGrant> confirm_grant(std::string_view name, const OwnerSecret& secret,
                                          const LeaseGrant& claimed) override {
    return confirm_(name, secret, claimed);
  }

 private:
  void loop();
  void dispatch(const std::string& payload);
  // After (re)connecting: events may have been missed, so every subscribed name is told to look.
  void dispatch_all();

  // Constant after construction.
  const std::string conninfo_;
  const std::string channel_;
  const std::uint32_t grant_tag_;
  const Confirm confirm_;
  const int wake_slot_;
  const std::string wake_channel_;

  std::mutex dispatch_mutex_;  // held while the listener runs; taken before mutex_
  std::mutex mutex_;
  std::condition_variable cv_;
  Listener on_event_;                 // GUARDED_BY(mutex_)
  std::map<std::string, int> subscribed_;  // GUARDED_BY(mutex_)
  bool stop_ = false;                  // GUARDED_BY(mutex_)
  dblock::sql::SocketDeadlines& deadlines_;
  std::thread thread_;
};

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_LISTENER_H_
