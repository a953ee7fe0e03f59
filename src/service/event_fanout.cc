#include "dblock/service/event_fanout.h"

#include <algorithm>
#include <vector>

namespace dblock::service {

bool EventFanout::set_listener(WakeEvents::Listener listener) {
  std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
  MutexLock lock(mutex_);
  listener_ = std::move(listener);
  return static_cast<bool>(listener_);
}

void EventFanout::subscribe(std::string_view name) {
  MutexLock lock(mutex_);
  ++subscribed_[std::string(name)];
}

void EventFanout::unsubscribe(std::string_view name) {
  MutexLock lock(mutex_);
  auto it = subscribed_.find(std::string(name));
  if (it != subscribed_.end() && --it->second == 0) subscribed_.erase(it);
}

void EventFanout::dispatch(std::string_view payload) {
  std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
  WakeEvents::Listener listener;
  {
    MutexLock lock(mutex_);
    listener = listener_;
  }
  if (!listener) return;
  const std::size_t sep = payload.find('\x1f');
  WakeEvents::Event event;
  event.name = payload.substr(0, sep);
  if (sep != std::string_view::npos) {
    std::vector<std::int64_t> fields;
    try {
      for (std::size_t at = sep + 1; at <= payload.size();) {
        const std::size_t end = std::min(payload.find('\x1f', at), payload.size());
        fields.push_back(std::stoll(std::string(payload.substr(at, end - at))));
        at = end + 1;
      }
    } catch (const std::exception&) {
      fields.clear();
    }
    if (fields.size() == 1 || fields.size() == 4) event.next_ticket = fields[0];
    if (fields.size() == 4 && fields[0] != 0 && fields[2] > 0) {
      event.kind = WakeEvents::Kind::kGranted;
      event.grant = LeaseGrant{fields[0], fields[1], std::chrono::microseconds(fields[2]), fields[3], grant_tag_};
    }
  }
  listener(event);
}

void EventFanout::dispatch_all() {
  std::lock_guard<std::mutex> dispatching(dispatch_mutex_);
  std::vector<std::string> names;
  WakeEvents::Listener listener;
  {
    MutexLock lock(mutex_);
    listener = listener_;
    for (const auto& [name, count] : subscribed_) names.push_back(name);
  }
  if (!listener) return;
  for (const auto& name : names) {
    WakeEvents::Event event;
    event.name = name;
    listener(event);
  }
}

}  // namespace dblock::service
