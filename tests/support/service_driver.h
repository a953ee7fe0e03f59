// Drives a manager's lock service directly, as the engine does, for tests that need a second owner
// or a queue entry the engine would not make (LockManager::service()).
#ifndef DBLOCK_TESTS_SUPPORT_SERVICE_DRIVER_H_
#define DBLOCK_TESTS_SUPPORT_SERVICE_DRIVER_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/dblock.h"
#include "dblock/service/call_deadline.h"
#include "dblock/service/capabilities.h"

namespace dblock::testing {

// The lock service behind `manager`.
inline LeaseService& service_of(LockManager& manager) { return manager.service(); }

// What one attempt returned, queued or not.
struct Outcome {
  bool acquired = false;
  std::int64_t fence = 0;
  std::int64_t expires_at_us = 0;
  std::uint32_t tag = 0;
  std::chrono::milliseconds holder_remaining{-1};
  std::int64_t queue_ticket = 0;  // queued attempts only
  int queue_position = -1;        // queued attempts only
};

class ServiceDriver {
 public:
  explicit ServiceDriver(LockManager& manager) : service(service_of(manager)) {}

  // One attempt; queue = true is the attempt of a waiting acquire (ticket 0: not queued yet), with
  // a queue entry of `hold_for` (long by default, so that only the bookkeeping under test removes it).
  Outcome attempt(std::string_view name, LockMode mode, const OwnerSecret& secret, std::chrono::milliseconds ttl,
                  bool queue = false, std::int64_t ticket = 0,
                  std::chrono::milliseconds hold_for = std::chrono::seconds(60)) {
    AcquireRequest request;
    request.name = name;
    request.mode = mode;
    request.ttl = ttl;
    request.secret = &secret;
    request.holder = "test";
    Outcome out;
    AcquireResult result;
    if (queue) {
      FairQueue::Attempt a = service.fair_queue()->attempt_in_line(request, FairQueue::Place{ticket, hold_for});
      result = a.result;
      out.queue_ticket = a.ticket;
      out.queue_position = a.position;
    } else {
      result = service.try_acquire(request);
    }
    out.acquired = result.acquired;
    out.fence = result.fence;
    out.expires_at_us = result.expires_at_us;
    out.tag = result.tag;
    out.holder_remaining = result.holder_remaining;
    return out;
  }

  // One MultiAcquire call as the engine makes it (under a call deadline): `names` in `mode`,
  // secrets[i] owning names[i]. REQUIRES: the service has MultiAcquire.
  std::vector<AcquireResult> acquire_all(const std::vector<std::string>& names, LockMode mode,
                                         const std::vector<OwnerSecret>& secrets,
                                         std::chrono::milliseconds ttl = std::chrono::seconds(30)) {
    std::vector<AcquireRequest> requests;
    for (std::size_t i = 0; i < names.size(); ++i) {
      requests.push_back(AcquireRequest{names[i], mode, ttl, &secrets.at(i), "test"});
    }
    const service::CallDeadlineScope call(std::chrono::steady_clock::now() + std::chrono::seconds(10));
    return service.multi_acquire()->try_acquire_all(requests);
  }

  bool release(std::string_view name, LockMode mode, const OwnerSecret& secret, std::uint32_t tag = 0) {
    return service.release(LeaseKey{name, mode, &secret, tag});
  }
  RenewResult renew(std::string_view name, LockMode mode, const OwnerSecret& secret, std::chrono::milliseconds ttl) {
    return service.renew(LeaseKey{name, mode, &secret, 0}, ttl);
  }
  void leave(std::string_view name, const OwnerSecret& secret) { service.fair_queue()->leave(name, secret); }
  FairQueue::Position position(std::string_view name, const OwnerSecret& secret, std::int64_t ticket) {
    return service.fair_queue()->position(name, secret, ticket);
  }
  std::size_t reap(std::size_t batch) { return service.maintenance()->reap(batch); }

  LeaseService& service;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_SUPPORT_SERVICE_DRIVER_H_
