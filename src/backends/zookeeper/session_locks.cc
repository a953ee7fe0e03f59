#include "session_locks.h"

#include <unistd.h>
#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <condition_variable>
#include <mutex>

#include "dblock/errors.h"
#include "nodes.h"
#include "paths.h"
#include "session.h"

namespace dblock::zookeeper {

namespace {

// A waiter's wake-up: set by the watch on the node it waits for (any event of it, the session's
// included). It must outlive the session whose handle holds the watch.
struct Wake {
  std::mutex m;
  std::condition_variable cv;
  bool fired = false;

  void fire() {
    {
      std::lock_guard<std::mutex> lock(m);
      fired = true;
    }
    cv.notify_all();
  }
  // Waits for fire() until `until`, then re-arms. Never past `until`.
  void wait(SteadyClock::time_point until) {
    std::unique_lock<std::mutex> lock(m);
    cv.wait_until(lock, until, [&] { return fired; });
    fired = false;
  }
};

void on_event(zhandle_t*, int, int, const char*, void* context) { static_cast<Wake*>(context)->fire(); }

// The exists reply: no such node (or no answer) means the waiter may look again now.
void on_armed(int rc, const ::Stat*, const void* data) {
  if (rc != ZOK) static_cast<Wake*>(const_cast<void*>(data))->fire();
}

// How long a waiter sleeps at most before it reads the children again, whatever the watch says.
constexpr std::chrono::seconds kLookAgain{1};

std::string holder_text() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  for (char& c : host) {
    if (c != '\0' && (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F)) c = '?';
  }
  return std::string(host) + ":" + std::to_string(getpid()) + " (session lock)";
}

// Closes `session`, first waiting (until `deadline`, at most its session timeout) for it to be
// connected: only a connected session's close ends it on the server, with its node, at once.
void close_in_time(std::unique_ptr<Session> session, SteadyClock::time_point deadline) {
  if (session == nullptr || session->expired()) return;
  session->await_connected(std::min(deadline, SteadyClock::now() + session->negotiated_timeout()));
}

class Handle final : public SessionLockHandle {
 public:
  Handle(std::unique_ptr<Wake> wake, std::unique_ptr<Session> session, std::string path)
      : wake_(std::move(wake)), session_(std::move(session)), path_(std::move(path)) {}

  // The node exists and belongs to this session (one round trip).
  bool verify() noexcept override {
    try {
      const Reply r = session_->exists(path_, deadline_now());
      return r.rc == ZOK && r.stat.ephemeral_owner == session_->id();
    } catch (...) {
      return false;
    }
  }

  bool release() override {
    Reply r;
    const auto deadline = deadline_now();
    try {
      r = session_->remove(path_, deadline);
    } catch (const ConnectionError& e) {
      // Closing the session deletes the node once the server hears of it: a session that comes
      // back by the call's deadline is closed then, at once; else the server expires it.
      close_in_time(std::move(session_), deadline);
      throw InDoubtError(std::string(e.what()) + " (the session lock's node goes with its session)", kServiceName,
                         e.sqlstate());
    }
    session_.reset();
    if (r.rc != ZOK && r.rc != ZNONODE) unexpected("delete " + path_, r.rc);
    return r.rc == ZOK;
  }

  std::int64_t key() const override { return 0; }

 private:
  std::unique_ptr<Wake> wake_;         // before session_: the handle's watch points to it
  std::unique_ptr<Session> session_;   // closed first (joins the client's threads)
  std::string path_;
};

}  // namespace

std::unique_ptr<SessionLockHandle> ZkSessionLocks::acquire_session_lock(std::string_view name, LockMode mode,
                                                                        std::chrono::milliseconds wait) {
  if (mode == LockMode::kShared && options_.layout == Layout::kCuratorMutex) {
    throw UnsupportedError("zookeeper: layout=curator-mutex has no shared locks (InterProcessMutex)", kServiceName);
  }
  const auto deadline = deadline_now();
  const auto now = SteadyClock::now();
  const auto ends = wait <= std::chrono::milliseconds::zero() ? now
                    : deadline - now < wait                   ? deadline
                                                              : now + wait;
  auto wake = std::make_unique<Wake>();
  auto session = std::make_unique<Session>(SessionConfig{options_.hosts, options_.session_timeout, options_.digest},
                                           std::min(deadline, now + options_.connect_timeout));
  // Not acquired, or failed (a create's reply lost with the connection): the session is closed,
  // once connected again if it comes back in time, so that its node does not outlive the call.
  struct CloseInTime {
    std::unique_ptr<Session>& session;
    std::chrono::milliseconds bound;
    ~CloseInTime() { close_in_time(std::move(session), SteadyClock::now() + bound); }
  } closing{session, options_.connect_timeout};
  const std::string dir = root_ + "/" + escape_name(name);
  const std::string prefix = node_prefix(guid_of(OwnerSecret::generate()), options_.layout, mode);
  const std::string own = create_child(*session, dir, prefix, node_data(holder_text()), deadline).first;
  for (;;) {
    std::vector<std::string> names = children_of(*session, dir, deadline);
    if (const std::optional<std::string> other = other_recipe_child(options_.layout, names)) {
      throw recipe_mismatch(options_.layout, name, *other);  // the session's close deletes the node
    }
    const std::vector<Child> sorted = sorted_children(options_.layout, std::move(names));
    const std::optional<std::size_t> at = index_of(sorted, own);
    if (!at) return nullptr;  // force-released while it waited
    if (holds(sorted, *at)) return std::make_unique<Handle>(std::move(wake), std::move(session), dir + "/" + own);
    if (SteadyClock::now() >= ends) return nullptr;  // the session closes: its node goes
    if (const auto ahead = awaited(sorted, *at)) {
      if (session->watch_exists(dir + "/" + sorted[*ahead].name, on_event, wake.get(), on_armed) != ZOK) wake->fire();
    }
    wake->wait(std::min(ends, SteadyClock::now() + kLookAgain));
  }
}

}  // namespace dblock::zookeeper
