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

bool Backend::compare_and_set(const VersionedUpdate&) { unsupported(*this, "optimistic compare-and-set"); }

std::optional<std::int64_t> Backend::read_version(std::string_view, std::string_view, const Value&,
                                                  std::string_view) {
  unsupported(*this, "optimistic compare-and-set");
}

}  // namespace dblock
