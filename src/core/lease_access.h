// The owner secret of a held Lease, for a service's interop code that checks the lease inside the
// application's own transaction (dblock/postgresql/interop.h). Internal; not installed.
#ifndef DBLOCK_SRC_CORE_LEASE_ACCESS_H_
#define DBLOCK_SRC_CORE_LEASE_ACCESS_H_

#include "dblock/lease.h"
#include "dblock/service.h"

namespace dblock::detail {

struct LeaseAccess {
  // REQUIRES: lease.held().
  static const OwnerSecret& secret(const Lease& lease) { return lease.state_secret(); }
};

}  // namespace dblock::detail

#endif  // DBLOCK_SRC_CORE_LEASE_ACCESS_H_
