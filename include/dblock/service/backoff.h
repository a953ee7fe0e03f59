// dblock/service/backoff.h — jitter and the pause between refusals, the rule every service and
// the engine share so that callers refused together do not come back together.
//
// Thread-safe: the generator is per thread, seeded from the OS (not for secrets: see OwnerSecret).
#ifndef DBLOCK_SERVICE_BACKOFF_H_
#define DBLOCK_SERVICE_BACKOFF_H_

#include <chrono>

namespace dblock::service {

// Uniform random double in [0, 1).
double jitter_unit();
// `base` scaled by a random factor in [1 - spread, 1 + spread].
std::chrono::microseconds jittered(std::chrono::microseconds base, double spread = 0.5);
// The pause before the n-th retry (n from 0) of a refusal that may pass (opening a service, taking
// a session lock): 50 ms doubling to 1 s, scaled by [0.5, 1); never past `deadline` (steady_clock).
std::chrono::steady_clock::duration refusal_pause(int n, std::chrono::steady_clock::time_point deadline);

}  // namespace dblock::service

#endif  // DBLOCK_SERVICE_BACKOFF_H_
