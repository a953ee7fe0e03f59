// Test-only access to a LockManager's lock service, for tests that drive the service directly
// (a second owner's release, a queue entry). Not installed; not part of the API.
#ifndef DBLOCK_SRC_CORE_TEST_ACCESS_H_
#define DBLOCK_SRC_CORE_TEST_ACCESS_H_

#include "dblock/lock_manager.h"
#include "manager_core.h"

namespace dblock::detail {

struct TestAccess {
  static LeaseService& service(LockManager& manager) { return manager.core_->service(); }
  // The engine, which outlives the manager while this pointer does (its figures after shutdown).
  static std::shared_ptr<ManagerCore> core(LockManager& manager) { return manager.core_; }
};

}  // namespace dblock::detail

namespace dblock::testing {

inline LeaseService& service_of(LockManager& manager) { return detail::TestAccess::service(manager); }

}  // namespace dblock::testing

#endif  // DBLOCK_SRC_CORE_TEST_ACCESS_H_
