// The ZooKeeper lock service. Internal; the public face is dblock/zookeeper/zookeeper.h.
//
// One session per service (session.h), replaced by a new one for later calls once it expired
// (its ephemeral nodes, and so its leases, are gone with it). Every call is bounded by
// call_deadline() (at most kLongestCall ahead when the engine set none).
//
// Scheduled jobs (hold_at_least): window.h.
//
// Capabilities: FairQueue (the sequential order: a waiter keeps its node; ticket = sequence + 1),
// WakeEvents (events.h: the watch on the node a waiter waits for), AuditLog (audit.h: a record
// node created in the eviction's own multi-op), SessionLocks (session_locks.h: a session per held
// lock). No Maintenance (containers delete themselves),
// HolderProbe, NativeWait, MultiAcquire or SqlFeatures.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_ZOOKEEPER_SERVICE_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_ZOOKEEPER_SERVICE_H_

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "attempts.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/lease_service.h"
#include "dblock/service/thread_annotations.h"
#include "dblock/zookeeper/zookeeper.h"
#include "events.h"
#include "paths.h"
#include "session.h"
#include "session_locks.h"
#include "window.h"

namespace dblock::zookeeper {

class ZooKeeperService final : public LeaseService, public FairQueue, public WakeEvents, public AuditLog {
 public:
  // `root`: the absolute path of the lock containers' parent (chroot + base). Opens the session
  // by call_deadline(). Throws ConnectionError.
  ZooKeeperService(const Options& options, std::string root);
  // Closes the session first: its callbacks reach into the members. When nodes of the session may
  // be left on the server (an attempt's create whose reply was lost, a delete not confirmed, a
  // lease or a waiter's node) and the session is disconnected, waits for it to reconnect first, at
  // most connect_timeout and never past its session timeout (when the server expires it anyway):
  // the close of a connected session deletes them at once, a disconnected one's leaves them
  // blocking their names until the server expires the session.
  ~ZooKeeperService() override;

  std::string_view name() const override { return kServiceName; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  // setData on the own node: one round trip that proves node and session. The TTL is not sent.
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  // Sends the own node's delete without waiting for it.
  void lease_lost(const LeaseKey& lease) noexcept override;
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  AuditLog* audit_log() noexcept override { return this; }
  FairQueue* fair_queue() noexcept override { return this; }
  WakeEvents* wake_events() noexcept override { return this; }
  SessionLocks* session_locks() noexcept override { return &session_locks_; }

  // A waiter's node stays in the container between attempts (until it holds, leaves, or its
  // session ends); position = the children ahead of it that do not hold.
  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;

  void set_listener(Listener listener) override { events_.set_listener(std::move(listener)); }
  void subscribe(std::string_view name) override { events_.subscribe(name); }
  void unsubscribe(std::string_view name) override { events_.unsubscribe(name); }

  // The current session's id and password (tests take the session over to force its expiry).
  std::pair<std::int64_t, std::string> session_credentials();
  // The current session's timeout as the server granted it (tests).
  std::chrono::milliseconds session_timeout();
  // Newest first: the record nodes' sequence order.
  std::vector<ForceReleaseRecord> force_releases(std::optional<std::string_view> name, std::size_t limit) override;

 private:
  struct Held;  // below
  // A force-release's multi-op: delete each holder's node and the window, create the audit record.
  struct Eviction {
    std::vector<MultiOp> ops;
  };
  // One attempt; `queue`: a refused waiter keeps its node and watches the one it waits for.
  Attempt attempt(const AcquireRequest& request, bool queue);
  // The attempt itself, between Attempts::begin and end (queue.cc).
  Attempt attempt_once(Session& s, const AcquireRequest& request, const std::string& key, bool queue,
                       SteadyClock::time_point deadline);
  // Watches what the waiter at `at` of `sorted` (in container `dir`) waits for: the child just
  // ahead (a writer), the nearest writer ahead (a reader), or every holding reader ahead (a permit
  // no writer blocks). Never blocks.
  void watch_turn(Session& s, std::string_view name, const std::string& dir, const std::vector<Child>& sorted,
                  std::size_t at, std::int64_t ticket);
  // An attempt whose node `path` (`fresh`: made by this attempt) would hold, with a window child
  // in its container or not: the time left of a live window (the attempt is refused); else
  // nullopt, `times` set to the grant's, and a scheduled job's window written from it. Deletes
  // the node when it throws. (window.cc)
  std::optional<std::chrono::milliseconds> window_at_grant(Session& s, const AcquireRequest& request,
                                                           const std::string& path, bool fresh, bool window,
                                                           Held& times, SteadyClock::time_point deadline);
  // Deletes a node of this session, leaving it to remove_eventually when the server does not
  // confirm by `deadline`: it must not block the name.
  void remove_node(Session& s, const std::string& path, SteadyClock::time_point deadline);
  // nullopt: nothing to evict; no ops: what was there changed meanwhile, look again.
  std::optional<Eviction> eviction(Session& s, std::string_view name, std::string_view by,
                                   SteadyClock::time_point deadline);
  std::string audit_dir() const;
  // A sync before an admin read: the server this session uses has every write made before it
  // (a follower may lag behind the leader; a client only ever sees its own writes at once).
  void up_to_date(Session& s, SteadyClock::time_point deadline);
  // The current session; a new one (opened by `deadline`) when the last one expired.
  std::shared_ptr<Session> session(SteadyClock::time_point deadline);
  // `deadline`, or connect_timeout from now when that is sooner.
  SteadyClock::time_point connect_deadline(SteadyClock::time_point deadline) const;
  // Whether session `s` may have nodes on the server that nothing will delete before the server
  // expires it (see the destructor).
  bool may_leave_nodes(const Session& s);
  std::string container(std::string_view name) const { return root_ + "/" + escape_name(name); }
  std::string own_path(const LeaseKey& lease) const;
  // A child of `prefix` this session made (a retried attempt whose reply was lost), with its Stat.
  std::optional<std::pair<std::string, NodeStat>> own_child(Session& s, const std::string& container,
                                                            const std::vector<std::string>& names,
                                                            const std::string& prefix, SteadyClock::time_point deadline);
  std::optional<LeaseInfo> describe(Session& s, const std::string& name, SteadyClock::time_point deadline);

  // Orphans (orphans.cc): the nodes of `key` ("<container>/<prefix>") that session `s` made in
  // an attempt whose create failed once sent, and that nothing holds or waits with, are deleted.
  // Never blocks: requests and judgement run on the client's thread. `key` must be claimed.
  void sweep(Session& s, const std::string& key) noexcept;
  // A lease this service holds: its node's path -> what renew writes back, what a session expiry
  // reports lost and what a scheduled job's release writes into its window.
  struct Held {
    std::string data;  // the node's data (node_data of the holder string)
    std::string name;
    OwnerSecret secret;
    std::int64_t session = 0;
    std::int64_t fence = 0;        // the node's czxid
    std::int64_t acquired_ms = 0;  // ensemble clock: when the node was made, or stamped as granted
    std::int64_t seen_ms = 0;      // ensemble clock: the latest write to the node (create, stamp, renew)
  };
  void remember(const std::string& path, const AcquireRequest& request, std::int64_t session, const Held& times);
  // The session's watcher: every lease of `session` is lost (kLost). Never blocks.
  void session_expired(std::int64_t session) noexcept;
  Session::Hooks hooks();
  // This service's held node `path`.
  std::optional<Held> held_of(const std::string& path);
  // A renewal's write to `path` happened at `mtime_ms` on the ensemble's clock.
  void saw_time(const std::string& path, std::int64_t mtime_ms);
  void forget(const std::string& path);

  // Windows (window.cc). "Now" on the ensemble's clock: the mtime of writing `data` to `path`;
  // nullopt when the node is gone.
  std::optional<std::int64_t> stamp(Session& s, const std::string& path, const std::string& data,
                                    SteadyClock::time_point deadline);
  // The window of container `dir` judged at `now_ms` by an attempt of `owner` (a guid) whose node
  // would hold: the time left while it is live (0: it changed meanwhile, look again); a passed
  // one, or the owner's own, is deleted.
  std::optional<std::chrono::milliseconds> window_left(Session& s, const std::string& dir, std::int64_t now_ms,
                                                       const std::string& owner, SteadyClock::time_point deadline);
  // Creates `window` as the window of container `dir`; false when one exists (judge it first).
  bool open_window(Session& s, const std::string& dir, const Window& window, SteadyClock::time_point deadline);
  // A scheduled job's release of its node `path`: the delete, with the window's once it has
  // passed by the latest time the node's writes saw. ZNONODE: the node was gone.
  Reply release_scheduled(Session& s, const std::string& path, const Held& held, std::chrono::milliseconds hold,
                          SteadyClock::time_point deadline);
  // The window of container `dir` while it is live (judged by stamping it), for the admin calls.
  std::optional<LiveWindow> live_window(Session& s, const std::string& dir, SteadyClock::time_point deadline);
  // What list and inspect show for a name that nobody holds but a live window keeps.
  std::optional<LeaseInfo> describe_window(Session& s, const std::string& name, SteadyClock::time_point deadline);

  Options options_;
  std::string root_;
  SessionConfig session_config_;
  ZkSessionLocks session_locks_;
  Events events_;  // before session_: the handle's watches point into it
  Attempts attempts_;
  service::Mutex mutex_;                         // held while a new session connects
  std::shared_ptr<Session> session_ DBLOCK_GUARDED_BY(mutex_);
  service::Mutex held_mutex_;                     // never held across a call to the server
  std::map<std::string, Held> held_ DBLOCK_GUARDED_BY(held_mutex_);
};

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_ZOOKEEPER_SERVICE_H_
