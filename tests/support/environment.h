// What a backend's test binary reads from its environment (ctest sets it; see each backend's
// tests/<backend>/CMakeLists.txt).
#ifndef DBLOCK_TESTS_SUPPORT_ENVIRONMENT_H_
#define DBLOCK_TESTS_SUPPORT_ENVIRONMENT_H_

#include <string>

namespace dblock::testing {

// The variable's value, or "" when it is unset.
std::string env(const char* name);

// For a static initializer of a backend's test binary: when `url_var` is unset and `skip_var` is
// "1" (an explicit opt-out), ends the process with status 0 and a message on stderr before any
// case runs (the conformance cases cannot be skipped one by one). Returns false otherwise.
bool exit_if_opted_out(const char* program, const char* url_var, const char* skip_var);

// The server URL in `url_var`; throws when it is unset, so that a run that needs a server and has
// none fails instead of passing.
std::string required_server_url(const char* url_var, const char* skip_var);

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_SUPPORT_ENVIRONMENT_H_
