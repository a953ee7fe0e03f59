// Leader election on a lease (dblock/election.h): a campaign thread that acquires, holds while the
// lease is safe, and campaigns again after a loss.
#include "dblock/election.h"
#include "dblock/service/thread_annotations.h"

#include <condition_variable>
#include <mutex>
#include <stop_token>
#include <thread>
#include <utility>

#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"

namespace dblock {
namespace detail {

// What the Election handle and its thread share. The lease's on_lost holds a weak reference.
struct ElectionState {
  ElectionState(LockManager& manager_in, std::string name_in, ElectionOptions options_in)
      : manager(manager_in), name(std::move(name_in)), options(std::move(options_in)) {}

  bool leader_locked() const DBLOCK_REQUIRES(mutex) { return lease.has_value() && !lost && !lease->lost(); }

  LockManager& manager;
  const std::string name;
  const ElectionOptions options;
  std::stop_source stop;  // resign() and destruction
  std::thread thread;     // the campaign; joined by ~Election

  mutable service::Mutex mutex;
  mutable std::condition_variable changed;  // leadership, loss, stop or the campaign's end
  std::optional<Lease> lease DBLOCK_GUARDED_BY(mutex);  // the current leadership's
  bool lost DBLOCK_GUARDED_BY(mutex) = false;  // the lease's on_lost ran
  std::string lost_reason DBLOCK_GUARDED_BY(mutex);
  bool campaigning DBLOCK_GUARDED_BY(mutex) = true;
  std::exception_ptr failure DBLOCK_GUARDED_BY(mutex);
  std::thread::id campaign_thread DBLOCK_GUARDED_BY(mutex);  // set by the thread itself
};

}  // namespace detail

namespace {

using detail::ElectionState;

// Waits in line for the name until it is ours (a lease) or the campaign is stopped (empty).
std::optional<Lease> campaign_once(const std::shared_ptr<ElectionState>& s) {
  AcquireOptions options;
  options.ttl = s->options.ttl;
  options.stop = s->stop.get_token();
  options.on_lost = [weak = std::weak_ptr<ElectionState>(s)](const LostLease& lost) {
    const std::shared_ptr<ElectionState> state = weak.lock();
    if (state == nullptr) return;
    service::MutexLock lock(state->mutex);
    state->lost = true;
    state->lost_reason = lost.reason;
    state->changed.notify_all();
  };
  return s->manager.acquire(s->name, kWaitForever, options);
}

// Holds the leadership until it is lost or given up; releases the lease; says how it ended.
Revocation hold(ElectionState& s) {
  service::UniqueLock lock(s.mutex);
  Revocation out{s.name, s.lease->fence(), false, ""};
  for (;;) {
    if (s.stop.stop_requested()) {
      out.resigned = true;
      out.reason = "resigned";
      break;
    }
    if (s.lost || s.lease->lost()) {
      out.reason = s.lost_reason.empty() ? "the lease's safe-until passed without a renewal" : s.lost_reason;
      break;
    }
    // Woken by a loss or a stop; else at safe-until, which each renewal moves on.
    s.changed.wait_until(lock.native(), s.lease->safe_until());
  }
  Lease lease = std::move(*s.lease);
  s.lease.reset();
  s.changed.notify_all();
  lock.unlock();
  lease.release();  // a lost lease: kAlreadyLost; the service drops what it kept for it
  return out;
}

void end_campaign(ElectionState& s, std::exception_ptr failure) {
  service::MutexLock lock(s.mutex);
  s.campaigning = false;
  if (failure) s.failure = failure;
  s.changed.notify_all();
}

// The election's thread: campaign, lead, campaign again, until stopped or a non-transient error.
void run_campaign(const std::shared_ptr<ElectionState>& s) {
  {
    service::MutexLock lock(s->mutex);
    s->campaign_thread = std::this_thread::get_id();
  }
  try {
    while (!s->stop.stop_requested()) {
      std::optional<Lease> lease = campaign_once(s);
      if (!lease) continue;  // stopped
      Leadership won{s->name, lease->fence()};
      {
        service::MutexLock lock(s->mutex);
        s->lease = std::move(lease);
        s->lost = false;
        s->lost_reason.clear();
        s->changed.notify_all();
      }
      std::exception_ptr callback_failure;
      try {
        if (s->options.on_elected) s->options.on_elected(won);
      } catch (...) {
        callback_failure = std::current_exception();  // ends the campaign, after giving up the lease
        s->stop.request_stop();
      }
      const Revocation revoked = hold(*s);
      if (s->options.on_revoked) s->options.on_revoked(revoked);
      if (callback_failure) std::rethrow_exception(callback_failure);
    }
    end_campaign(*s, nullptr);
  } catch (...) {
    end_campaign(*s, std::current_exception());
  }
}

}  // namespace

Election::Election(LockManager& manager, std::string name, ElectionOptions options) {
  validate_lock_name(name);
  state_ = std::make_shared<ElectionState>(manager, std::move(name), std::move(options));
  state_->thread = std::thread([s = state_] { run_campaign(s); });
}

Election::~Election() {
  resign();
  state_->thread.join();
}

const std::string& Election::name() const { return state_->name; }

bool Election::is_leader() const {
  service::MutexLock lock(state_->mutex);
  return state_->leader_locked();
}

std::optional<std::int64_t> Election::term() const {
  service::MutexLock lock(state_->mutex);
  if (!state_->leader_locked()) return std::nullopt;
  return state_->lease->fence();
}

bool Election::await_leadership(std::chrono::milliseconds wait) const {
  service::UniqueLock lock(state_->mutex);
  state_->changed.wait_for(lock.native(), wait, [&]() DBLOCK_REQUIRES(state_->mutex) { return state_->leader_locked() || !state_->campaigning; });
  return state_->leader_locked();
}

void Election::resign() {
  ElectionState& s = *state_;
  s.stop.request_stop();  // wakes a waiting acquire (AcquireOptions::stop)
  service::UniqueLock lock(s.mutex);
  s.changed.notify_all();  // wakes a holding leader
  if (std::this_thread::get_id() == s.campaign_thread) return;  // from a callback: the loop ends it
  s.changed.wait(lock.native(), [&]() DBLOCK_REQUIRES(s.mutex) { return !s.campaigning; });
}

std::exception_ptr Election::failure() const {
  service::MutexLock lock(state_->mutex);
  return state_->failure;
}

std::optional<Leader> current_leader(LockManager& manager, std::string_view name) {
  const std::optional<LeaseInfo> info = manager.inspect(name);
  if (!info || info->mode != LockMode::kExclusive) return std::nullopt;
  if (info->expires_at_us != 0 && info->expires_in_us <= 0) return std::nullopt;  // expired, not yet reaped
  return Leader{info->holder, info->fence};
}

}  // namespace dblock
