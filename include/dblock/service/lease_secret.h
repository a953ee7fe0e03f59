// The owner secret of a held Lease, for a service's interop code that checks the lease inside the
// application's own transaction (dblock/postgresql/interop.h).
#ifndef DBLOCK_SERVICE_LEASE_SECRET_H_
#define DBLOCK_SERVICE_LEASE_SECRET_H_

#include "dblock/lease.h"
#include "dblock/service/lease_service.h"

namespace dblock::service {

struct LeaseAccess {
  // REQUIRES: lease.held().
  static const OwnerSecret& secret(const Lease& lease) { return lease.state_secret(); }
};

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_LEASE_SECRET_H_
