#include "dblock/service/sql/migration.h"

#include "dblock/errors.h"

namespace dblock::sql {

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
