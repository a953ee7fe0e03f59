// One Redis server as the services use it: its connection pool, the scripts loaded on it, and
// calls bounded by a deadline, one at a time or sent to several nodes at once. Internal.
//
// Thread-safe (the pool synchronises; scripts are fixed after construction).
#ifndef DBLOCK_SRC_BACKENDS_REDIS_NODE_H_
#define DBLOCK_SRC_BACKENDS_REDIS_NODE_H_

#include <algorithm>
#include <atomic>
#include <mutex>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "connection.h"
#include "dblock/errors.h"
#include "dblock/service.h"
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

// The deadline of a lease_lost() call. The engine calls it on its renewal thread with no deadline
// of its own and expects it not to block for long: a stalled server must delay neither the owner's
// on_lost nor the other leases' renewals. The keys expire on the servers by themselves anyway.
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
  // Throws as make_service() documents; with `tolerate_unreachable`, a node that cannot be reached
  // is checked on its first call instead (Redlock opens while a minority is down).
  Node(Options options, SteadyClock::time_point deadline, bool tolerate_unreachable = false);
  bool checked() const { return checked_.load(); }

  const Options& options() const { return pool_.options(); }
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

  // A script sent and not yet answered (several nodes' calls overlap this way).
  struct Sent {
    std::unique_ptr<Connection> connection;
    const Script* script = nullptr;
    std::vector<std::string> keys;
    std::vector<std::string> args;
  };
  // Sends `script` without waiting; nullopt when it could not be sent (the node is unreachable).
  std::optional<Sent> send(const Script& script, std::vector<std::string> keys, std::vector<std::string> args,
                           SteadyClock::time_point deadline) noexcept;
  // The reply to `sent` (an error reply included), or nullopt when the exchange failed by `deadline`.
  std::optional<Reply> receive(Sent& sent, SteadyClock::time_point deadline) noexcept;

 private:
  Reply eval_on(Connection& c, const Script& script, const std::vector<std::string>& keys,
                const std::vector<std::string_view>& args, SteadyClock::time_point deadline);
  void check_server(Connection& c, SteadyClock::time_point deadline);
  // Before a call on a node not checked yet: checks it on `c`. Throws as check_server().
  void ensure_checked(Connection& c, SteadyClock::time_point deadline);

  Pool pool_;
  const ScriptSet scripts_;
  std::mutex check_mutex_;
  std::atomic<bool> checked_{false};
};

template <typename F>
auto Node::with_connection(F&& f, Repeat repeat, std::optional<SteadyClock::time_point> given) {
  const auto deadline = given.value_or(deadline_now());
  for (int round = 0;; ++round) {
    bool fresh = false;
    try {
      std::unique_ptr<Connection> c = pool_.borrow(deadline, fresh);
      ensure_checked(*c, deadline);
      auto result = f(*c, deadline);
      pool_.give_back(std::move(c));
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
