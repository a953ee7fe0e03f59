// MariaDB session locks: GET_LOCK on a dedicated connection per held lock (exclusive only: MySQL
// has no shared named locks). GET_LOCK is server-wide, so keys are "<database>:<name>"
// (lock_key()). Internal. Thread-safe; a handle is used by one thread at a time.
#ifndef DBLOCK_SRC_BACKENDS_MYSQL_SESSION_LOCKS_H_
#define DBLOCK_SRC_BACKENDS_MYSQL_SESSION_LOCKS_H_

#include <memory>

#include "connection.h"
#include "dblock/capabilities.h"
#include "pool.h"

namespace dblock::mysql {

class MySessionLocks final : public SessionLocks {
 public:
  explicit MySessionLocks(Context& context);

  std::unique_ptr<SessionLockHandle> acquire_session_lock(std::string_view name, LockMode mode,
                                                          std::chrono::milliseconds wait) override;

  // Used by the handles.
  Context& context() { return context_; }
  void give_back(std::unique_ptr<Connection> c) { idle_.put(std::move(c)); }

 private:
  Context& context_;
  dblock::sql::Pool<Connection> idle_;  // session connections only; take()/put(), never borrow()
};

}  // namespace dblock::mysql

#endif  // DBLOCK_SRC_BACKENDS_MYSQL_SESSION_LOCKS_H_
