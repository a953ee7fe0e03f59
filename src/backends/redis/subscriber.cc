#include "subscriber.h"

#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "connection.h"

namespace dblock::redis {

namespace {

using std::chrono::milliseconds;

// Connecting and each write on the subscriber connection are bounded by kStepTime; a connection
// that answers nothing (not even its PINGs) for kSilence is made again.
constexpr std::chrono::seconds kStepTime{2};
constexpr std::chrono::seconds kPingEvery{1};
constexpr std::chrono::seconds kSilence{3};

}  // namespace

Subscriber::~Subscriber() {
  {
    service::MutexLock lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Subscriber::start() { thread_ = std::thread([this] { loop(); }); }

Events::Events(const std::vector<Options>& nodes, const std::string& channel) {
  for (const Options& node : nodes) subscribers_.push_back(std::make_unique<Subscriber>(node, channel, fanout_));
}

void Events::set_listener(Listener listener) {
  if (!fanout_.set_listener(std::move(listener))) return;
  std::call_once(started_, [this] {
    for (auto& s : subscribers_) s->start();
  });
}

bool Subscriber::stopping() {
  service::MutexLock lock(mutex_);
  return stop_;
}

void Subscriber::loop() {
  int failures = 0;
  while (!stopping()) {
    try {
      const auto connection = Connection::open(options_, SteadyClock::now() + kStepTime);
      failures = 0;
      serve(*connection);
    } catch (const Broken&) {
    } catch (const std::exception&) {
    }
    // Waiters poll meanwhile; reconnect with a growing pause.
    service::UniqueLock lock(mutex_);
    const auto pause = milliseconds(std::min(2000, 100 << std::min(failures++, 4)));
    if (cv_.wait_for(lock.native(), pause, [this]() DBLOCK_REQUIRES(mutex_) { return stop_; })) return;
  }
}

void Subscriber::serve(Connection& connection) {
  redisContext* c = connection.context();
  // Writes are bounded by kStepTime; reads happen only once poll() found data, so the receive
  // timeout send() also sets never fires (it would kill the context).
  const auto send = [&](const std::vector<std::string_view>& args) {
    connection.send(args, SteadyClock::now() + kStepTime);
  };
  send({"SUBSCRIBE", channel_});
  auto last_heard = SteadyClock::now();
  auto last_ping = last_heard;
  while (!stopping()) {
    pollfd p{connection.fd(), POLLIN, 0};
    const int n = ::poll(&p, 1, 100);
    if (n < 0 && errno != EINTR) return;
    if (n > 0 && redisBufferRead(c) != REDIS_OK) return;
    void* raw = nullptr;
    while (true) {
      if (redisGetReplyFromReader(c, &raw) != REDIS_OK) return;
      if (raw == nullptr) break;
      const Reply reply(static_cast<redisReply*>(raw));
      last_heard = SteadyClock::now();
      const PushMessage message = PushMessage::read(reply);
      if (message.kind == "message") fanout_.dispatch(message.payload);
      if (message.kind == "subscribe") fanout_.dispatch_all();
    }
    const auto now = SteadyClock::now();
    if (now - last_heard > kSilence) return;
    if (now - last_ping >= kPingEvery) {
      send({"PING"});
      last_ping = now;
    }
  }
}

}  // namespace dblock::redis
