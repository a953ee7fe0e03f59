#include "listener.h"

#include <algorithm>
#include <charconv>
#include <random>
#include <vector>

#include <pqxx/pqxx>
#include <sys/socket.h>

#include "bounded_connect.h"

namespace dblock::postgresql {

namespace {
using std::chrono::milliseconds;
}  // namespace

NotifyListener::NotifyListener(std::string conninfo, std::string channel, std::uint32_t grant_tag,
                               dblock::service::SocketDeadlines& deadlines)
    : conninfo_(std::move(conninfo)),
      channel_(std::move(channel)),
      wake_slot_(static_cast<int>(std::random_device{}() % 1024)),
      wake_channel_(channel_ + "_" + std::to_string(wake_slot_)),
      fanout_(grant_tag),
      deadlines_(deadlines) {}

NotifyListener::~NotifyListener() {
  {
    service::MutexLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NotifyListener::set_listener(Listener listener) {
  if (fanout_.set_listener(std::move(listener)) && !thread_.joinable()) thread_ = std::thread([this] { loop(); });
}

void NotifyListener::unsubscribe(std::string_view name) {
  fanout_.unsubscribe(name);
  service::MutexLock lock(tickets_mutex_);
  std::erase_if(tickets_, [&](const auto& entry) { return entry.second == name; });
}

void NotifyListener::remember_ticket(std::int64_t ticket, std::string_view name) {
  service::MutexLock lock(tickets_mutex_);
  if (tickets_.size() >= 4096) tickets_.clear();  // bounded; an unknown ticket wakes every waiter
  tickets_.insert_or_assign(ticket, std::string(name));
}

void NotifyListener::dispatch(std::string_view payload) {
  const std::string_view first = payload.substr(0, payload.find('\x1f'));
  std::int64_t ticket = 0;
  const auto [end, error] = std::from_chars(first.data(), first.data() + first.size(), ticket);
  std::optional<std::string> name;
  if (error == std::errc() && end == first.data() + first.size() && ticket != 0) {
    service::MutexLock lock(tickets_mutex_);
    if (auto it = tickets_.find(ticket); it != tickets_.end()) name = it->second;
  }
  if (!name) return fanout_.dispatch_all();
  fanout_.dispatch(*name + "\x1f" + std::string(payload));
}

namespace {

// LISTEN and UNLISTEN on a stalled path would block: each step on the connection is bounded.
constexpr std::chrono::seconds kStepTime{2};

dblock::service::SocketDeadlines::Watch bounded_step(dblock::service::SocketDeadlines& deadlines, pqxx::connection_base& c) {
  return dblock::service::SocketDeadlines::Watch(deadlines, c.sock(), std::chrono::steady_clock::now() + kStepTime);
}

}  // namespace

void NotifyListener::loop() {
  struct Receiver final : pqxx::notification_receiver {
    Receiver(pqxx::connection_base& c, const std::string& channel, NotifyListener& l)
        : pqxx::notification_receiver(c, channel), listener(l) {}
    void operator()(const std::string& payload, int) override { listener.dispatch(payload); }
    NotifyListener& listener;
  };
  int failures = 0;
  while (true) {
    {
      service::MutexLock lock(mutex_);
      if (stop_) return;
    }
    try {
      // Connecting (kStepTime for each address) and the LISTEN statements (kStepTime) are
      // bounded, so that a stalled path never keeps the listener, or a shutdown waiting for it,
      // blocked: waiters poll meanwhile.
      const std::unique_ptr<BoundedConnection> connection =
          connect_until(conninfo_, std::chrono::steady_clock::time_point::max(), kStepTime);
      pqxx::connection_base& c = *connection;
      std::optional<Receiver> shared, own;
      {
        const auto step = bounded_step(deadlines_, c);
        shared.emplace(c, channel_, *this);    // "whoever is first", old versions, force-releases
        own.emplace(c, wake_channel_, *this);  // releases that name this instance's waiters
      }
      failures = 0;
      fanout_.dispatch_all();
      while (true) {
        bool stopping;
        {
          service::MutexLock lock(mutex_);
          stopping = stop_;
        }
        if (stopping) {
          // The server forgets a session's LISTENs with the session: no UNLISTEN is waited for
          // (on a stalled path it would hold the shutdown up). The socket is shut down first, so
          // the receivers' destructors fail theirs at once (pqxx reports it, does not throw).
          ::shutdown(c.sock(), SHUT_RDWR);
          own.reset();
          shared.reset();
          return;
        }
        c.await_notification(0, 100'000);  // bounded, so shutdown is noticed within 100 ms
      }
    } catch (const std::exception&) {
      // Waiters fall back to polling meanwhile; reconnect with a growing pause.
      service::UniqueLock lock(mutex_);
      const auto pause = milliseconds(std::min(2000, 100 << std::min(failures++, 4)));
      if (cv_.wait_for(lock.native(), pause, [this]() DBLOCK_REQUIRES(mutex_) { return stop_; })) return;
    }
  }
}

}  // namespace dblock::postgresql
