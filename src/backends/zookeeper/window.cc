// Scheduled jobs' windows on ZooKeeper (window.h): their data, and the service's calls that write,
// judge and show them.
#include "window.h"

#include <zookeeper/zookeeper.h>

#include <charconv>

#include "dblock/errors.h"
#include "nodes.h"
#include "zookeeper_service.h"

namespace dblock::zookeeper {

namespace {

constexpr std::string_view kVersion = "dblock-window-1\n";

// Rounds of a write or a look that the window changed under (written or deleted meanwhile).
constexpr int kWindowRounds = 4;

bool parse(std::string_view text, std::int64_t& out) {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), out);
  return error == std::errc() && end == text.data() + text.size();
}

std::string window_path(const std::string& dir) { return dir + "/" + std::string(kWindowNode); }

}  // namespace

std::string encode_window(const Window& window) {
  return std::string(kVersion) + std::to_string(window.until_ms) + " " + std::to_string(window.acquired_ms) + " " +
         std::to_string(window.fence) + "\n" + window.holder;
}

std::optional<Window> decode_window(std::string_view data) {
  if (data.substr(0, kVersion.size()) != kVersion) return std::nullopt;
  data.remove_prefix(kVersion.size());
  const std::size_t line = data.find('\n');
  const std::size_t first = data.find(' ');
  const std::size_t second = first == std::string_view::npos ? first : data.find(' ', first + 1);
  if (line == std::string_view::npos || second == std::string_view::npos || second > line) return std::nullopt;
  Window w;
  if (!parse(data.substr(0, first), w.until_ms) || !parse(data.substr(first + 1, second - first - 1), w.acquired_ms) ||
      !parse(data.substr(second + 1, line - second - 1), w.fence)) {
    return std::nullopt;
  }
  w.holder = std::string(data.substr(line + 1));
  return w;
}

std::int64_t ZooKeeperService::stamp(Session& s, const std::string& path, const std::string& data,
                                     SteadyClock::time_point deadline) {
  const Reply r = s.set(path, data, deadline);
  if (r.rc != ZOK) unexpected("set data of " + path, r.rc);
  return r.stat.mtime_ms;
}

std::optional<std::chrono::milliseconds> ZooKeeperService::window_left(Session& s, const std::string& dir,
                                                                      std::int64_t now_ms,
                                                                      SteadyClock::time_point deadline) {
  const std::string path = window_path(dir);
  const Reply r = s.get(path, deadline);
  if (r.rc == ZNONODE) return std::nullopt;
  if (r.rc != ZOK) unexpected("get " + path, r.rc);
  const std::optional<Window> w = decode_window(r.data);
  if (w && w->until_ms > now_ms) return std::chrono::milliseconds(w->until_ms - now_ms);
  // Passed (or unreadable: no window): gone, so that later attempts need not read it. Nobody
  // writes a window while this attempt's node holds: only a holder's release does.
  const Reply removed = s.remove(path, deadline);
  if (removed.rc != ZOK && removed.rc != ZNONODE) unexpected("delete " + path, removed.rc);
  return std::nullopt;
}

void ZooKeeperService::open_window(Session& s, const std::string& dir, const Window& window,
                                   SteadyClock::time_point deadline) {
  const std::string path = window_path(dir);
  const std::string data = encode_window(window);
  for (int round = 0; round < kWindowRounds; ++round) {
    Reply r = s.create(path, data, ZOO_PERSISTENT, deadline);
    if (r.rc == ZNODEEXISTS) r = s.set(path, data, deadline);  // a passed one nobody deleted yet
    if (r.rc == ZOK) return;
    if (r.rc != ZNONODE) unexpected("write " + path, r.rc);  // ZNONODE: deleted meanwhile, again
  }
  throw ConnectionError("zookeeper: the window " + path + " kept changing while it was written", kServiceName);
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

std::optional<std::pair<Window, std::int64_t>> ZooKeeperService::live_window(Session& s, const std::string& dir,
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
    if (w->until_ms > stamped.stat.mtime_ms) return std::make_pair(std::move(*w), stamped.stat.mtime_ms);
    return std::nullopt;
  }
  throw ConnectionError("zookeeper: the window of " + dir + " kept changing while it was read", kServiceName);
}

std::optional<LeaseInfo> ZooKeeperService::describe_window(Session& s, const std::string& name,
                                                          SteadyClock::time_point deadline) {
  const auto live = live_window(s, container(name), deadline);
  if (!live) return std::nullopt;
  const auto& [w, now_ms] = *live;
  LeaseInfo info;
  info.name = name;
  info.holder = w.holder;  // disowned: shown as the run that keeps the window
  info.fence = w.fence;
  info.acquired_at_us = w.acquired_ms * 1000;
  info.expires_at_us = w.until_ms * 1000;
  info.expires_in_us = (w.until_ms - now_ms) * 1000;
  return info;
}

}  // namespace dblock::zookeeper
