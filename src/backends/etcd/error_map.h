// gRPC statuses of etcd's API into the dblock::Error tree. Internal.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_ERROR_MAP_H_
#define DBLOCK_SRC_BACKENDS_ETCD_ERROR_MAP_H_

#include <grpcpp/grpcpp.h>

#include <string>

#include "dblock/errors.h"

namespace dblock::etcd {

inline constexpr const char* kServiceName = "etcd";

// A call named an etcd lease that is gone: the acquisition that made it starts over.
class LeaseNotFound : public ConnectionError {
 public:
  using ConnectionError::ConnectionError;
};

// Throws the dblock::Error for a failed `status` of the call `what`; returns on OK.
//   "database space exceeded"                 Error (etcd's NOSPACE alarm: an operator's to clear)
//   "authentication failed"                   PermissionError (user or password refused)
//   UNAVAILABLE, ABORTED, RESOURCE_EXHAUSTED, ConnectionError, retryable (no member answered, a
//     UNKNOWN, INTERNAL, FAILED_PRECONDITION   leader election, a member shedding load, a stream
//     about a leader                           reset)
//   DEADLINE_EXCEEDED, CANCELLED              ConnectionError, retryable (no answer by the call's
//                                             deadline: a stalled member or path)
//   PERMISSION_DENIED                         PermissionError (the user's role lacks the range),
//                                             ending with `needs` (what to grant)
//   UNAUTHENTICATED, "user name is empty"     PermissionError (user or password refused, or none
//                                             given to a cluster with auth enabled)
//   INVALID_ARGUMENT, FAILED_PRECONDITION,    UsageError (a request etcd refuses: a key range
//     OUT_OF_RANGE                             without permission to read, a compacted revision)
//   NOT_FOUND of a lease                      LeaseNotFound, retryable (it expired or was revoked
//                                             before the call that named it: a late answer)
//   NOT_FOUND otherwise                       Error
//   anything else                             Error
void check(const grpc::Status& status, const std::string& what, const std::string& needs = "");

// etcd's "requested lease not found" (a lease that expired or was revoked).
bool is_lease_not_found(const grpc::Status& status);

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_ERROR_MAP_H_
