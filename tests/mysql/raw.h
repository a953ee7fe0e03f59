// Helpers of the MariaDB test binary: raw Connector/C++ connections to the test database
// (mysql_context.cc, which every build compiles), and managers opened with other credentials
// (mysql_test.cc, the plain build's).
#ifndef DBLOCK_TESTS_MYSQL_RAW_H_
#define DBLOCK_TESTS_MYSQL_RAW_H_

#include <cppconn/connection.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dblock/dblock.h"

namespace dblock::testing {

Url test_url();
// A raw connection to the test database (as the URL's user unless given).
std::unique_ptr<::sql::Connection> raw(const std::string& user = "", const std::string& password = "");
void exec(::sql::Connection& c, const std::string& statement);
// Every row, each field as text ("NULL" for NULL).
std::vector<std::vector<std::string>> rows_of(::sql::Connection& c, const std::string& statement,
                                              const std::vector<std::string>& params = {});
// The one row's first field (-1 for NULL).
std::int64_t scalar(::sql::Connection& c, const std::string& statement, const std::vector<std::string>& params = {});
// The owner digest stored for `name` in `prefix` + `table` (mysql_context.cc, the suite's too).
std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name);
// The test URL with other credentials (and database).
std::string url_as(const std::string& user, const std::string& password, const std::string& database = "");
std::unique_ptr<LockManager> open_with(const std::string& url, ManagerOptions options, const std::string& prefix);

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_MYSQL_RAW_H_
