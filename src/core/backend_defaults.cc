// Default implementations of the optional Backend operations: they report "unsupported".
#include <string>

#include "dblock/backend.h"
#include "dblock/errors.h"

namespace dblock {

namespace {
[[noreturn]] void unsupported(const Backend& backend, const char* what) {
  throw UnsupportedError(std::string(what) + " is not supported by the " + std::string(backend.name()) +
                             " backend",
                         std::string(backend.name()));
}
}  // namespace

bool Backend::run_in_transaction_lock(std::string_view, std::chrono::milliseconds,
                                      const std::function<void(Transaction&)>&) {
  unsupported(*this, "a transaction lock");
}

void Backend::run_guarded(std::string_view, std::int64_t, const OwnerSecret&,
                          const std::function<void(Transaction&)>&) {
  unsupported(*this, "a guarded write");
}

std::unique_ptr<SessionLockHandle> Backend::acquire_session_lock(std::string_view, LockMode,
                                                                 std::chrono::milliseconds) {
  unsupported(*this, "a session lock (a lock that dies with the connection)");
}

bool Backend::run_with_locked_rows(
    const RowLockRequest&, const std::function<void(Transaction&, const std::vector<std::vector<Value>>&)>&) {
  unsupported(*this, "a row lock (SELECT ... FOR UPDATE)");
}

bool Backend::compare_and_set(const VersionedUpdate&) { unsupported(*this, "optimistic compare-and-set"); }

std::optional<std::int64_t> Backend::read_version(std::string_view, std::string_view, const Value&,
                                                  std::string_view) {
  unsupported(*this, "optimistic compare-and-set");
}

}  // namespace dblock
