// Deadlines for blocking calls on sockets a client library owns (libpq): a call registers its
// connection's socket with the deadline of the call (dblock::call_deadline()); when the deadline
// passes first, the socket is shut down (shutdown(2), both directions), so the library's blocked
// read or write returns an error at once and the connection is dropped. The descriptor itself is
// never closed here: it stays the library's.
//
// Thread-safe. One background thread per SocketDeadlines, started at the first watch.
#ifndef DBLOCK_SERVICE_SOCKET_DEADLINES_H_
#define DBLOCK_SERVICE_SOCKET_DEADLINES_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "dblock/service/thread_annotations.h"

namespace dblock::service {

class SocketDeadlines {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  SocketDeadlines() = default;
  ~SocketDeadlines();
  SocketDeadlines(const SocketDeadlines&) = delete;
  SocketDeadlines& operator=(const SocketDeadlines&) = delete;

  // Watches `fd` until the Watch ends; shuts it down if `deadline` passes first. `fired()` tells
  // whether it did. No-op for deadline == TimePoint::max() or fd < 0.
  class Watch {
   public:
    Watch(SocketDeadlines& owner, int fd, TimePoint deadline);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;
    bool fired() const;

   private:
    SocketDeadlines* owner_ = nullptr;  // null: nothing watched
    std::uint64_t id_ = 0;
  };

 private:
  struct Entry {
    int fd;
    TimePoint deadline;
    bool fired = false;
  };
  std::uint64_t add(int fd, TimePoint deadline);
  bool remove(std::uint64_t id);  // returns whether it fired
  bool fired(std::uint64_t id);
  void run();

  Mutex mutex_;
  std::condition_variable changed_;
  std::map<std::uint64_t, Entry> entries_ DBLOCK_GUARDED_BY(mutex_);
  std::uint64_t next_id_ DBLOCK_GUARDED_BY(mutex_) = 1;
  bool stopping_ DBLOCK_GUARDED_BY(mutex_) = false;
  TimePoint wake_at_ DBLOCK_GUARDED_BY(mutex_) = TimePoint::min();  // when the thread wakes next
  std::thread thread_;                      // started under mutex_ at the first add
};

// Names a call that a watch may cut, for its error: "<service>: <what>: no reply before the call's
// deadline; the connection was dropped (<the client library's error>)", with `sqlstate`.
struct CutCall {
  const char* service;
  const char* what;
  const char* sqlstate;
};

[[noreturn]] void throw_cut_call(const CutCall& call, const std::exception& library_error);

// Runs `call` with `fd` watched until `deadline`. An error the watch caused becomes the
// ConnectionError `cut` describes; every other error passes through unchanged.
template <typename Call>
decltype(auto) call_within(SocketDeadlines& deadlines, int fd, SocketDeadlines::TimePoint deadline, const CutCall& cut,
                           Call&& call) {
  const SocketDeadlines::Watch watch(deadlines, fd, deadline);
  try {
    return std::forward<Call>(call)();
  } catch (const std::exception& e) {
    if (!watch.fired()) throw;
    throw_cut_call(cut, e);
  }
}

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_SOCKET_DEADLINES_H_
