#include "dblock/lease.h"

#include "manager_core.h"

namespace dblock {

const std::string& Lease::name() const { return state().name; }
LockMode Lease::mode() const { return state().mode; }
std::int64_t Lease::fence() const { return state().fence; }
std::chrono::milliseconds Lease::ttl() const { return state().ttl; }
std::int64_t Lease::expires_at_us() const { return state().expires_at_us.load(); }
std::chrono::steady_clock::time_point Lease::safe_until() const { return state().safe_until_steady(); }
bool Lease::lost() const { return released() || state().is_lost(); }
const OwnerSecret& Lease::owner_secret() const { return state().secret; }
int Lease::hold_count() const { return released() ? 0 : state().holds.load(); }

}  // namespace dblock
