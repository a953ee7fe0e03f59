#include "session.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>

#include "dblock/errors.h"
#include "error_map.h"
#include "paths.h"

namespace dblock::zookeeper {

SteadyClock::time_point deadline_now() { return std::min(call_deadline(), SteadyClock::now() + kLongestCall); }

// Nodes to delete, each with whether a delete is in flight. Shared with the deletes' completions.
struct Session::Orphans {
  std::mutex m;
  std::map<std::string, bool> paths;
};

// The session's state as the watcher last saw it. The watcher runs on the client's completion
// thread: it only stores, notifies and sends (never waits).
struct Session::Watch {
  std::mutex m;
  std::condition_variable cv;
  int state = 0;
  zhandle_t* handle = nullptr;  // set once the handle exists
  std::shared_ptr<Orphans> orphans;
  Session::Hooks hooks;
  Session* self = nullptr;         // the session the hooks are given
  std::int64_t id = 0;             // the session's id once connected
  bool expiry_reported = false;    // Hooks::expired ran
};

namespace {

struct OrphanDelete {
  std::shared_ptr<Session::Orphans> orphans;
  std::string path;
};

void on_orphan_deleted(int rc, const void* data) {
  std::unique_ptr<OrphanDelete> d(static_cast<OrphanDelete*>(const_cast<void*>(data)));
  std::lock_guard<std::mutex> lock(d->orphans->m);
  const auto it = d->orphans->paths.find(d->path);
  if (it == d->orphans->paths.end()) return;
  if (rc == ZOK || rc == ZNONODE) {
    d->orphans->paths.erase(it);
  } else {
    it->second = false;  // sent again after the next reconnect or call
  }
}

// Sends a delete for every orphan without one in flight. Never blocks on the server.
void flush_orphans(zhandle_t* handle, const std::shared_ptr<Session::Orphans>& orphans) noexcept {
  if (handle == nullptr) return;
  std::lock_guard<std::mutex> lock(orphans->m);
  for (auto& [path, in_flight] : orphans->paths) {
    if (in_flight) continue;
    auto* d = new OrphanDelete{orphans, path};
    const int rc = zoo_adelete(handle, path.c_str(), -1, on_orphan_deleted, d);
    if (rc == ZOK) {
      in_flight = true;
    } else if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) {
      delete d;  // not recorded by the client
    }
  }
}

// Runs the expired hook once per session.
void report_expiry(Session::Watch& watch) noexcept {
  std::int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(watch.m);
    if (watch.expiry_reported || watch.id == 0) return;
    watch.expiry_reported = true;
    id = watch.id;
  }
  if (watch.hooks.expired) watch.hooks.expired(id);
}

void on_session_event(zhandle_t*, int type, int state, const char*, void* context) {
  if (type != ZOO_SESSION_EVENT || context == nullptr) return;
  auto* watch = static_cast<Session::Watch*>(context);
  zhandle_t* handle = nullptr;
  std::int64_t id = 0;
  {
    std::lock_guard<std::mutex> lock(watch->m);
    watch->state = state;
    handle = watch->handle;
    if (state == ZOO_CONNECTED_STATE && handle != nullptr) {
      const clientid_t* client = zoo_client_id(handle);
      if (client != nullptr) watch->id = client->client_id;
    }
    id = watch->id;
  }
  watch->cv.notify_all();
  if (state == ZOO_CONNECTED_STATE) {
    flush_orphans(handle, watch->orphans);
    if (watch->hooks.connected && watch->self != nullptr) watch->hooks.connected(*watch->self, id);
  } else if (state == ZOO_EXPIRED_SESSION_STATE) {
    report_expiry(*watch);
  }
}

// A request's shared state: owned by the caller and by the completion (through the heap-allocated
// shared_ptr the client passes back as `data`), so whichever finishes last frees it.
struct Pending {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  bool abandoned = false;  // the caller gave up: a late create deletes its node
  zhandle_t* handle = nullptr;
  std::shared_ptr<Session::Orphans> orphans;
  Reply reply;
  // A multi's per-op results and the buffers its creates write their paths into: the client fills
  // them when the reply comes, so they live as long as the request.
  std::vector<zoo_op_result_t> results;
  std::vector<std::vector<char>> buffers;
};
using Ticket = std::shared_ptr<Pending>;

NodeStat node_stat(const Stat* stat) {
  NodeStat out;
  if (stat == nullptr) return out;
  out.czxid = stat->czxid;
  out.ctime_ms = stat->ctime;
  out.mtime_ms = stat->mtime;
  out.version = stat->version;
  out.ephemeral_owner = stat->ephemeralOwner;
  return out;
}

// Takes the completion's reference and marks the request done once `fill` stored its result.
template <typename Fill>
void complete(const void* data, int rc, Fill&& fill) {
  std::unique_ptr<Ticket> held(static_cast<Ticket*>(const_cast<void*>(data)));
  Pending& p = **held;
  {
    std::lock_guard<std::mutex> lock(p.m);
    p.reply.rc = rc;
    if (rc == ZOK) fill(p.reply);
    p.done = true;
    if (p.abandoned && rc == ZOK && !p.reply.path.empty() && p.orphans != nullptr) {
      {
        std::lock_guard<std::mutex> orphans_lock(p.orphans->m);
        p.orphans->paths.emplace(p.reply.path, false);
      }
      flush_orphans(p.handle, p.orphans);  // async: never blocks
    }
  }
  p.cv.notify_all();
}

void on_created(int rc, const char* path, const Stat* stat, const void* data) {
  complete(data, rc, [&](Reply& r) {
    r.path = path != nullptr ? path : "";
    r.stat = node_stat(stat);
  });
}

void on_string(int rc, const char*, const void* data) {
  complete(data, rc, [](Reply&) {});
}

void on_void(int rc, const void* data) {
  complete(data, rc, [](Reply&) {});
}

void on_stat(int rc, const Stat* stat, const void* data) {
  complete(data, rc, [&](Reply& r) { r.stat = node_stat(stat); });
}

void on_data(int rc, const char* value, int length, const Stat* stat, const void* data) {
  complete(data, rc, [&](Reply& r) {
    if (value != nullptr && length > 0) r.data.assign(value, static_cast<std::size_t>(length));
    r.stat = node_stat(stat);
  });
}

void on_children(int rc, const String_vector* strings, const Stat*, const void* data) {
  complete(data, rc, [&](Reply& r) {
    if (strings == nullptr) return;
    for (int i = 0; i < strings->count; ++i) r.children.emplace_back(strings->data[i]);
  });
}

void on_multi(int rc, const void* data) {
  // The per-op results are in the shared state already; copy the created paths out.
  const Ticket& pending = *static_cast<const Ticket*>(data);
  std::vector<std::string> paths;
  {
    std::lock_guard<std::mutex> lock(pending->m);
    for (std::size_t i = 0; i < pending->results.size(); ++i) {
      const std::vector<char>& buffer = pending->buffers[i];
      paths.emplace_back(buffer.empty() || rc != ZOK ? std::string() : std::string(buffer.data()));
    }
  }
  complete(data, rc, [&](Reply& r) { r.children = std::move(paths); });
}

// Sends one request: `send(data)` calls the client's async function. Returns the caller's half.
template <typename Send>
Ticket submit(zhandle_t* handle, const std::shared_ptr<Session::Orphans>& orphans, const std::string& where,
              const std::string& what, Send&& send) {
  auto pending = std::make_shared<Pending>();
  pending->handle = handle;
  pending->orphans = orphans;
  auto* held = new Ticket(pending);
  const int rc = send(static_cast<const void*>(held));
  if (rc != ZOK) {
    // ZBADARGUMENTS and ZINVALIDSTATE come before the client records the completion; other codes
    // (out of memory) may come after it, so the reference is left to the client then.
    if (rc == ZBADARGUMENTS || rc == ZINVALIDSTATE) delete held;
    throw_send_failure(rc, what, where);
  }
  return pending;
}

Reply await(const Ticket& pending, SteadyClock::time_point deadline, const std::string& where,
            const std::string& what) {
  std::unique_lock<std::mutex> lock(pending->m);
  if (!pending->cv.wait_until(lock, deadline, [&] { return pending->done; })) {
    pending->abandoned = true;
    throw ConnectionError("zookeeper: no reply from " + where + " to " + what + " by the call's deadline",
                          kServiceName);
  }
  Reply reply = std::move(pending->reply);
  check_reply_code(reply.rc, what, where);
  return reply;
}

// await() for a Session's call; a reply saying the session expired reports it at once.
Reply finish(Session& session, const Ticket& pending, SteadyClock::time_point deadline, const std::string& what) {
  try {
    return await(pending, deadline, session.where(), what);
  } catch (const ConnectionError& e) {
    if (e.sqlstate() == std::to_string(ZSESSIONEXPIRED)) session.report_expired();
    throw;
  }
}

// Without credentials: any client may read, write, create and delete (what dblock and Curator
// need, each client deleting its own nodes), none may change an ACL (ADMIN): a co-tenant could
// otherwise make the base read-only and lock every new name out.
::ACL kWorldNoAdmin[] = {{ZOO_PERM_READ | ZOO_PERM_WRITE | ZOO_PERM_CREATE | ZOO_PERM_DELETE,
                          {const_cast<char*>("world"), const_cast<char*>("anyone")}}};
::ACL_vector kWorldNoAdminAcl = {1, kWorldNoAdmin};

void quiet_client_log() {
  static std::once_flag once;
  // Level 0 turns the client's logging (to stderr by default) off.
  std::call_once(once, [] { zoo_set_debug_level(static_cast<ZooLogLevel>(0)); });
}


}  // namespace

Session::Session(const SessionConfig& config, SteadyClock::time_point deadline, Hooks hooks)
    : where_(config.connect_string),
      acl_(config.digest.empty() ? &kWorldNoAdminAcl : &ZOO_CREATOR_ALL_ACL),
      orphans_(std::make_shared<Orphans>()),
      watch_(std::make_unique<Watch>()) {
  quiet_client_log();
  watch_->orphans = orphans_;
  watch_->hooks = std::move(hooks);
  watch_->self = this;
  errno = 0;
  handle_ = zookeeper_init(config.connect_string.c_str(), on_session_event, static_cast<int>(config.timeout.count()),
                           nullptr, watch_.get(), 0);
  if (handle_ == nullptr) {
    const int e = errno;
    throw ConnectionError("zookeeper: cannot start a session with " + where_ + ": " +
                              (e != 0 ? std::strerror(e) : "the client refused the connect string"),
                          kServiceName);
  }
  // The client re-resolves the host list at every I/O wake-up unless told otherwise (a getaddrinfo,
  // netlink socket included, per request and per reply). Resolve when (re)connecting only, as the
  // Java client does.
  zoo_set_servers_resolution_delay(handle_, -1);
  std::unique_lock<std::mutex> lock(watch_->m);
  watch_->handle = handle_;
  const bool settled = watch_->cv.wait_until(lock, deadline, [&] {
    return watch_->state == ZOO_CONNECTED_STATE || watch_->state == ZOO_EXPIRED_SESSION_STATE ||
           watch_->state == ZOO_AUTH_FAILED_STATE;
  });
  const int state = watch_->state;
  if (state == ZOO_CONNECTED_STATE && watch_->id == 0) {
    const clientid_t* client = zoo_client_id(handle_);  // connected before the handle was recorded
    if (client != nullptr) watch_->id = client->client_id;
  }
  lock.unlock();
  if (!settled || state != ZOO_CONNECTED_STATE) {
    zookeeper_close(handle_);
    handle_ = nullptr;
    if (state == ZOO_AUTH_FAILED_STATE) {
      throw ConnectionError("zookeeper: " + where_ + " refused this client's authentication", kServiceName);
    }
    // Nobody answered (refused, stalled) or no server had a quorum to give a session with: a
    // server may come within a longer wait, so an open that is part of one tries again.
    throw ConnectionError("zookeeper: no server of " + where_ + " established a session by the deadline",
                          kServiceName, "", /*retryable=*/true);
  }
  if (!config.digest.empty()) authenticate(config.digest, deadline);
}

void Session::authenticate(const std::string& digest, SteadyClock::time_point deadline) {
  // Answered before any create is sent, whose ACL names the identity this adds (the client sends
  // it again itself on every reconnect).
  try {
    const std::string what = "digest authentication";
    const Ticket t = submit(handle_, orphans_, where_, what, [&](const void* d) {
      return zoo_add_auth(handle_, "digest", digest.data(), static_cast<int>(digest.size()), on_void, d);
    });
    const Reply r = finish(*this, t, deadline, what);
    if (r.rc != ZOK) {
      throw ConnectionError("zookeeper: " + where_ + " refused the digest authentication: " + zerror(r.rc),
                            kServiceName, std::to_string(r.rc));
    }
  } catch (const ConnectionError& e) {
    zookeeper_close(handle_);
    handle_ = nullptr;
    throw ConnectionError(e.what(), kServiceName, e.sqlstate(), e.sqlstate() != std::to_string(ZAUTHFAILED));
  }
}

Session::~Session() {
  if (handle_ != nullptr) zookeeper_close(handle_);
}

std::int64_t Session::id() const {
  const clientid_t* client = zoo_client_id(handle_);
  return client != nullptr ? client->client_id : 0;
}

void Session::report_expired() noexcept { report_expiry(*watch_); }

std::pair<std::int64_t, std::string> Session::credentials() const {
  const clientid_t* client = zoo_client_id(handle_);
  if (client == nullptr) return {0, ""};
  return {client->client_id, std::string(client->passwd, sizeof client->passwd)};
}

std::chrono::milliseconds Session::negotiated_timeout() const {
  return std::chrono::milliseconds(zoo_recv_timeout(handle_));
}

bool Session::expired() const {
  const int state = zoo_state(handle_);
  return state == ZOO_EXPIRED_SESSION_STATE || state == ZOO_AUTH_FAILED_STATE;
}

bool Session::await_connected(SteadyClock::time_point deadline) {
  std::unique_lock<std::mutex> lock(watch_->m);
  watch_->cv.wait_until(lock, deadline, [&] {
    return watch_->state == ZOO_CONNECTED_STATE || watch_->state == ZOO_EXPIRED_SESSION_STATE ||
           watch_->state == ZOO_AUTH_FAILED_STATE;
  });
  return watch_->state == ZOO_CONNECTED_STATE;
}

bool Session::owes_deletes() const {
  std::lock_guard<std::mutex> lock(orphans_->m);
  return !orphans_->paths.empty();
}

Reply Session::create(const std::string& path, const std::string& data, int flags, SteadyClock::time_point deadline) {
  flush_orphans(handle_, orphans_);
  const std::string what = "create " + path;
  const Ticket t = submit(handle_, orphans_, where_, what, [&](const void* d) {
    return zoo_acreate2(handle_, path.c_str(), data.data(), static_cast<int>(data.size()), acl_, flags, on_created,
                        d);
  });
  return finish(*this, t, deadline, what);
}

Reply Session::remove(const std::string& path, SteadyClock::time_point deadline, int version) {
  const std::string what = "delete " + path;
  const Ticket t = submit(handle_, orphans_, where_, what,
                          [&](const void* d) { return zoo_adelete(handle_, path.c_str(), version, on_void, d); });
  return finish(*this, t, deadline, what);
}

Reply Session::children(const std::string& path, SteadyClock::time_point deadline) {
  flush_orphans(handle_, orphans_);
  const std::string what = "get children of " + path;
  const Ticket t = submit(handle_, orphans_, where_, what,
                          [&](const void* d) { return zoo_aget_children2(handle_, path.c_str(), 0, on_children, d); });
  return finish(*this, t, deadline, what);
}

Reply Session::set(const std::string& path, const std::string& data, SteadyClock::time_point deadline, int version) {
  flush_orphans(handle_, orphans_);
  const std::string what = "set data of " + path;
  const Ticket t = submit(handle_, orphans_, where_, what, [&](const void* d) {
    return zoo_aset(handle_, path.c_str(), data.data(), static_cast<int>(data.size()), version, on_stat, d);
  });
  return finish(*this, t, deadline, what);
}

Reply Session::exists(const std::string& path, SteadyClock::time_point deadline) {
  const std::string what = "exists " + path;
  const Ticket t = submit(handle_, orphans_, where_, what,
                          [&](const void* d) { return zoo_aexists(handle_, path.c_str(), 0, on_stat, d); });
  return finish(*this, t, deadline, what);
}

Reply Session::get(const std::string& path, SteadyClock::time_point deadline) {
  const std::string what = "get " + path;
  const Ticket t = submit(handle_, orphans_, where_, what,
                          [&](const void* d) { return zoo_aget(handle_, path.c_str(), 0, on_data, d); });
  return finish(*this, t, deadline, what);
}

int Session::watch_exists(const std::string& path, void (*watcher)(zhandle_t*, int, int, const char*, void*),
                          void* context, void (*completion)(int, const ::Stat*, const void*)) {
  return zoo_awexists(handle_, path.c_str(), watcher, context, completion, context);
}

bool Session::doomed(const std::string& path) const {
  std::lock_guard<std::mutex> lock(orphans_->m);
  return orphans_->paths.count(path) != 0;
}

Reply Session::sync(const std::string& path, SteadyClock::time_point deadline) {
  const std::string what = "sync " + path;
  const Ticket t =
      submit(handle_, orphans_, where_, what, [&](const void* d) { return zoo_async(handle_, path.c_str(), on_string, d); });
  return finish(*this, t, deadline, what);
}

Reply Session::multi(const std::vector<MultiOp>& ops, SteadyClock::time_point deadline) {
  flush_orphans(handle_, orphans_);
  const std::string what = "multi-op of " + std::to_string(ops.size()) + " (" + (ops.empty() ? "" : ops[0].path) + ", ...)";
  std::vector<zoo_op_t> zops(ops.size());
  // The results and path buffers belong to the shared state (filled by the reply, maybe late).
  const Ticket t = submit(handle_, orphans_, where_, what, [&](const void* d) {
    Pending& p = **static_cast<const Ticket*>(d);
    p.results.resize(ops.size());
    p.buffers.resize(ops.size());
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const MultiOp& op = ops[i];
      if (op.create) {
        p.buffers[i].assign(op.path.size() + 16, '\0');  // room for the sequence suffix
        zoo_create_op_init(&zops[i], op.path.c_str(), op.data.data(), static_cast<int>(op.data.size()),
                           acl_, op.flags, p.buffers[i].data(), static_cast<int>(p.buffers[i].size()));
      } else {
        zoo_delete_op_init(&zops[i], op.path.c_str(), op.version);
      }
    }
    return zoo_amulti(handle_, static_cast<int>(zops.size()), zops.data(), p.results.data(), on_multi, d);
  });
  return finish(*this, t, deadline, what);
}

void Session::remove_eventually(const std::string& path) noexcept {
  try {
    {
      std::lock_guard<std::mutex> lock(orphans_->m);
      orphans_->paths.emplace(path, false);
    }
    flush_orphans(handle_, orphans_);
  } catch (const std::exception&) {
    // Out of memory: the node goes with the session.
  }
}

}  // namespace dblock::zookeeper
