// One Redis server as the services use it: its connection pool, the scripts loaded on it, and
// calls bounded by a deadline, one at a time or sent to several nodes at once. Internal.
//
// Thread-safe (the pool synchronises; scripts are fixed after construction).
#ifndef DBLOCK_SRC_BACKENDS_REDIS_NODE_H_
#define DBLOCK_SRC_BACKENDS_REDIS_NODE_H_

#include <poll.h>

#include <algorithm>
#include <atomic>
#include <deque>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connection.h"
#include "dblock/errors.h"
#include "dblock/service/lease_service.h"
#include "dblock/service/pool.h"
#include "error_map.h"

namespace dblock::redis {

// A script of scripts.h, with the prelude, and its SHA-1 (what EVALSHA names it by; a server that
// does not know it yet answers NOSCRIPT and is sent the text, which it then keeps).
struct Script {
  Script(const char* name, std::string text);
  const char* name;
  std::string text;
  std::string sha;
};

struct ScriptSet {
  ScriptSet();
  Script acquire, acquire_all, renew, release, force_release, describe, position, leave, confirm, raise_fence;
};

// How a call may be repeated after a failed exchange.
enum class Repeat {
  kSafe,     // idempotent, or made so by the script (a release reads its latch): once more on a fresh connection
  kInDoubt,  // never: a failure after sending is an InDoubtError
};

// The deadline of the call being made: call_deadline(), at most kLongestCall ahead (a direct call
// on the service, outside the engine, has none).
inline constexpr std::chrono::seconds kLongestCall{60};
inline SteadyClock::time_point deadline_now() {
  return std::min(call_deadline(), SteadyClock::now() + kLongestCall);
}

// The deadline of a lease_lost() call: the engine calls it on the thread that let go of a lost
// lease and expects it not to block for long; the keys expire on the servers by themselves anyway.
inline SteadyClock::time_point lease_lost_deadline() { return SteadyClock::now() + std::chrono::milliseconds(500); }

// Script arguments.
inline std::string_view secret_bytes(const OwnerSecret& secret) {
  return std::string_view(reinterpret_cast<const char*>(secret.bytes.data()), secret.bytes.size());
}
// What the scripts store for `secret`: redis.sha1hex of its 16 bytes.
std::string owner_digest(const OwnerSecret& secret);
inline std::string_view mode_arg(LockMode mode) { return mode == LockMode::kExclusive ? "x" : "s"; }

class Node {
 public:
  // Connects and checks the server (a master with maxmemory-policy noeviction) by `deadline`.
  // Throws as make_service() documents.
  Node(Options options, SteadyClock::time_point deadline);
  // Connects nothing yet: the server is checked on its first call (Redlock opens its nodes with a
  // round of exchanges, all at once).
  explicit Node(Options options);
  bool checked() const { return checked_.load(); }

  class Exchange;
  // `script` sent to this node without waiting (Exchange). Never blocks: a node without an idle
  // connection starts connecting, the request queued behind the handshake.
  std::unique_ptr<Exchange> begin(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                                  SteadyClock::time_point deadline);

  const Options& options() const { return options_; }
  const ScriptSet& scripts() const { return scripts_; }
  // "host:port", for messages.
  std::string address() const;

  // Runs `script` by `deadline` (deadline_now() unless given) on a pooled connection, repeating as
  // `repeat` allows. Throws the dblock::Error of an error reply or a failed exchange.
  Reply eval(const Script& script, const std::vector<std::string>& keys, const std::vector<std::string_view>& args,
             Repeat repeat, std::optional<SteadyClock::time_point> deadline = std::nullopt);
  // One exchange with the pool; `f(connection, deadline)`. Translates Broken.
  template <typename F>
  auto with_connection(F&& f, Repeat repeat, std::optional<SteadyClock::time_point> deadline = std::nullopt);


 private:
  Reply eval_on(Connection& c, const Script& script, const std::vector<std::string>& keys,
                const std::vector<std::string_view>& args, SteadyClock::time_point deadline);
  void check_server(Connection& c, SteadyClock::time_point deadline);
  // Throws the UsageError of an INFO reply that shows a server dblock cannot use (an evicting
  // maxmemory-policy, a replica).
  void check_info(std::string_view info) const;
  // Before a call on a node not checked yet: checks it on `c`. Throws as check_server().
  void ensure_checked(Connection& c, SteadyClock::time_point deadline);

  const Options options_;
  service::Pool<Connection> pool_{64};  // idle connections; every one is made by Connection::open
  const ScriptSet scripts_;
  std::mutex check_mutex_;
  std::atomic<bool> checked_{false};
};

// One node's part of a round of calls made to several nodes at once (Redlock): the script is
// written out at once on an idle connection, or queued behind a new connection's handshake (AUTH,
// SELECT and, on a node not checked yet, INFO's check, all pipelined) while its connect runs in
// the background; the replies are read as the socket has them. It never blocks, so a node that is
// slow to connect or answer delays no other: the caller poll()s every exchange's socket and
// advances the ones that are ready. A reply NOSCRIPT is answered with the script's text. Ends by
// its deadline (and the node's connect_timeout for the connect). A finished exchange gives its
// connection back to the pool; a failed or unfinished one closes it.
//
// Not thread-safe: one exchange belongs to the thread driving the round.
class Node::Exchange {
 public:
  Exchange(Node& node, const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
           SteadyClock::time_point deadline);
  ~Exchange();
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;

  bool finished() const { return finished_; }
  SteadyClock::time_point deadline() const { return deadline_; }
  // What to poll() for: the socket and POLLOUT while connecting, POLLIN while awaiting replies.
  int fd() const;
  short events() const { return dialing() ? POLLOUT : POLLIN; }
  // After poll(): the events it reported for fd() (0: none). Advances; may finish.
  void advance(short revents);
  // Finishes the exchange unanswered once `now` is past its deadline.
  void expire(SteadyClock::time_point now);
  // The script's reply (an error reply included); nullopt when the exchange failed or has not
  // finished. Once.
  std::optional<Reply> take_reply() { return std::move(reply_); }
  // Why it failed ("" when it did not).
  const std::string& failure() const { return failure_; }

 private:
  enum class Awaiting { kAuth, kSelect, kInfo, kScript, kScriptText };
  bool dialing() const { return dial_fd_ >= 0; }
  void connected();
  void send_script(bool as_text);
  void on_reply(Reply reply);
  void fail(std::string why);
  void finish(std::optional<Reply> reply);

  Node& node_;
  const Script& script_;
  const std::vector<std::string> keys_;
  const std::vector<std::string> args_;
  const SteadyClock::time_point deadline_;
  SteadyClock::time_point connect_by_;
  int dial_fd_ = -1;  // the socket while its connect is under way (then owned by connection_)
  std::unique_ptr<Connection> connection_;
  std::deque<Awaiting> awaiting_;
  std::optional<Reply> reply_;
  std::string failure_;
  bool finished_ = false;
};

template <typename F>
auto Node::with_connection(F&& f, Repeat repeat, std::optional<SteadyClock::time_point> given) {
  const auto deadline = given.value_or(deadline_now());
  for (int round = 0;; ++round) {
    bool fresh = false;
    try {
      std::unique_ptr<Connection> c = pool_.take();
      if (!c) {
        fresh = true;
        c = Connection::open(options_, deadline);
      }
      ensure_checked(*c, deadline);
      auto result = f(*c, deadline);
      pool_.put(std::move(c));
      return result;
    } catch (const Broken& broken) {
      // A pooled connection may be stale (the server restarted or dropped it): once more on a new one.
      if (round == 0 && !fresh && !broken.timed_out && (repeat == Repeat::kSafe || !broken.sent)) {
        pool_.clear();
        continue;
      }
      if (broken.sent && repeat == Repeat::kInDoubt) throw InDoubtError(broken.message, kServiceName);
      throw ConnectionError(broken.message, kServiceName, {}, !broken.timed_out);
    }
  }
}

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_NODE_H_
