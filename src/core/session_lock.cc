#include "dblock/session_lock.h"

#include "manager_core.h"

namespace dblock {

const std::string& SessionLock::name() const { return state().name; }
LockMode SessionLock::mode() const { return state().mode; }
std::int64_t SessionLock::key() const { return state().key; }
bool SessionLock::lost() const { return released() || state().lost.load(); }

}  // namespace dblock
