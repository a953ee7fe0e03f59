#include "events.h"

#include <zookeeper/zookeeper.h>

#include <vector>

namespace dblock::zookeeper {

struct Events::Watch {
  Events* events = nullptr;
  std::string key;
  std::string name;
  std::string path;
  std::int64_t ticket = 0;
};

namespace {

void on_armed(int rc, const Stat*, const void* data);

// The watched node changed: deleted (post and disarm), its data set by a renewal (watch again),
// created (a container made again: post). Session events leave the watch to the session.
void on_watched(zhandle_t* handle, int type, int, const char*, void* context) {
  auto* w = static_cast<Events::Watch*>(context);
  if (type == ZOO_SESSION_EVENT || w == nullptr) return;
  if (type == ZOO_CHANGED_EVENT &&
      zoo_awexists(handle, w->path.c_str(), on_watched, w, on_armed, w) == ZOK) {
    return;
  }
  w->events->post_released(w->name, w->ticket);
  w->events->disarm(w);
}

// The exists reply comes before any event of its watch. No such node (or no answer): the waiter
// may attempt now. The watch stays registered with the client either way (for a creation), so the
// context stays armed.
void on_armed(int rc, const Stat*, const void* data) {
  auto* w = static_cast<Events::Watch*>(const_cast<void*>(data));
  if (rc != ZOK) w->events->post_released(w->name, w->ticket);
}

}  // namespace

Events::Events() = default;
Events::~Events() = default;

void Events::set_listener(WakeEvents::Listener listener) {
  service::MutexLock lock(mutex_);
  listener_ = std::move(listener);
}

void Events::subscribe(std::string_view name) {
  service::MutexLock lock(mutex_);
  ++subscribed_[std::string(name)];
}

void Events::unsubscribe(std::string_view name) {
  service::MutexLock lock(mutex_);
  const auto it = subscribed_.find(std::string(name));
  if (it != subscribed_.end() && --it->second <= 0) subscribed_.erase(it);
}

void Events::watch(Session& session, std::string_view name, const std::string& path, std::int64_t ticket) noexcept {
  try {
    const std::string key = path + "#" + std::to_string(ticket);
    Watch* w = nullptr;
    {
      service::MutexLock lock(mutex_);
      if (armed_.count(key) != 0) return;
      auto owned = std::make_unique<Watch>(Watch{this, key, std::string(name), path, ticket});
      w = owned.get();
      armed_.emplace(key, std::move(owned));
    }
    if (session.watch_exists(path, on_watched, w, on_armed) != 0) {
      post_released(std::string(name), ticket);  // not armed: the waiter attempts again
      disarm(w);
    }
  } catch (const std::exception&) {
    // Out of memory: the waiter polls.
  }
}

void Events::post(const WakeEvents::Event& event) noexcept {
  WakeEvents::Listener listener;
  {
    service::MutexLock lock(mutex_);
    listener = listener_;
  }
  if (!listener) return;
  try {
    listener(event);
  } catch (...) {
  }
}

void Events::post_released(const std::string& name, std::int64_t ticket) noexcept {
  WakeEvents::Event event;
  event.kind = WakeEvents::Kind::kReleased;
  event.name = name;
  event.next_ticket = ticket;
  post(event);
}

void Events::post_lost(const std::string& name, const OwnerSecret& secret, const std::string& reason) noexcept {
  WakeEvents::Event event;
  event.kind = WakeEvents::Kind::kLost;
  event.name = name;
  event.secret = &secret;
  event.reason = reason;
  post(event);
}

void Events::post_all() noexcept {
  std::vector<std::string> names;
  {
    service::MutexLock lock(mutex_);
    for (const auto& [name, count] : subscribed_) names.push_back(name);
  }
  for (const std::string& name : names) post_released(name, 0);
}

void Events::disarm(Watch* watch) noexcept {
  service::MutexLock lock(mutex_);
  const auto it = armed_.find(watch->key);
  if (it != armed_.end() && it->second.get() == watch) armed_.erase(it);
}

}  // namespace dblock::zookeeper
