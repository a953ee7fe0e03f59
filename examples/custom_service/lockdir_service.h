// lockdir — a lock service written outside dblock, on its public service-author kit alone
// (dblock/service/kit.h): exclusive leases kept in one state file in a local directory, for the
// processes of one host. URL: lockdir:///absolute/dir (the directory is made when missing).
//
// What it shows: the six calls of LeaseService and nothing optional (no waiters' line, no events:
// the engine polls), registered under a scheme of its own at run time, passing the conformance
// suite for what it declares (tests/custom_service_conformance.cc).
//
// How: every call takes an exclusive flock(2) on <dir>/<prefix>state.lock, bounded by the call's
// deadline (dblock::call_deadline()), reads <dir>/<prefix>state, decides on this host's wall clock
// (the service's clock: every client of the directory runs on this host), and writes the state
// back whole (a new file, fsync'd, renamed over the old one). The state holds a SHA-256 digest of
// each owner secret, never the secret. Fences: one counter for the directory, that only grows.
//
// Thread-safe: each call opens its own descriptors (close-on-exec) and holds the flock throughout.
#ifndef DBLOCK_EXAMPLES_CUSTOM_SERVICE_LOCKDIR_SERVICE_H_
#define DBLOCK_EXAMPLES_CUSTOM_SERVICE_LOCKDIR_SERVICE_H_

#include <filesystem>
#include <memory>
#include <string>

#include "dblock/service/kit.h"

namespace lockdir {

inline constexpr const char* kServiceName = "lockdir";

// Adds the scheme "lockdir" to dblock::open(). Returns false when it was already added.
bool register_scheme();

// The service on directory `dir`, its files named with `prefix` (ManagerOptions::table_prefix:
// [a-z_][a-z0-9_]*). Throws dblock::UsageError for a bad prefix or URL parameter,
// dblock::ConnectionError when the directory cannot be made or used.
std::unique_ptr<dblock::LeaseService> make_service(const std::filesystem::path& dir, const std::string& prefix);

}  // namespace lockdir

#endif  // DBLOCK_EXAMPLES_CUSTOM_SERVICE_LOCKDIR_SERVICE_H_
