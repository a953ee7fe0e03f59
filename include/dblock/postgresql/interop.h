// dblock/postgresql/interop.h — opt-in: dblock checks and locks inside the application's own
// libpqxx transaction. Including this header means including <pqxx/pqxx>; link dblock::dblock
// (which links libpqxx) as usual.
//
// All functions run statements on `tx` and so share its thread-safety rules (one thread).
#ifndef DBLOCK_POSTGRESQL_INTEROP_H_
#define DBLOCK_POSTGRESQL_INTEROP_H_

#include <pqxx/pqxx>

#include <chrono>
#include <string_view>
#include <vector>

#include "dblock/sql/features.h"
#include "dblock/lease.h"

namespace dblock::postgresql {

// Guard: verifies inside `tx` that `lease` is still held with its fence (unexpired on the server
// clock) and locks its lease row FOR SHARE, so that nobody can take the lease over before `tx`
// ends: if `tx` commits, it committed while the lease was held. Throws LeaseLostError otherwise
// (then abort `tx`). `table_prefix` must be the manager's ManagerOptions::table_prefix.
void guard(pqxx::transaction_base& tx, const Lease& lease, std::string_view table_prefix = "dblock_");

// Transaction-level advisory lock (pg_advisory_xact_lock on advisory_key(name)), released when
// `tx` ends. `wait` 0 tries once; otherwise waits up to `wait` via SET LOCAL lock_timeout.
// Returns whether the lock was obtained. After a timeout `tx` is aborted by the server; abort it.
bool xact_lock(pqxx::transaction_base& tx, std::string_view name, std::chrono::milliseconds wait,
               LockMode mode = LockMode::kExclusive);

// Row lock inside `tx` (see RowLockRequest). Returns false, leaving `rows` empty, when NOWAIT met
// a locked row or the wait timed out (then `tx` is aborted by the server; abort it).
bool lock_rows(pqxx::transaction_base& tx, const RowLockRequest& request, pqxx::result& rows);

}  // namespace dblock::postgresql

#endif  // DBLOCK_POSTGRESQL_INTEROP_H_
