// dblock/open.h — the one factory: a LockManager from a URL.
//
// Part of the dblock::dblock target, which links every backend this build enabled. Thread-safe.
#ifndef DBLOCK_OPEN_H_
#define DBLOCK_OPEN_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/lock_manager.h"
#include "dblock/options.h"

namespace dblock {

// Parses `url` (dblock/url.h), connects, applies or checks the schema and returns a running
// manager. Throws UsageError (malformed URL, unknown scheme, scheme of a backend this build does
// not include), ConnectionError (unreachable, wrong credentials), SchemaError.
std::unique_ptr<LockManager> open(std::string_view url, ManagerOptions options = {});

// URL schemes this build can open, e.g. {"sqlite"}.
std::vector<std::string> available_schemes();

// Library version, "MAJOR.MINOR.PATCH".
const char* version() noexcept;

}  // namespace dblock

#endif  // DBLOCK_OPEN_H_
