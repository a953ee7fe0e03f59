// A reference implementation of the lock-service interface, in memory, for the engine's unit tests.
//
// Not a stand-in for any server users run: it implements dblock's own seam (dblock/service/lease_service.h,
// dblock/service/capabilities.h) with the semantics the SQL services have — fences that only grow, expiry
// on the service's own clock, owner-only renew and release, a fair queue with tickets, grants to
// the first waiter — plus knobs that inject what the tests need: slow calls, refused or failing
// renewals, dropped events (missed wake-ups) and lost events.
//
// A MemoryStore is the "server"; every MemoryService is one client of it (one LockManager), so two
// managers on one store contend like two processes. Thread-safe.
#ifndef DBLOCK_TESTS_UNIT_MEMORY_SERVICE_H_
#define DBLOCK_TESTS_UNIT_MEMORY_SERVICE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "dblock/service/capabilities.h"
#include "dblock/service/lease_service.h"

namespace dblock::testing {

using MemoryClock = std::chrono::steady_clock;

// The shared state: leases, the queue, the fence counter. Its clock is MemoryClock.
class MemoryService;

class MemoryStore {
 public:
  struct Holder {
    std::string holder;
    std::int64_t fence = 0;
    MemoryClock::time_point acquired;
    MemoryClock::time_point expires;
  };
  struct Lock {
    LockMode mode = LockMode::kExclusive;
    int permits = 0;  // AcquireRequest::permits of the shared holders
    std::map<std::string, Holder> holders;  // by owner secret (hex)
  };
  struct Waiter {
    std::string secret;
    std::int64_t ticket = 0;
    MemoryClock::time_point until;
    LockMode mode = LockMode::kExclusive;
    std::string holder;
  };

  std::mutex mutex;
  std::condition_variable changed;  // any lease or queue change (NativeWait sleeps on it)
  std::map<std::string, Lock> locks;
  std::map<std::string, std::vector<Waiter>> queues;  // in ticket order
  std::int64_t last_fence = 0;
  std::int64_t last_ticket = 0;
  std::vector<MemoryService*> clients;  // every client hears every event, as LISTEN/NOTIFY does
};

class MemoryService final : public LeaseService,
                            public FairQueue,
                            public WakeEvents,
                            public GrantEvents,
                            public NativeWait,
                            public HolderProbe,
                            public Maintenance {
 public:
  struct Config {
    bool fair_queue = true;
    bool wake_events = false;
    bool grants = false;  // a release hands the lease to the first queued exclusive waiter
    bool native_wait = false;
    bool holder_probe = true;
    bool maintenance = true;
    bool shared_leases = true;
    bool permits = true;
    bool hold_at_least = true;
    // The longest an acquire or renewal grants (a ZooKeeper session shorter than the TTL asked).
    std::chrono::milliseconds max_grant = std::chrono::hours(24 * 365);
    std::vector<std::string> degraded;  // what degraded() answers
  };
  struct LostRecord {
    std::string name;
    std::string secret;  // hex
    std::uint32_t tag = 0;
  };
  enum class Op { kTryAcquire, kInLine, kRenew, kRelease, kLeave, kPosition, kProbe, kNativeWait, kReap, kMigrate,
                  kConfirmGrant, kCount };
  // The tag this service puts on a lease taken as a queued waiter, or granted.
  static constexpr std::uint32_t kQueuedTag = 7;

  MemoryService(std::shared_ptr<MemoryStore> store, Config config);
  ~MemoryService() override;

  // ---- knobs ----
  void set_renew_delay(std::chrono::milliseconds delay) { renew_delay_ms_ = delay.count(); }
  void refuse_renewals(bool on) { refuse_renewals_ = on; }
  void fail_renewals(bool on) { fail_renewals_ = on; }
  void fail_releases(bool on) { fail_releases_ = on; }  // a release's reply is lost (InDoubtError)
  // Steps the clock renewals report (RenewResult::expires_at_us) by `d`, as a server whose clock
  // was stepped would; the service's own expiry keeps its clock.
  void step_reported_clock(std::chrono::milliseconds d) { reported_clock_offset_us_ += d.count() * 1000; }
  // Steps it by `d` at every renewal from now on (a clock that keeps disagreeing).
  void step_reported_clock_each_renewal(std::chrono::milliseconds d) { reported_clock_step_us_ = d.count() * 1000; }
  // The next `count` acquire attempts (try_acquire, attempt_in_line) throw `kind` of error.
  enum class Fault { kUnreachable, kInDoubt, kPermission };
  void fail_attempts(int count, Fault kind = Fault::kUnreachable) {
    fault_kind_ = kind;
    failing_attempts_ = count;
  }
  // The next `count` acquire attempts (try_acquire, attempt_in_line) stall `delay` before the
  // store acts on them, as a request held up on its way (a busy server, a stalled path): granted
  // late on the service's clock, answered late.
  void stall_attempts(int count, std::chrono::milliseconds delay) {
    stall_ms_ = delay.count();
    stalling_attempts_ = count;
  }
  void drop_events(bool on) { drop_events_ = on; }  // this client hears no event (missed wake-ups)
  // A refused attempt in line reports one waiter more ahead and the name free: what a queue join
  // reports when its snapshot showed a waiter that has acquired and released since.
  void phantom_waiter(bool on) { phantom_waiter_ = on; }
  // Delivers a kLost event for the current holder of `name`, as a service whose session expired.
  void push_lost(const std::string& name);
  // Sends every client a kGranted event for the first queued waiter of `name` with `fence`, as a
  // bystander who can reach the event channel could: the store is not changed.
  void forge_grant(const std::string& name, std::int64_t fence);

  // ---- observations ----
  int calls(Op op) const { return calls_[static_cast<int>(op)].load(); }
  // dblock::call_deadline() as the last call of `op` saw it.
  std::chrono::steady_clock::time_point last_deadline(Op op) const {
    std::lock_guard<std::mutex> record(record_mutex_);
    return deadlines_[static_cast<int>(op)];
  }
  std::vector<LostRecord> lost_leases() const;  // lease_lost() calls
  std::vector<std::uint32_t> released_tags() const;
  // The `by` of every force_release call, in order.
  std::vector<std::string> forced_by() const;
  int subscribed() const { return subscribed_.load(); }
  std::size_t queued(const std::string& name) const;

  // ---- LeaseService ----
  std::string_view name() const override { return "memory"; }
  ServiceTraits traits() const override;
  AcquireResult try_acquire(const AcquireRequest& request) override;
  RenewResult renew(const LeaseKey& lease, std::chrono::milliseconds ttl) override;
  bool release(const LeaseKey& lease) override;
  void lease_lost(const LeaseKey& lease) noexcept override;
  bool force_release(std::string_view name, std::string_view by) override;
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;
  FairQueue* fair_queue() noexcept override { return config_.fair_queue ? this : nullptr; }
  WakeEvents* wake_events() noexcept override { return config_.wake_events ? this : nullptr; }
  GrantEvents* grant_events() noexcept override { return config_.wake_events ? this : nullptr; }
  NativeWait* native_wait() noexcept override { return config_.native_wait ? this : nullptr; }
  std::vector<std::string> degraded() const override { return config_.degraded; }
  HolderProbe* holder_probe() noexcept override { return config_.holder_probe ? this : nullptr; }
  Maintenance* maintenance() noexcept override { return config_.maintenance ? this : nullptr; }

  // ---- FairQueue ----
  Attempt attempt_in_line(const AcquireRequest& request, const Place& place) override;
  void leave(std::string_view name, const OwnerSecret& secret) override;
  Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) override;

  // ---- WakeEvents ----
  void set_listener(Listener listener) override;
  void subscribe(std::string_view) override { ++subscribed_; }
  void unsubscribe(std::string_view) override { --subscribed_; }

  // ---- GrantEvents ----
  std::optional<LeaseGrant> confirm_grant(std::string_view name, const OwnerSecret& secret,
                                          const LeaseGrant& claimed) override;

  // ---- NativeWait ----
  Turn wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                     std::chrono::milliseconds max_wait) override;

  // ---- HolderProbe ----
  std::chrono::milliseconds holder_remaining(std::string_view name, const OwnerSecret& waiter) override;

  // ---- Maintenance ----
  void migrate(bool create) override;
  int schema_version() override { return 1; }
  std::size_t reap(std::size_t batch) override;
  std::optional<std::chrono::microseconds> oldest_unreaped() override;

 private:
  struct Pending {
    Kind kind = Kind::kReleased;
    std::string name;
    std::int64_t next_ticket = 0;
    std::optional<Grant> grant;
    OwnerSecret secret;
    std::string reason;
  };

  void enter(Op op);
  // REQUIRES: store_->mutex held.
  AcquireResult take_locked(const AcquireRequest& request, std::int64_t ticket, MemoryClock::time_point now);
  bool earlier_waiter_locked(const std::string& name, const std::string& secret, std::int64_t ticket,
                             MemoryClock::time_point now) const;
  std::chrono::milliseconds remaining_locked(const std::string& name, MemoryClock::time_point now) const;
  // After a release: grants the name to the first live exclusive waiter (config_.grants) or names it.
  void hand_on_locked(const std::string& name, MemoryClock::time_point now);
  // REQUIRES: store_->mutex held. Queues `event` for every client of the store.
  void post_locked(const Pending& event);
  void deliver(const Pending& event);
  void event_loop();

  const std::shared_ptr<MemoryStore> store_;
  const Config config_;

  std::atomic<std::int64_t> renew_delay_ms_{0};
  std::atomic<bool> refuse_renewals_{false};
  std::atomic<bool> fail_renewals_{false};
  std::atomic<bool> fail_releases_{false};
  std::atomic<std::int64_t> reported_clock_offset_us_{0};
  std::atomic<std::int64_t> reported_clock_step_us_{0};
  std::atomic<int> failing_attempts_{0};
  std::atomic<int> stalling_attempts_{0};
  std::atomic<std::int64_t> stall_ms_{0};
  std::atomic<Fault> fault_kind_{Fault::kUnreachable};
  void maybe_fail_attempt();
  std::atomic<bool> drop_events_{false};
  std::atomic<bool> phantom_waiter_{false};
  std::atomic<int> calls_[static_cast<int>(Op::kCount)] = {};
  std::atomic<int> subscribed_{0};

  mutable std::mutex record_mutex_;
  std::vector<LostRecord> lost_;          // GUARDED_BY(record_mutex_)
  std::vector<std::uint32_t> released_;   // GUARDED_BY(record_mutex_)
  std::vector<std::string> forced_by_;    // GUARDED_BY(record_mutex_)
  std::chrono::steady_clock::time_point deadlines_[static_cast<int>(Op::kCount)] = {};  // GUARDED_BY(record_mutex_)

  std::mutex dispatch_mutex_;  // held while the listener runs
  std::mutex events_mutex_;
  std::condition_variable events_cv_;
  std::deque<Pending> events_;  // GUARDED_BY(events_mutex_)
  Listener listener_;           // GUARDED_BY(events_mutex_)
  bool stop_ = false;           // GUARDED_BY(events_mutex_)
  std::thread event_thread_;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_UNIT_MEMORY_SERVICE_H_
