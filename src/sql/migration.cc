#include "dblock/service/sql/migration.h"

#include <algorithm>
#include <cstdio>

#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"

namespace dblock::sql {

std::chrono::milliseconds migration_lock_wait() {
  using std::chrono::milliseconds;
  // kAnswer: left of the call for the server to say it timed out, and the holder to be looked up.
  constexpr milliseconds kLongest{15'000}, kLeast{1'000}, kAnswer{1'000};
  const auto deadline = call_deadline();
  const auto now = std::chrono::steady_clock::now();
  if (deadline == std::chrono::steady_clock::time_point::max() || deadline - now >= kLongest + kAnswer) return kLongest;
  return std::max(kLeast, std::chrono::duration_cast<milliseconds>(deadline - now - kAnswer));
}

std::string seconds_text(std::chrono::milliseconds wait) {
  if (wait.count() % 1000 == 0) return std::to_string(wait.count() / 1000) + " s";
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f s", static_cast<double>(wait.count()) / 1000.0);
  return text;
}

void check_schema_version(std::string_view backend, std::string_view where, int current, int latest, bool create) {
  const std::string name(backend);
  if (current > latest) {
    throw SchemaError(name + ": database schema version " + std::to_string(current) + " is newer than this library's (" +
                          std::to_string(latest) + "); upgrade dblock",
                      name);
  }
  if (current < latest && !create) {
    throw SchemaError(name + ": " + std::string(where) + " " +
                          (current == 0 ? std::string("missing") : "outdated (version " + std::to_string(current) + ")") +
                          "; run `dblock migrate` or enable ManagerOptions::auto_migrate",
                      name);
  }
}

bool migration_needed(std::string_view backend, std::string_view where, int current, int latest, bool create) {
  if (current < latest && create) return true;
  check_schema_version(backend, where, current, latest, create);
  return false;
}

}  // namespace dblock::sql
