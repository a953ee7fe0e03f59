// MariaDB session locks: GET_LOCK on a dedicated connection per held lock (exclusive only: MySQL
// has no shared named locks). GET_LOCK is server-wide, so keys are "<database>:<name>"
// (lock_key()). Internal. Thread-safe; a handle is used by one thread at a time.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_SESSION_LOCKS_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_SESSION_LOCKS_H_

#include <memory>

#include "connection.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/sql/session_connections.h"

namespace dblock::mysql {

class MySessionLocks final : public dblock::sql::SessionConnections<Context, Connection> {
 public:
  using SessionConnections::SessionConnections;

  std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                          std::chrono::milliseconds wait) override;
};

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_SESSION_LOCKS_H_
