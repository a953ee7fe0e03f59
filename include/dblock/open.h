// dblock/open.h — the one factory: a LockManager from a URL.
//
// The schemes are those of the services linked into the program (dblock/schemes.h): with CMake,
// the components dblock::dblock was made of (every service built, unless find_package named some).
// Thread-safe.
#ifndef DBLOCK_OPEN_H_
#define DBLOCK_OPEN_H_

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/lock_manager.h"
#include "dblock/options.h"

namespace dblock {

// Parses `url` (dblock/url.h), connects, applies or checks the schema and returns a running
// manager. Throws UsageError (malformed URL, unknown scheme, scheme of a service not linked in:
// the message lists the schemes available), ConnectionError (unreachable, wrong credentials),
// SchemaError.
std::unique_ptr<LockManager> open(std::string_view url, ManagerOptions options = {});

// As open(url, options), as the first part of a wait that ends at `deadline` (steady clock;
// time_point::max(): no end): the open's calls to its service are bounded by the deadline, but
// given at least kMinOpenTime from now (time to be answered, so an open for a wait of 0 can
// succeed), and a failure the service reports as transient (Error::retryable(): no server
// reachable yet, a server out of connections or starting up) is tried again, with a growing
// pause, until then. When the deadline passes first, throws the last failure, its message saying
// that it lasted to the deadline. A deadline already passed (a wait of 0) tries once. Other
// failures are thrown at once, as by open(url, options).
inline constexpr std::chrono::milliseconds kMinOpenTime{2000};
std::unique_ptr<LockManager> open(std::string_view url, ManagerOptions options,
                                  std::chrono::steady_clock::time_point deadline);

// URL schemes this program can open (names, each followed by its aliases, by name), e.g. {"sqlite"}.
std::vector<std::string> available_schemes();

// Library version, "MAJOR.MINOR.PATCH".
const char* version() noexcept;

}  // namespace dblock

#endif  // DBLOCK_OPEN_H_
