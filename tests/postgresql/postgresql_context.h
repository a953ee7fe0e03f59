// What the PostgreSQL context (postgresql_context.cc) shares with the PostgreSQL cases.
#ifndef DBLOCK_TESTS_POSTGRESQL_POSTGRESQL_CONTEXT_H_
#define DBLOCK_TESTS_POSTGRESQL_POSTGRESQL_CONTEXT_H_

#include <string>

namespace dblock::testing {

// libpq form of the test URL, for raw pqxx connections.
std::string conninfo();

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_POSTGRESQL_POSTGRESQL_CONTEXT_H_
