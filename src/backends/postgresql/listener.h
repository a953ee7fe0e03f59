// The PostgreSQL service's wake events: one LISTEN connection per service, owned by its thread,
// on the shared release channel and on this instance's own wake channel. Internal.
//
// Any role that can connect can LISTEN on any channel, so the payloads, sent by the release
// statements (sql::kReleaseExclusiveInPlace), carry no lock name: "<ticket>" (the waiter whose
// turn it is; 0: whoever is first) or "<ticket>\x1f<fence>\x1f<granted us>\x1f<expiry us>" (a
// grant). The listener maps the tickets of this instance's waiters (remember_ticket) back to their
// names and hands EventFanout its payloads (event_fanout.h); a ticket it does not know (one that
// raced its remember_ticket, an old version's, a payload it cannot read) makes every subscribed
// waiter look: a wake-up more, never a missed one. Any role that can connect can also NOTIFY any
// channel: a grant payload is a claim, which the waiter has confirmed (confirm_grant) before it
// counts as the lease.
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

#include "dblock/service/capabilities.h"
#include "dblock/service/event_fanout.h"
#include "dblock/service/socket_deadlines.h"
#include "dblock/service/thread_annotations.h"

namespace dblock::postgresql {

class NotifyListener final : public WakeEvents {
 public:
  // `channel`: the shared channel every instance listens on; this instance also listens on
  // channel + "_" + wake_slot(). `grant_tag`: the tag a grant's lease carries.
  // `deadlines` bounds the LISTEN connection's setup and teardown; it outlives the listener.
  NotifyListener(std::string conninfo, std::string channel, std::uint32_t grant_tag,
                 dblock::service::SocketDeadlines& deadlines);
  ~NotifyListener() override;

  const std::string& channel() const { return channel_; }
  // This instance's slot (0-1023) in its waiters' tickets: a release that names one of them
  // notifies channel() + "_" + slot only. Random, so that instances rarely share one.
  int wake_slot() const { return wake_slot_; }

  void set_listener(Listener listener) override;
  void subscribe(std::string_view name) override { fanout_.subscribe(name); }
  // Also forgets the tickets remembered for `name`.
  void unsubscribe(std::string_view name) override;
  // `ticket` (from the queue) is a waiter of `name` in this instance, until `name` is unsubscribed.
  void remember_ticket(std::int64_t ticket, std::string_view name);
  // One payload from a channel (see above), to the waiters it concerns.
  void dispatch(std::string_view payload);

 private:
  void loop();

  // Constant after construction.
  const std::string conninfo_;
  const std::string channel_;
  const int wake_slot_;
  const std::string wake_channel_;

  service::EventFanout fanout_;
  service::Mutex tickets_mutex_;
  std::map<std::int64_t, std::string> tickets_ DBLOCK_GUARDED_BY(tickets_mutex_);  // this instance's waiters
  service::Mutex mutex_;
  std::condition_variable cv_;
  bool stop_ DBLOCK_GUARDED_BY(mutex_) = false;
  dblock::service::SocketDeadlines& deadlines_;
  std::thread thread_;
};

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_LISTENER_H_
