// Numbered schema migrations embedded from migrations/<backend>/NNNN_*.sql at build time
// (cmake/embed_migrations.cmake). Not part of the public API.
#ifndef DBLOCK_SERVICE_SQL_MIGRATION_H_
#define DBLOCK_SERVICE_SQL_MIGRATION_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace dblock::sql {

struct Migration {
  int number;        // NNNN from the file name; applied in increasing order
  const char* name;  // file name without extension
  const char* sql;   // statements; "{{prefix}}" stands for the validated table prefix
};

// The highest migration number, 0 when there is none.
inline int latest_migration(const std::vector<Migration>& migrations) {
  return migrations.empty() ? 0 : migrations.back().number;
}

// The schema decision every backend makes under its migration lock: throws SchemaError when the
// database is newer than this library, or behind it while `create` is false. `backend` names the
// backend ("sqlite"), `where` the database in the message ("dblock tables in /var/x.db").
void check_schema_version(std::string_view backend, std::string_view where, int current, int latest, bool create);

// The same decision made before any lock is taken (an open reads the version without the
// migration lock, which a bystander could hold): false when the schema is this library's, true
// when it is behind and `create` allows migrating; otherwise throws as check_schema_version.
bool migration_needed(std::string_view backend, std::string_view where, int current, int latest, bool create);

// How long a migration waits for its migration lock: 15 s, or until 1 s before the call's
// deadline (call_deadline(): an open's own wait, dblock::open(url, options, deadline)) if that is
// sooner, and never less than 1 s. Whole milliseconds.
std::chrono::milliseconds migration_lock_wait();
// A wait as a message says it: "15 s", "2.5 s".
std::string seconds_text(std::chrono::milliseconds wait);

// Replaces every "{{prefix}}" in `sql`. REQUIRES: prefix validated by validate_table_prefix.
inline std::string render_migration(std::string_view sql, std::string_view prefix) {
  std::string out;
  constexpr std::string_view kToken = "{{prefix}}";
  std::size_t pos = 0;
  while (true) {
    std::size_t hit = sql.find(kToken, pos);
    if (hit == std::string_view::npos) break;
    out.append(sql.substr(pos, hit - pos));
    out.append(prefix);
    pos = hit + kToken.size();
  }
  out.append(sql.substr(pos));
  return out;
}

}  // namespace dblock::sql

#endif  // DBLOCK_SERVICE_SQL_MIGRATION_H_
