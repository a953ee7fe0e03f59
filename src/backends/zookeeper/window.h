// A scheduled job's window on ZooKeeper (LeaseKey::hold_at_least). The lock node is ephemeral and
// goes with its session, so the window is a persistent child kWindowNode of the lock's container,
// written by the release in the same multi-op that deletes the holder's node (no instant in which
// the name is free and no window written). Its times are on the ensemble leader's clock, the clock
// ZooKeeper stamps ctime and mtime with: `until` = the holder's acquisition (its node's ctime, or
// the mtime of the write that stamped a waiter's node when it was granted) + hold_at_least.
//
// Whoever would hold the name next (any mode) reads it and judges it against "now" on the same
// clock: the ctime of the node it just made, or the mtime of a write to it. A live window refuses
// the attempt (its node is deleted; the time left is the wait hint); a passed one is deleted.
// Clients that are not dblock (Curator) do not read it. Pure functions; thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_WINDOW_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_WINDOW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dblock::zookeeper {

// What the window node holds: the closed run's end of window, start, fence and holder string.
struct Window {
  std::int64_t until_ms = 0;     // ensemble clock, ms since the epoch
  std::int64_t acquired_ms = 0;  // ensemble clock
  std::int64_t fence = 0;        // the run's node's czxid
  std::string holder;
};

std::string encode_window(const Window& window);
// nullopt when `data` is no window this version wrote.
std::optional<Window> decode_window(std::string_view data);

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_WINDOW_H_
