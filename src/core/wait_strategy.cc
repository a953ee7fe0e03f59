#include "wait_strategy.h"

#include <algorithm>

#include "internal.h"

namespace dblock::detail {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

constexpr microseconds kNextInLinePause{200};

// Sleeps on the board for `pause`, never past the deadline or the refresh time. True: woken.
bool nap(WakeBoard& board, WaitContext& c, microseconds pause) {
  auto wake_at = std::min<SteadyClock::time_point>(SteadyClock::now() + pause, c.deadline);
  return board.wait(c.name, c.generation, std::min(wake_at, c.refresh_at));
}

// The jittered backoff, never past the holder's remaining time (an abandoned lease is taken over
// promptly), at least 100 µs. Next in line with the name free (or less than a millisecond left:
// services report whole milliseconds), a short pause: a release whose wake-up could not name this
// waiter (it joined the line at that very moment) costs it no full poll.
microseconds plain_pause(const WaitContext& c) {
  microseconds pause = jittered(c.backoff);
  if (c.holder_remaining >= milliseconds::zero()) pause = std::min<microseconds>(pause, c.holder_remaining + milliseconds(1));
  if (c.holder_remaining == milliseconds::zero() && c.position == 0) pause = std::min(pause, kNextInLinePause);
  return std::max(pause, microseconds(100));
}

bool behind_others(const WaitContext& c) { return c.position > 0 && c.ticket != 0; }

// A woken waiter behind others asks the queue where it stands (a read), so that a release does
// not make every waiter write. True: still not its turn (the context is updated).
bool still_behind(FairQueue* queue, WaitContext& c) {
  if (queue == nullptr || !behind_others(c)) return false;
  const FairQueue::Position p = queue->position(c.name, c.secret, c.ticket);
  if (p.waiters_ahead <= 0 && p.holder_remaining <= milliseconds::zero()) return false;
  c.position = p.waiters_ahead;
  c.holder_remaining = p.holder_remaining;
  return true;
}

// What the pausing strategies share: the board they sleep on, the poll bounds, the service's queue
// (null without one), and the way a sleep that nothing ended grows the next pause.
class PausingWait : public WaitStrategy {
 public:
  PausingWait(WakeBoard& board, const ManagerOptions& options, FairQueue* queue)
      : board_(board), options_(options), queue_(queue) {}

 protected:
  // Sleeps `pause`; false when nothing woke it (the backoff then doubles, up to max_poll).
  bool sleep(WaitContext& c, microseconds pause) {
    if (nap(board_, c, pause)) return true;
    c.backoff = std::min<microseconds>(c.backoff * 2, options_.max_poll);
    return false;
  }

  WakeBoard& board_;
  const ManagerOptions& options_;
  FairQueue* const queue_;
};

// No events: a jittered, growing pause. A waiter behind others in line reads where it stands (the
// queue's read-only position) after each pause and writes (attempts) only when the read says it
// may be its turn, or when its queue entry is due for a refresh: a crowd of waiters then polls
// with reads, which never take the write lock a holder's release needs. Its pause grows to at most
// a few min_poll per waiter ahead (never past max_poll): the waiter right behind the first polls
// fast, since nobody else may take the name once it is first (FIFO) and a first waiter asleep in a
// long pause would stall the line. A waiter not in line attempts after every pause.
class BackoffWait final : public PausingWait {
 public:
  using PausingWait::PausingWait;

  WaitResult wait(WaitContext& c) override {
    for (;;) {
      if (c.ticket != 0) c.backoff = std::min<microseconds>(c.backoff, queued_cap(c));
      const bool woken = sleep(c, plain_pause(c));
      const auto now = SteadyClock::now();
      if (now >= c.refresh_at || now >= c.deadline || c.stop.stop_requested()) return WaitResult::kAttempt;
      if (still_behind(queue_, c)) continue;
      if (woken) c.backoff = options_.min_poll;  // our turn may have come: attempt at once
      return WaitResult::kAttempt;
    }
  }

 private:
  // A queued waiter polls at least every this many min_poll per waiter ahead of it.
  static constexpr int kQueuedPolls = 2;

  microseconds queued_cap(const WaitContext& c) const {
    const int ahead = std::clamp(c.position, 1, 1000);
    return std::min<microseconds>(options_.min_poll * kQueuedPolls * ahead, options_.max_poll);
  }
};

// Service events. A waiter behind others while the name is held sleeps max_poll whatever the
// holder's time: the release that makes it first names it (and may grant it the lease), and only
// the first in line takes over an expired lease; its polls only cover lost events and stale hints.
// Behind others with the name free, it backs off as usual instead: the waiters ahead may already
// be gone (a queue join counts the waiters of its snapshot, and one of them can have acquired and
// released while the join waited for the row), and then no release will name it.
class EventWait final : public PausingWait {
 public:
  using PausingWait::PausingWait;

  WaitResult wait(WaitContext& c) override {
    for (;;) {
      const bool await_release = behind_others(c) && c.holder_remaining != std::chrono::milliseconds::zero();
      const microseconds pause =
          await_release ? std::max(jittered(options_.max_poll), microseconds(100)) : plain_pause(c);
      if (!sleep(c, pause) || c.stop.stop_requested()) return WaitResult::kAttempt;
      if (c.ticket != 0) {
        c.grant = board_.take_grant(c.name, c.ticket);
        c.grant_confirmed = false;                 // an event: the attempt confirms it first
        if (c.grant) return WaitResult::kAttempt;  // a release says it made us the holder
      }
      if (behind_others(c)) {
        const std::int64_t next = board_.next_ticket(c.name);
        if (next != 0 && next != c.ticket) continue;  // the event named someone else
        if (next == 0 && still_behind(queue_, c)) continue;
      }
      c.backoff = options_.min_poll;
      return WaitResult::kAttempt;
    }
  }
};

// Blocks inside the service until it may be this waiter's turn, or the refresh time or the
// deadline; passes when the service has nothing to block on.
class NativeTurnWait final : public WaitStrategy {
 public:
  NativeTurnWait(WakeBoard& board, NativeWait& native) : board_(board), native_(native) {}

  WaitResult wait(WaitContext& c) override {
    const auto now = SteadyClock::now();
    const auto until = std::min(c.refresh_at, c.deadline);
    if (until <= now) return WaitResult::kPass;
    const auto max_wait = std::chrono::duration_cast<milliseconds>(until - now) + milliseconds(1);
    NativeWait::Turn turn = native_.wait_for_turn(c.name, c.secret, c.ticket, max_wait);
    if (turn.outcome == NativeWait::Outcome::kUnavailable) return WaitResult::kPass;
    if (turn.outcome == NativeWait::Outcome::kGranted) {
      c.grant = turn.grant;  // held now, even if stopping: the service's own reply says so
      c.grant_confirmed = true;
    }
    board_.check_running();
    return WaitResult::kAttempt;
  }

 private:
  WakeBoard& board_;
  NativeWait& native_;
};

// Next in line (or not in a line at all) without events: watches the holder with the service's
// cheap read-only probe and attempts as soon as the name is free, or anyway before the queue entry
// could expire.
class ProbeWait final : public WaitStrategy {
 public:
  ProbeWait(WakeBoard& board, const ManagerOptions& options, HolderProbe& probe)
      : board_(board), options_(options), probe_(probe) {}

  WaitResult wait(WaitContext& c) override {
    if (c.position != 0 && c.ticket != 0) return WaitResult::kPass;
    const auto until = std::min(c.refresh_at, c.deadline);
    for (;;) {
      const auto wake_at = std::min<SteadyClock::time_point>(SteadyClock::now() + jittered(options_.min_poll), until);
      if (board_.wait(c.name, c.generation, wake_at) || SteadyClock::now() >= until) return WaitResult::kAttempt;
      if (probe_.holder_remaining(c.name, c.secret) <= milliseconds::zero()) return WaitResult::kAttempt;
    }
  }

 private:
  WakeBoard& board_;
  const ManagerOptions& options_;
  HolderProbe& probe_;
};

}  // namespace

std::vector<std::unique_ptr<WaitStrategy>> make_wait_strategies(LeaseService& service, WakeBoard& board,
                                                                const ManagerOptions& options) {
  std::vector<std::unique_ptr<WaitStrategy>> out;
  if (service.wake_events() != nullptr) {
    out.push_back(std::make_unique<EventWait>(board, options, service.fair_queue()));
    return out;
  }
  if (NativeWait* native = service.native_wait()) out.push_back(std::make_unique<NativeTurnWait>(board, *native));
  if (HolderProbe* probe = service.holder_probe()) out.push_back(std::make_unique<ProbeWait>(board, options, *probe));
  out.push_back(std::make_unique<BackoffWait>(board, options, service.fair_queue()));
  return out;
}

}  // namespace dblock::detail
