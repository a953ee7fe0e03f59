#include "connection.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "error_map.h"

namespace dblock::redis {

namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;
using std::chrono::microseconds;

// While it lives, SIGPIPE is blocked in the calling thread: hiredis writes with write(2), which
// raises SIGPIPE on a connection its peer closed, and the signal's default action ends the process
// that embeds dblock. A SIGPIPE raised meanwhile is consumed before the thread's mask is restored
// (the write fails with EPIPE instead); one already pending before is left pending. errno is kept.
class SigpipeBlocked {
 public:
  SigpipeBlocked() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_, &previous_);
    was_pending_ = pending();
  }
  ~SigpipeBlocked() {
    const int saved = errno;
    if (!was_pending_ && pending()) {
      const timespec now{0, 0};
      while (::sigtimedwait(&pipe_, nullptr, &now) < 0 && errno == EINTR) {
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
    errno = saved;
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  static bool pending() {
    sigset_t set;
    sigemptyset(&set);
    return ::sigpending(&set) == 0 && sigismember(&set, SIGPIPE) == 1;
  }
  sigset_t pipe_{};
  sigset_t previous_{};
  bool was_pending_ = false;
};

// What is left until `deadline`, at least 1 ms (hiredis takes 0 as "no timeout").
timeval time_left(SteadyClock::time_point deadline) {
  const auto left = std::max(microseconds(1000), duration_cast<microseconds>(deadline - SteadyClock::now()));
  return timeval{static_cast<time_t>(left.count() / 1'000'000), static_cast<suseconds_t>(left.count() % 1'000'000)};
}

// Waits for the non-blocking connect on `fd` by `deadline`; returns 0 or the connect's errno.
int finish_connect(int fd, SteadyClock::time_point deadline) {
  for (;;) {
    const auto left = duration_cast<milliseconds>(deadline - SteadyClock::now()).count();
    if (left <= 0) return ETIMEDOUT;
    pollfd p{fd, POLLOUT, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, 60'000)));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) continue;
    int error = 0;
    socklen_t len = sizeof(error);
    if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return errno;
    return error;
  }
}

// One address: a socket connected by `deadline`, or -1 with `error` set.
int connect_address(const addrinfo& a, SteadyClock::time_point deadline, int& error) {
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol);
  if (fd < 0) {
    error = errno;
    return -1;
  }
  error = ::connect(fd, a.ai_addr, a.ai_addrlen) == 0 ? 0 : errno;
  if (error == EINPROGRESS) error = finish_connect(fd, deadline);
  if (error != 0) {
    ::close(fd);
    return -1;
  }
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

int start_connect(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw Broken{"redis: cannot resolve host '" + host + "': " + ::gai_strerror(rc), false};
  const addrinfo& a = *found;  // the first address: a round has no time to try several in turn
  const int fd = ::socket(a.ai_family, a.ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a.ai_protocol);
  int error = fd < 0 ? errno : (::connect(fd, a.ai_addr, a.ai_addrlen) == 0 ? 0 : errno);
  ::freeaddrinfo(found);
  if (error == 0 || error == EINPROGRESS) return fd;
  if (fd >= 0) ::close(fd);
  throw Broken{"redis: cannot connect to " + host + ":" + std::to_string(port) + ": " + std::strerror(error), false};
}

int connect_result(int fd) {
  int error = 0;
  socklen_t len = sizeof(error);
  if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return errno;
  return error;
}

int connect_socket(const std::string& host, int port, SteadyClock::time_point deadline) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  // Name lookup is not bounded by the deadline (getaddrinfo has no timeout); a numeric address
  // needs none.
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) throw Broken{"redis: cannot resolve host '" + host + "': " + ::gai_strerror(rc), false};
  int error = 0;
  int fd = -1;
  for (addrinfo* a = found; a != nullptr && fd < 0; a = a->ai_next) fd = connect_address(*a, deadline, error);
  ::freeaddrinfo(found);
  if (fd < 0) {
    const std::string why = error == ETIMEDOUT ? "timed out" : std::strerror(error);
    throw Broken{"redis: cannot connect to " + host + ":" + std::to_string(port) + ": " + why, false,
                 error == ETIMEDOUT};
  }
  return fd;
}

std::unique_ptr<Connection> Connection::open(const Options& options, SteadyClock::time_point deadline) {
  const auto connect_by = std::min(deadline, SteadyClock::now() + options.connect_timeout);
  const int fd = connect_socket(options.host, options.port, connect_by);
  redisContext* context = redisConnectFd(fd);
  if (context == nullptr || context->err != 0) {
    if (context != nullptr) redisFree(context); else ::close(fd);
    throw Broken{"redis: out of memory for a connection", false};
  }
  std::unique_ptr<Connection> c(new Connection(context));
  if (!options.password.empty()) {
    std::vector<std::string_view> auth{"AUTH"};
    if (!options.user.empty()) auth.push_back(options.user);
    auth.push_back(options.password);
    check_reply(c->command(auth, deadline), "AUTH");
  }
  if (options.database != 0) {
    const std::string db = std::to_string(options.database);
    check_reply(c->command({"SELECT", db}, deadline), "SELECT " + db);
  }
  return c;
}

std::unique_ptr<Connection> Connection::adopt(int fd) {
  const int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  redisContext* context = redisConnectFd(fd);
  if (context == nullptr || context->err != 0) {
    if (context != nullptr) redisFree(context); else ::close(fd);
    throw Broken{"redis: out of memory for a connection", false};
  }
  return std::unique_ptr<Connection>(new Connection(context));
}

Connection::~Connection() { redisFree(context_); }

int Connection::fd() const { return context_->fd; }

Reply Connection::command(const std::vector<std::string_view>& args, SteadyClock::time_point deadline) {
  send(args, deadline);
  return receive(deadline);
}

void Connection::send(const std::vector<std::string_view>& args, SteadyClock::time_point deadline) {
  if (SteadyClock::now() >= deadline) throw Broken{"redis: the call's deadline passed before it was sent", false, true};
  append(args);
  flush(deadline);
}

void Connection::append(const std::vector<std::string_view>& args) {
  std::vector<const char*> argv;
  std::vector<std::size_t> lengths;
  for (const auto& a : args) {
    argv.push_back(a.data());
    lengths.push_back(a.size());
  }
  if (redisAppendCommandArgv(context_, static_cast<int>(argv.size()), argv.data(), lengths.data()) != REDIS_OK) {
    throw Broken{"redis: out of memory for a command", false};
  }
}

void Connection::flush(SteadyClock::time_point deadline) {
  redisSetTimeout(context_, time_left(deadline));
  const SigpipeBlocked no_sigpipe;
  for (int done = 0; !done;) {
    if (redisBufferWrite(context_, &done) != REDIS_OK) throw failure();
  }
}

void Connection::read_available() {
  if (redisBufferRead(context_) != REDIS_OK) throw failure();
}

std::optional<Reply> Connection::next_reply() {
  void* reply = nullptr;
  if (redisGetReplyFromReader(context_, &reply) != REDIS_OK) throw failure();
  if (reply == nullptr) return std::nullopt;
  return Reply(static_cast<redisReply*>(reply));
}

Reply Connection::receive(SteadyClock::time_point deadline) {
  redisSetTimeout(context_, time_left(deadline));
  void* reply = nullptr;
  if (redisGetReply(context_, &reply) != REDIS_OK || reply == nullptr) throw failure();
  return Reply(static_cast<redisReply*>(reply));
}

// The context's I/O error as Broken (a timeout is told apart: hiredis reports it as EAGAIN).
Broken Connection::failure() const {
  const int error = errno;
  const bool timed_out = context_->err == REDIS_ERR_IO &&
                         (error == EAGAIN || error == EWOULDBLOCK ||
                          std::string_view(context_->errstr) == std::strerror(EAGAIN));
  return Broken{timed_out ? "redis: no reply by the call's deadline" : "redis: " + std::string(context_->errstr), true,
                timed_out};
}

}  // namespace dblock::redis
