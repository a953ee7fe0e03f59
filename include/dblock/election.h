// dblock/election.h — leader election on a lease: at most one leader per name at a time, each
// leadership a term numbered by its lease's fence (strictly increasing per name, on every service).
//
// An Election campaigns on a thread of its own: a waiting acquire of the name (in the service's
// queue of waiters where it has one). Elected, it calls on_elected with the term; the lease is
// renewed as any lease; when it is lost (renewal refused, safe-until passed, force-released) or
// given up (resign(), destruction), it calls on_revoked and, unless resigned, campaigns again
// (Curator's LeaderLatch). is_leader() turns false no later than the lease's safe-until, whether or
// not the election's thread has noticed yet.
//
// Thread-safety: every member may be called from any thread. on_elected and on_revoked run on the
// election's thread, one at a time and in order (elected, revoked, elected, ...), never while a
// lock of the election is held: they may call is_leader(), term() and resign(), and must not
// destroy the Election. The LockManager must outlive the Election.
#ifndef DBLOCK_ELECTION_H_
#define DBLOCK_ELECTION_H_

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace dblock {

class LockManager;

namespace detail {
struct ElectionState;
}  // namespace detail

// A leadership this candidate won.
struct Leadership {
  std::string name;
  std::int64_t term = 0;  // the lease's fence: pass it to what the leader writes to
};

// A leadership that ended.
struct Revocation {
  std::string name;
  std::int64_t term = 0;
  bool resigned = false;  // true: resign() or destruction; false: the lease was lost
  std::string reason;     // for people; the lease's loss reason when lost
};

struct ElectionOptions {
  // The leader's lease TTL; 0 means ManagerOptions::default_ttl. A leader that dies is replaced
  // within it (plus the waiter's wake-up).
  std::chrono::milliseconds ttl{0};
  std::function<void(const Leadership&)> on_elected;
  std::function<void(const Revocation&)> on_revoked;
};

class Election {
 public:
  // Validates `name` (UsageError) and starts campaigning.
  Election(LockManager& manager, std::string name, ElectionOptions options = {});
  // Resigns (releasing the lease if leader), stops campaigning and joins the election's thread.
  ~Election();
  Election(const Election&) = delete;
  Election& operator=(const Election&) = delete;

  const std::string& name() const;
  // True between on_elected and on_revoked, and only while the lease is safe (safe-until).
  bool is_leader() const;
  // The current term while leader.
  std::optional<std::int64_t> term() const;
  // Blocks until this candidate is leader (true) or `wait` passes, or the campaign ended (false).
  bool await_leadership(std::chrono::milliseconds wait) const;
  // Ends leadership (releasing the lease, then on_revoked with resigned = true) and the campaign.
  // Idempotent; returns once the election's thread has stopped campaigning (at once when called
  // from a callback).
  void resign();
  // The error that ended the campaign (a non-transient one, e.g. UnsupportedError or a schema
  // error; the engine rides over transient faults while it waits), or null.
  std::exception_ptr failure() const;

 private:
  std::shared_ptr<detail::ElectionState> state_;
};

// The leader of `name` as the service sees it now, for observers that are not candidates: the
// holder string of the lease and its term (fence). Empty when nobody holds the name (or only
// readers of a shared lease do).
struct Leader {
  std::string holder;
  std::int64_t term = 0;
};
std::optional<Leader> current_leader(LockManager& manager, std::string_view name);

}  // namespace dblock

#endif  // DBLOCK_ELECTION_H_
