#include "error_map.h"

#include "dblock/errors.h"

namespace dblock::etcd {

bool is_lease_not_found(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::NOT_FOUND &&
         status.error_message().find("lease not found") != std::string::npos;
}

void check(const grpc::Status& status, const std::string& what, const std::string& needs) {
  if (status.ok()) return;
  const std::string code = std::to_string(static_cast<int>(status.error_code()));
  const std::string message = "etcd: " + what + ": " + status.error_message();
  const std::string& text = status.error_message();
  if (text.find("database space exceeded") != std::string::npos) {
    throw Error(message + " (etcd's NOSPACE alarm: compact and defragment the members, then `etcdctl alarm disarm`)",
                kServiceName, code);
  }
  if (text.find("authentication failed") != std::string::npos) {
    throw PermissionError(message + " (etcd refused the user or password)", kServiceName, code);
  }
  if (text.find("user name is empty") != std::string::npos) {
    throw PermissionError(message + " (etcd has auth enabled: give a user and password in the URL)", kServiceName, code);
  }
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::ABORTED:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::UNKNOWN:
    case grpc::StatusCode::INTERNAL:
      throw ConnectionError(message, kServiceName, code, true);
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::CANCELLED:
      throw ConnectionError(message + " (no answer by the call's deadline)", kServiceName, code, true);
    case grpc::StatusCode::NOT_FOUND:
      if (is_lease_not_found(status)) throw LeaseNotFound(message, kServiceName, code, true);
      throw Error(message, kServiceName, code);
    case grpc::StatusCode::PERMISSION_DENIED:
      throw PermissionError(message + " (the etcd user's role does not grant it" + (needs.empty() ? "" : ": " + needs) + ")",
                            kServiceName, code);
    case grpc::StatusCode::UNAUTHENTICATED:
      throw PermissionError(message + " (etcd refused the user or password)", kServiceName, code);
    case grpc::StatusCode::FAILED_PRECONDITION:  // "not leader", "no leader": an election under way
      if (text.find("leader") != std::string::npos) throw ConnectionError(message, kServiceName, code, true);
      throw UsageError(message, kServiceName, code);
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::OUT_OF_RANGE:
      throw UsageError(message, kServiceName, code);
    default:
      throw Error(message, kServiceName, code);
  }
}

}  // namespace dblock::etcd
