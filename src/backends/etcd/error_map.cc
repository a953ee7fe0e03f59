#include "error_map.h"

#include "dblock/errors.h"

namespace dblock::etcd {

bool is_lease_not_found(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::NOT_FOUND &&
         status.error_message().find("lease not found") != std::string::npos;
}

void check(const grpc::Status& status, const std::string& what) {
  if (status.ok()) return;
  const std::string code = std::to_string(static_cast<int>(status.error_code()));
  const std::string message = "etcd: " + what + ": " + status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      throw ConnectionError(message, kServiceName, code, true);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      throw ConnectionError(message + " (no answer by the call's deadline)", kServiceName, code, true);
    case grpc::StatusCode::NOT_FOUND:
      if (is_lease_not_found(status)) throw LeaseNotFound(message, kServiceName, code, true);
      throw Error(message, kServiceName, code);
    case grpc::StatusCode::PERMISSION_DENIED:
      throw PermissionError(message + " (the etcd user's role does not grant it)", kServiceName, code);
    case grpc::StatusCode::UNAUTHENTICATED:
      throw PermissionError(message + " (etcd refused the user or password)", kServiceName, code);
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::FAILED_PRECONDITION:
    case grpc::StatusCode::OUT_OF_RANGE:
      throw UsageError(message, kServiceName, code);
    default:
      throw Error(message, kServiceName, code);
  }
}

}  // namespace dblock::etcd
