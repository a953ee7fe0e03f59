// PostgreSQL session locks: pg_advisory_lock on a dedicated connection per held lock, refused
// behind a transaction pooler (a lock there would evaporate silently). Internal.
//
// Thread-safe; a handle is used by one thread at a time.
#ifndef DBLOCK_SRC_BACKENDS_POSTGRESQL_SESSION_LOCKS_H_
#define DBLOCK_SRC_BACKENDS_POSTGRESQL_SESSION_LOCKS_H_

#include <memory>

#include "connection.h"
#include "dblock/service/capabilities.h"
#include "dblock/service/sql/session_connections.h"

namespace dblock::postgresql {

class PgSessionLocks final : public dblock::sql::SessionConnections<Context, Connection> {
 public:
  using SessionConnections::SessionConnections;

  std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                          std::chrono::milliseconds wait) override;

 private:
  // An idle session connection (already probed), or a new one, probed for a pooler.
  std::unique_ptr<Connection> session_connection();
  void probe_pooler(Connection& c);
};

// The error for a URL that goes through a proxy or pooler.
std::string pooler_message();

}  // namespace dblock::postgresql

#endif  // DBLOCK_SRC_BACKENDS_POSTGRESQL_SESSION_LOCKS_H_
