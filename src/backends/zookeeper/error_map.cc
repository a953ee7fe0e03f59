#include "error_map.h"

#include <zookeeper/zookeeper.h>

#include "dblock/errors.h"
#include "paths.h"

namespace dblock::zookeeper {
namespace {

// Why a call failed, for its ConnectionError.
std::string failure_text(int rc) {
  if (rc == ZOPERATIONTIMEOUT) {
    return std::string(zerror(rc)) + ": no reply by the client's own deadline (two thirds of the session timeout)";
  }
  return zerror(rc);
}

}  // namespace

bool connection_failure(int rc) {
  return rc == ZCONNECTIONLOSS || rc == ZOPERATIONTIMEOUT || rc == ZSESSIONEXPIRED || rc == ZINVALIDSTATE ||
         rc == ZCLOSING || rc == ZSESSIONMOVED;
}

void check_reply_code(int rc, const std::string& what, const std::string& where) {
  if (connection_failure(rc)) {
    throw ConnectionError("zookeeper: " + what + " on " + where + " failed: " + failure_text(rc), kServiceName,
                          std::to_string(rc));
  }
  if (rc == ZNOAUTH) {
    throw PermissionError("zookeeper: " + what + ": not allowed by the node's ACL", kServiceName, std::to_string(rc));
  }
}

void throw_send_failure(int rc, const std::string& what, const std::string& where) {
  const std::string message = "zookeeper: " + what + " on " + where + " failed: " + zerror(rc);
  if (rc == ZBADARGUMENTS) throw UsageError(message, kServiceName, std::to_string(rc));
  throw ConnectionError(message, kServiceName, std::to_string(rc));
}

}  // namespace dblock::zookeeper
