// Scheduled jobs' windows on ZooKeeper (window.h): their data, and the service's calls that write,
// judge and show them.
#include "window.h"

#include <zookeeper/zookeeper.h>

#include <algorithm>
#include <charconv>

#include "dblock/errors.h"
#include "nodes.h"
#include "zookeeper_service.h"

namespace dblock::zookeeper {

namespace {

constexpr std::string_view kFamily = "dblock-window-";
constexpr std::string_view kVersion = "dblock-window-1\n";

bool parse(std::string_view text, std::int64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

std::string window_path(const std::string& dir) { return dir + "/" + std::string(kWindowNode); }

// The window a scheduled job granted at `acquired_ms` (ensemble clock) opens.
Window window_of(const AcquireRequest& request, std::int64_t acquired_ms, std::int64_t fence,
                 const std::string& owner) {
  Window w;
  w.acquired_ms = acquired_ms;
  w.until_ms = acquired_ms + request.hold_at_least.count();
  w.fence = fence;
  w.owner = owner;
  w.holder = std::string(request.holder);
  return w;
}

// The version-1 fields "<until> <acquired> <fence> <owner>\n<holder>".
std::optional<Window> decode_v1(std::string_view data) {
  const std::size_t line = data.find('\n');
  if (line == std::string_view::npos) return std::nullopt;
  std::string_view fields[4];
  std::string_view rest = data.substr(0, line);
  for (int i = 0; i < 4; ++i) {
    const std::size_t space = i < 3 ? rest.find(' ') : rest.size();
    if (space == std::string_view::npos) return std::nullopt;
    fields[i] = rest.substr(0, space);
    rest.remove_prefix(std::min(space + 1, rest.size()));
  }
  Window w;
  if (!parse(fields[0], w.until_ms) || !parse(fields[1], w.acquired_ms) || !parse(fields[2], w.fence)) {
    return std::nullopt;
  }
  w.owner = std::string(fields[3]);
  w.holder = std::string(data.substr(line + 1));
  return w;
}

}  // namespace

std::string encode_window(const Window& window) {
  return std::string(kVersion) + std::to_string(window.until_ms) + " " + std::to_string(window.acquired_ms) + " " +
         std::to_string(window.fence) + " " + window.owner + "\n" + window.holder;
}

std::optional<Window> decode_window(std::string_view data) {
  if (data.substr(0, kFamily.size()) != kFamily) return std::nullopt;
  std::optional<Window> w;
  if (data.substr(0, kVersion.size()) == kVersion) w = decode_v1(data.substr(kVersion.size()));
  if (!w) {
    w.emplace();
    w->until_ms = kUnreadableUntilMs;
    w->holder = "(a window this dblock cannot read)";
  }
  return w;
}

std::optional<std::int64_t> ZooKeeperService::stamp(Session& s, const std::string& path, const std::string& data,
                                                    SteadyClock::time_point deadline) {
  const Reply r = s.set(path, data, deadline);
  if (r.rc == ZNONODE) return std::nullopt;
  if (r.rc != ZOK) unexpected("set data of " + path, r.rc);
  return r.stat.mtime_ms;
}

std::optional<std::chrono::milliseconds> ZooKeeperService::window_left(Session& s, const std::string& dir,
                                                                      std::int64_t now_ms, const std::string& owner,
                                                                      SteadyClock::time_point deadline) {
  const std::string path = window_path(dir);
  const Reply r = s.get(path, deadline);
  if (r.rc == ZNONODE) return std::nullopt;
  if (r.rc != ZOK) unexpected("get " + path, r.rc);
  const std::optional<Window> w = decode_window(r.data);
  if (w && w->until_ms > now_ms && w->owner != owner) return std::chrono::milliseconds(w->until_ms - now_ms);
  // Passed, no window at all, or this secret's own (an attempt whose reply was lost): gone, at
  // the version read, so that later attempts need not read it. A window written meanwhile stays:
  // "look again".
  const Reply removed = s.remove(path, deadline, r.stat.version);
  if (removed.rc == ZBADVERSION) return std::chrono::milliseconds(0);
  if (removed.rc != ZOK && removed.rc != ZNONODE) unexpected("delete " + path, removed.rc);
  return std::nullopt;
}

bool ZooKeeperService::open_window(Session& s, const std::string& dir, const Window& window,
                                   SteadyClock::time_point deadline) {
  const std::string path = window_path(dir);
  const Reply r = s.create(path, encode_window(window), ZOO_PERSISTENT, deadline);
  if (r.rc == ZNODEEXISTS) return false;
  if (r.rc != ZOK) unexpected("create " + path, r.rc);
  return true;
}

std::optional<std::chrono::milliseconds> ZooKeeperService::window_at_grant(Session& s, const AcquireRequest& request,
                                                                          const std::string& path, bool fresh,
                                                                          bool window, Held& times,
                                                                          SteadyClock::time_point deadline) {
  const bool scheduled = request.hold_at_least > std::chrono::milliseconds::zero();
  try {
    // A waiter's node was made long ago: its grant is stamped when a window asks for the time.
    if (!fresh && (window || scheduled)) {
      const std::optional<std::int64_t> now = stamp(s, path, node_data(request.holder), deadline);
      if (!now) return std::chrono::milliseconds(0);  // force-released meanwhile: not held
      times.acquired_ms = times.seen_ms = *now;
    }
    const std::string dir = path.substr(0, path.rfind('/'));
    const std::string owner = guid_of(*request.secret);
    for (int round = 0; round < kWindowRounds; ++round, window = true) {
      if (window) {
        if (auto left = window_left(s, dir, times.acquired_ms, owner, deadline)) return left;
      }
      // Written at the grant, not at the release: a run whose host dies keeps it all the same.
      if (!scheduled) return std::nullopt;
      if (open_window(s, dir, window_of(request, times.acquired_ms, times.fence, owner), deadline)) return std::nullopt;
    }
    return std::chrono::milliseconds(0);  // windows kept appearing: look again
  } catch (...) {
    remove_node(s, path, deadline);  // it would hold, but the window is unknown: the node must go
    throw;
  }
}

Reply ZooKeeperService::release_scheduled(Session& s, const std::string& path, const Held& held,
                                          std::chrono::milliseconds hold, SteadyClock::time_point deadline) {
  // The window stays (written at the grant) while it may still be live on the ensemble's clock;
  // one already passed goes with the node.
  if (held.acquired_ms + hold.count() > held.seen_ms) return s.remove(path, deadline);
  const std::string window = window_path(path.substr(0, path.rfind('/')));
  const Reply r = s.multi({MultiOp{false, window, "", 0}, MultiOp{false, path, "", 0}}, deadline);
  if (r.rc != ZNONODE) return r;
  return s.remove(path, deadline);  // the window went already (force-released): the node alone
}

std::optional<LiveWindow> ZooKeeperService::live_window(Session& s, const std::string& dir,
                                                        SteadyClock::time_point deadline) {
  const std::string path = window_path(dir);
  for (int round = 0; round < kWindowRounds; ++round) {
    const Reply r = s.get(path, deadline);
    if (r.rc == ZNONODE) return std::nullopt;
    if (r.rc != ZOK) unexpected("get " + path, r.rc);
    std::optional<Window> w = decode_window(r.data);
    if (!w) return std::nullopt;
    // "Now" on the ensemble's clock: the mtime of rewriting the same data, at the version read
    // (a window written meanwhile is read again, not overwritten).
    const Reply stamped = s.set(path, r.data, deadline, r.stat.version);
    if (stamped.rc == ZBADVERSION || stamped.rc == ZNONODE) continue;
    if (stamped.rc != ZOK) unexpected("set data of " + path, stamped.rc);
    if (w->until_ms <= stamped.stat.mtime_ms) return std::nullopt;
    return LiveWindow{std::move(*w), stamped.stat.mtime_ms, stamped.stat.version};
  }
  throw ConnectionError("zookeeper: the window of " + dir + " kept changing while it was read", kServiceName);
}

std::optional<LeaseInfo> ZooKeeperService::describe_window(Session& s, const std::string& name,
                                                          SteadyClock::time_point deadline) {
  const std::optional<LiveWindow> live = live_window(s, container(name), deadline);
  if (!live) return std::nullopt;
  const Window& w = live->window;
  LeaseInfo info;
  info.name = name;
  info.holder = w.holder;  // disowned: shown as the run that keeps the window
  info.fence = w.fence;
  info.acquired_at_us = w.acquired_ms * 1000;
  info.expires_at_us = w.until_ms * 1000;
  info.expires_in_us = (w.until_ms - live->now_ms) * 1000;
  return info;
}

}  // namespace dblock::zookeeper
