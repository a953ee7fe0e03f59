// A scheduled job's window on ZooKeeper (AcquireOptions::hold_at_least). The lock node is
// ephemeral and goes with its session, which can be shorter than the window, so the window is a
// persistent child kWindowNode of the lock's container, written when a scheduled acquire is
// granted: a host that dies mid-job leaves it in place. Its times are on the clock ZooKeeper
// stamps ctime and mtime with, the ensemble leader's (a new leader's clock after a failover):
// `until` = the grant (the holder node's ctime, or the mtime of a write that stamped a waiter's
// node when granted) + hold_at_least.
//
// Whoever would hold the name next, in any mode, reads it and judges it against "now" on the same
// clock: the ctime of the node it just made, or the mtime of a write to it. A live window refuses
// the attempt (its node is deleted; the time left is the wait hint); a passed one is deleted at
// the version read. A release deletes the window with its node once a renewal's mtime showed it
// passed. Clients that are not dblock (Curator) do not read it. Pure functions; thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_WINDOW_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_WINDOW_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dblock::zookeeper {

// What the window node holds: the run's end of window, start, fence, owner guid and holder.
struct Window {
  std::int64_t until_ms = 0;     // ensemble clock, ms since the epoch
  std::int64_t acquired_ms = 0;  // ensemble clock
  std::int64_t fence = 0;        // the run's node's czxid
  std::string owner;             // guid_of the run's secret: its own retried attempt may go on
  std::string holder;
};

// Rounds of a write or a look that the window changed under (written or deleted meanwhile).
inline constexpr int kWindowRounds = 4;

// A window this version cannot read (a later format): judged live until force-released.
inline constexpr std::int64_t kUnreadableUntilMs = 9'999'999'999'999;

std::string encode_window(const Window& window);
// nullopt when `data` is no window ("dblock-window-" does not begin it); a window of a format this
// version cannot read as one with until_ms = kUnreadableUntilMs.
std::optional<Window> decode_window(std::string_view data);

// A window as an admin call judged it live: the window, "now" on the ensemble's clock, and the
// version its judging left it at (what a delete must name, so that a newer window is kept).
struct LiveWindow {
  Window window;
  std::int64_t now_ms = 0;
  int version = 0;
};

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_WINDOW_H_
