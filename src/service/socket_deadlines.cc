#include "dblock/service/socket_deadlines.h"

#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "dblock/errors.h"

namespace dblock::service {

SocketDeadlines::~SocketDeadlines() {
  {
    MutexLock lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::uint64_t SocketDeadlines::add(int fd, TimePoint deadline) {
  std::uint64_t id;
  bool earlier;
  {
    MutexLock lock(mutex_);
    id = next_id_++;
    entries_.emplace(id, Entry{fd, deadline});
    if (!thread_.joinable()) thread_ = std::thread([this] { run(); });
    // Most calls end long before their deadline: wake the thread only when it sleeps past this one
    // (a wake per call would cost two context switches on every statement).
    earlier = deadline < wake_at_;
    if (earlier) wake_at_ = deadline;
  }
  if (earlier) changed_.notify_all();
  return id;
}

bool SocketDeadlines::remove(std::uint64_t id) {
  // Under the mutex: once this returns, the thread never touches the descriptor again, so its
  // owner may close it (and the number be reused) safely.
  MutexLock lock(mutex_);
  auto it = entries_.find(id);
  if (it == entries_.end()) return false;
  const bool fired = it->second.fired;
  entries_.erase(it);
  return fired;
}

bool SocketDeadlines::fired(std::uint64_t id) {
  MutexLock lock(mutex_);
  auto it = entries_.find(id);
  return it != entries_.end() && it->second.fired;
}

void SocketDeadlines::run() {
  UniqueLock lock(mutex_);
  while (!stopping_) {
    const auto now = std::chrono::steady_clock::now();
    TimePoint next = TimePoint::max();
    for (auto& [id, entry] : entries_) {
      if (entry.fired) continue;
      if (entry.deadline <= now) {
        ::shutdown(entry.fd, SHUT_RDWR);
        entry.fired = true;
      } else {
        next = std::min(next, entry.deadline);
      }
    }
    wake_at_ = next;
    if (next == TimePoint::max()) {
      changed_.wait(lock.native());
    } else {
      changed_.wait_until(lock.native(), next);
    }
  }
}

SocketDeadlines::Watch::Watch(SocketDeadlines& owner, int fd, TimePoint deadline) {
  if (fd < 0 || deadline == TimePoint::max()) return;
  owner_ = &owner;
  id_ = owner.add(fd, deadline);
}

SocketDeadlines::Watch::~Watch() {
  if (owner_ != nullptr) owner_->remove(id_);
}

bool SocketDeadlines::Watch::fired() const { return owner_ != nullptr && owner_->fired(id_); }

void throw_cut_call(const CutCall& call, const std::exception& library_error) {
  throw ConnectionError(std::string(call.service) + ": " + call.what +
                            ": no reply before the call's deadline; the connection was dropped (" +
                            library_error.what() + ")",
                        call.service, call.sqlstate);
}

}  // namespace dblock::service
