// One ZooKeeper session (one zhandle_t) and its calls, each asynchronous and awaited until a
// deadline. Internal to the ZooKeeper service.
//
// Threads: the client library runs two threads per handle (I/O and completions). The watcher only
// records the session's state and wakes waiters; completions only store their result in a shared
// state object that the caller and the completion both own, so a completion arriving after its
// caller gave up touches no freed memory (a late create deletes the node it made). Every method
// is thread-safe. The destructor closes the handle, which joins the client's threads: never
// destroy a Session on one of them.
//
// Descriptors: the client opens its wake-up pipe and sockets itself, without FD_CLOEXEC, out of
// dblock's reach; `dblock run` closes every descriptor above 2 in its child (close_range).
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_SESSION_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_SESSION_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

typedef struct _zhandle zhandle_t;
struct Stat;
struct ACL_vector;

namespace dblock::zookeeper {

using SteadyClock = std::chrono::steady_clock;

// The deadline of the call being made: call_deadline(), at most kLongestCall ahead (a direct call
// on the service, outside the engine, has none).
inline constexpr std::chrono::seconds kLongestCall{60};
SteadyClock::time_point deadline_now();

// What ZooKeeper returns about a node (struct Stat), the fields dblock reads.
struct NodeStat {
  std::int64_t czxid = 0;
  std::int64_t ctime_ms = 0;  // the ensemble leader's clock when the node was made
  std::int64_t mtime_ms = 0;  // ... when it was last written
  std::int32_t version = 0;
  std::int64_t ephemeral_owner = 0;
};

// A call's outcome: rc is ZooKeeper's code (ZOK 0, ZNONODE, ZNODEEXISTS, ...). Codes that say the
// connection or session failed are thrown instead (check()).
struct Reply {
  int rc = 0;
  std::string path;                    // create: the node made (sequence appended)
  NodeStat stat;                       // create, set, exists, get
  std::string data;                    // get
  std::vector<std::string> children;   // children
};

// One operation of a multi(): a create (flags as for create()) or a delete (of `version`; -1: any).
struct MultiOp {
  bool create = false;
  std::string path;
  std::string data;
  int flags = 0;
  int version = -1;
};

// How a sweep (Session::sweep) ended.
enum class SweepOutcome {
  kComplete,  // every node was judged
  kDeferred,  // the judge asked to look again later
  kFailed,    // a request failed (no connection): nothing certain
};

// What a session is opened with.
struct SessionConfig {
  std::string connect_string;          // "h1:p1,h2:p2/chroot"
  std::chrono::milliseconds timeout{};  // the session timeout asked for
  // "user:password": the session authenticates with ZooKeeper's digest scheme and creates every
  // node for that identity only (CREATOR_ALL). "": no authentication; nodes are created
  // world:anyone READ|WRITE|CREATE|DELETE (no ADMIN: nobody can change their ACL).
  std::string digest;
};

class Session {
 public:
  // What the session's watcher reports besides its state; each runs on the client's thread and
  // must not block.
  struct Hooks {
    std::function<void(Session&, std::int64_t session)> connected;  // at every (re)connection
    std::function<void(std::int64_t session)> expired;  // the session (its id) expired
  };
  // Connects to `config.connect_string` asking for `config.timeout` (and authenticates, with a
  // digest); waits until the session is established or `deadline` passes. Throws ConnectionError
  // naming the servers: retryable when no server established a session in time (none reachable,
  // or none with a quorum), not when authentication failed or the connect string is refused.
  Session(const SessionConfig& config, SteadyClock::time_point deadline, Hooks hooks = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  std::int64_t id() const;
  // The session timeout the server granted.
  std::chrono::milliseconds negotiated_timeout() const;
  // The session expired or was closed: no call on it can succeed; open a new one.
  bool expired() const;
  // Waits until the session is connected (true), or expired, or `deadline` passed (false). Before
  // a close: only a connected session's close reaches the server, which then deletes the session's
  // ephemeral nodes at once; a disconnected one keeps them until the server expires it.
  bool await_connected(SteadyClock::time_point deadline);
  // remove_eventually() has deletes the server has not confirmed yet.
  bool owes_deletes() const;

  // Each sends one request and waits for its reply until `deadline`: ConnectionError when it does
  // not come by then, when the connection was lost (ZCONNECTIONLOSS: the outcome is unknown) or
  // the session expired; PermissionError for ZNOAUTH. Other codes come back in Reply::rc.
  Reply create(const std::string& path, const std::string& data, int flags, SteadyClock::time_point deadline);
  Reply remove(const std::string& path, SteadyClock::time_point deadline, int version = -1);
  Reply children(const std::string& path, SteadyClock::time_point deadline);
  // `version`: only if the node is at that version (ZBADVERSION otherwise); -1: any.
  Reply set(const std::string& path, const std::string& data, SteadyClock::time_point deadline, int version = -1);
  Reply exists(const std::string& path, SteadyClock::time_point deadline);
  Reply get(const std::string& path, SteadyClock::time_point deadline);
  // Brings the server this session talks to up to date with the leader for `path` (zoo_async), so
  // that a read after it sees every write other clients made through other servers before it.
  Reply sync(const std::string& path, SteadyClock::time_point deadline);
  // All of `ops` or none (ZooKeeper's multi). Reply::rc is the first failing op's code (ZOK when
  // all succeeded); Reply::children has, per op, the path a create made ("" for a delete).
  Reply multi(const std::vector<MultiOp>& ops, SteadyClock::time_point deadline);
  // Arms an exists watch on `path` (zoo_awexists): `watcher` gets `context` when the node changes,
  // `completion` gets it (as data) with the reply. Returns the client's code (0: sent).
  int watch_exists(const std::string& path, void (*watcher)(zhandle_t*, int, int, const char*, void*), void* context,
                   void (*completion)(int, const ::Stat*, const void*));
  // Deletes this session's node `path` without waiting: sent now, and again after every reconnect
  // and before every later call of this session until the server answered (deleted, or no such
  // node). For a node whose delete failed or was never confirmed, which would otherwise block its
  // lock as long as the session lives. Never throws.
  void remove_eventually(const std::string& path) noexcept;
  // remove_eventually() was asked for `path` and the server has not confirmed it yet.
  bool doomed(const std::string& path) const;
  // Looks, without waiting, for this session's children of `container` whose names start with
  // `prefix`: `judge(path)` decides for each (true: an orphan, which the judge has doomed; false:
  // keep; nullopt: judge again later), then `done` runs once with the outcome. Both run on the
  // client's thread and must not block. Never throws.
  using Judge = std::function<std::optional<bool>(const std::string& path)>;
  void sweep(const std::string& container, const std::string& prefix, Judge judge,
             std::function<void(SweepOutcome)> done) noexcept;

  // A reply said the session expired: runs Hooks::expired now, once (the watcher's report of the
  // same expiry, which can come seconds later, then does nothing). Never blocks.
  void report_expired() noexcept;
  // The session's id and password, as another client needs them to take the session over (tests
  // force an expiry that way).
  std::pair<std::int64_t, std::string> credentials() const;
  // The servers, for messages.
  const std::string& where() const { return where_; }

  struct Watch;    // the watcher's state (session.cc)
  struct Orphans;  // nodes remove_eventually() still has to delete (session.cc)

 private:
  // zoo_add_auth("digest"), its answer awaited until `deadline`. Closes the handle and throws
  // ConnectionError when it fails (retryable unless the server refused it).
  void authenticate(const std::string& digest, SteadyClock::time_point deadline);

  std::string where_;
  const ::ACL_vector* acl_ = nullptr;  // what every create gives its node (SessionConfig::digest)
  std::shared_ptr<Orphans> orphans_;
  std::unique_ptr<Watch> watch_;
  zhandle_t* handle_ = nullptr;
};

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_SESSION_H_
