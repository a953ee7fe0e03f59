// One hiredis connection with deadlines (pooled in dblock/service/pool.h). Internal.
//
// hiredis 0.14's blocking context is not thread-safe and cannot be used again after a timeout or
// an I/O error: a Connection is used by one thread at a time (the pool hands it out), and a
// connection that failed is dropped, never returned. Sockets are made here, close-on-exec and
// non-blocking during connect (so a connect ends by its deadline), then handed to hiredis.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_CONNECTION_H_
#define DBLOCK_SRC_BACKENDS_REDIS_CONNECTION_H_

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/redis/redis.h"
#include "reply.h"

struct redisContext;

namespace dblock::redis {

using SteadyClock = std::chrono::steady_clock;

// A failed exchange: the connection is unusable. `sent` is false only when nothing can have
// reached the server (the connect or the request's write failed before any byte went out).
struct Broken {
  std::string message;
  bool sent = true;
  bool timed_out = false;
};

class Connection {
 public:
  // Connects, authenticates and selects the database, all by `deadline` (and within
  // options.connect_timeout for the TCP connect). Throws Broken (sent = false) when unreachable,
  // ConnectionError for a refused password, PermissionError for a forbidden SELECT.
  static std::unique_ptr<Connection> open(const Options& options, SteadyClock::time_point deadline);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Sends one command and reads its reply, by `deadline`. Throws Broken when the exchange fails
  // or the deadline passes first. An error reply is returned, not thrown (Reply::error()).
  Reply command(const std::vector<std::string_view>& args, SteadyClock::time_point deadline);

  // The two halves of command(), so that calls to several servers overlap: send writes the
  // command out by `deadline`, receive reads its reply by `deadline`. Both throw Broken.
  void send(const std::vector<std::string_view>& args, SteadyClock::time_point deadline);
  Reply receive(SteadyClock::time_point deadline);

  // Pipelining, driven by the caller's poll() (Node::Exchange): append queues a command, flush
  // writes everything queued by `deadline`; once poll() says the socket is readable,
  // read_available() takes what it has (one read, no wait) and next_reply() returns each reply
  // complete so far. Throw Broken (read_available: also on end of stream).
  void append(const std::vector<std::string_view>& args);
  void flush(SteadyClock::time_point deadline);
  void read_available();
  std::optional<Reply> next_reply();

  // A connection on `fd`, a socket start_connect() made whose connect has completed: made
  // blocking, TCP_NODELAY, handed to hiredis (which closes it). Nothing is sent: a caller that
  // needs AUTH or SELECT appends them. Throws Broken (sent = false).
  static std::unique_ptr<Connection> adopt(int fd);

  int fd() const;
  redisContext* context() { return context_; }

 private:
  explicit Connection(redisContext* context) : context_(context) {}
  Broken failure() const;
  redisContext* context_;
};

// Sockets of hiredis connections: connects `host`:`port` by `deadline`, returning a blocking,
// close-on-exec socket with TCP_NODELAY. Throws Broken (sent = false).
int connect_socket(const std::string& host, int port, SteadyClock::time_point deadline);
// The same in two halves, for connects that overlap: start_connect returns a close-on-exec,
// non-blocking socket whose connect is under way (writable once it ends; connect_result then
// says 0 or the connect's errno). Throws Broken (sent = false) when it fails at once.
int start_connect(const std::string& host, int port);
int connect_result(int fd);

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_CONNECTION_H_
