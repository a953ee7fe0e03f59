// ZooKeeper client return codes into the dblock::Error tree, as every other service has its
// error map. A code that is an answer (ZNONODE, ZNODEEXISTS, ZBADVERSION, ZNOTEMPTY, ...) is the
// caller's to read; a code that is a failure of the call is thrown:
//   ZCONNECTIONLOSS, ZOPERATIONTIMEOUT, ZSESSIONEXPIRED,   ConnectionError (the code as sqlstate;
//     ZINVALIDSTATE, ZCLOSING, ZSESSIONMOVED                 the session's expiry is reported
//                                                           by the caller, session.cc)
//   ZNOAUTH                                                PermissionError (the node's ACL)
//   ZBADARGUMENTS, when a request is refused at sending    UsageError
//   any other code refused at sending (out of memory)      ConnectionError
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_ERROR_MAP_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_ERROR_MAP_H_

#include <string>

namespace dblock::zookeeper {

// True for the codes that mean the call's connection or session failed.
bool connection_failure(int rc);

// Throws for a reply code that is a failure of the call `what` on `where`; returns otherwise.
void check_reply_code(int rc, const std::string& what, const std::string& where);

// Throws for a request the client refused to send (`rc` != ZOK).
[[noreturn]] void throw_send_failure(int rc, const std::string& what, const std::string& where);

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_ERROR_MAP_H_
