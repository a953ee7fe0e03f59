// What the SQLite context (sqlite_context.cc) shares with the SQLite cases.
#ifndef DBLOCK_TESTS_SQLITE_SQLITE_CONTEXT_H_
#define DBLOCK_TESTS_SQLITE_SQLITE_CONTEXT_H_

#include <string>

namespace dblock::testing {

// The owner_secret column of `name`'s row in `prefix` + `table` of the file at `path`, lowercase
// hex ("" when no row or NULL).
std::string stored_owner_in(const std::string& path, const std::string& prefix, const std::string& table,
                            const std::string& name);

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_SQLITE_SQLITE_CONTEXT_H_
