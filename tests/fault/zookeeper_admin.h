// The ZooKeeper servers of a fault run (standalone, or a 3-node ensemble): Members (members.h)
// through scripts/servers/zookeeper.sh; `srvr` for the version; and a session taken over with its
// id and password and closed, which ends it on the server (forced expiry).
//
// Not thread-safe: the driver's thread only.
#ifndef DBLOCK_TESTS_FAULT_ZOOKEEPER_ADMIN_H_
#define DBLOCK_TESTS_FAULT_ZOOKEEPER_ADMIN_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "members.h"

namespace dblock::fault {

// A session's id and password as a fault_client announces them ("zs <id hex> <password hex>").
struct ZkSession {
  std::int64_t id = 0;
  std::string password;  // raw bytes (16)
};
// Parses the announcement's two fields; id 0 when malformed.
ZkSession parse_zk_session(const std::string& id_hex, const std::string& password_hex);

// The servers (standalone, or an ensemble): Members with ZooKeeper's version (`srvr`) and a forced
// session expiry.
class ZkServers : public Members {
 public:
  // `admin_url`: the zookeeper:// URL naming every server. `script`, `state`: zookeeper.sh and the
  // servers' state directory. Commands' stderr goes to `err_path`.
  ZkServers(const std::string& admin_url, std::string script, std::string state, std::string err_path);

  // The first server's version from `srvr` ("3.8.0-..."), "" if it cannot be read.
  std::string version() const override;
  // Connects to the first server with `session`'s id and password and closes the session: the
  // server ends it and deletes its ephemeral nodes. Returns whether the takeover connected (a
  // session that expired meanwhile cannot be taken over). Bounded by `patience`.
  bool expire(const ZkSession& session, std::chrono::milliseconds patience);
};

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_ZOOKEEPER_ADMIN_H_
