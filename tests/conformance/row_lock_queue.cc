// Row locks chosen by a predicate (RowLockRequest::where / order_by), written once for every
// service with row locks: a job queue served by two workers, NULL conditions, and the requests
// refused before anything is sent. A service without row locks refuses them all.
#include <catch2/catch.hpp>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "context.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;

// The first column of every row, as integers (the job ids the request selected first).
std::vector<std::int64_t> ids_of(const std::vector<std::vector<Value>>& rows) {
  std::vector<std::int64_t> ids;
  for (const auto& row : rows) ids.push_back(std::get<std::int64_t>(row.at(0)));
  return ids;
}

// Locks by `request` (waiting at most a call's bound) and returns the ids it got; -1 alone when
// the rows were not locked.
std::vector<std::int64_t> locked_ids(LockManager& manager, const RowLockRequest& request) {
  std::vector<std::int64_t> ids;
  const bool ran = dblock::sql::Database(manager).with_locked_rows(request, [&](Transaction&, const auto& rows) { ids = ids_of(rows); });
  return ran ? ids : std::vector<std::int64_t>{-1};
}

// The message of the UsageError `request` raises, or "" when it raises none.
std::string usage_error_of(LockManager& manager, const RowLockRequest& request) {
  try {
    dblock::sql::Database(manager).with_locked_rows(request, [](Transaction&, const auto&) {});
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

// A job table: ids 1-8, pending ones interleaved with others, inserted out of id order.
std::string create_jobs(LockManager& manager, const std::string& prefix) {
  const std::string table = prefix + "jobs";
  create_app_table(manager, prefix,
                   {"CREATE TABLE " + table + " (id BIGINT PRIMARY KEY, state VARCHAR(16), owner VARCHAR(16))",
                    "INSERT INTO " + table +
                        " VALUES (7, 'pending', NULL), (2, 'done', NULL), (4, 'pending', 'w2'), (1, 'pending', NULL),"
                        " (5, 'running', NULL), (3, 'pending', NULL), (8, 'done', 'w1'), (6, 'pending', NULL)"});
  return table;
}

}  // namespace

TEST_CASE("row locks by predicate: two workers take disjoint batches of pending jobs, in id order",
          "[conformance][rowlock]") {
  const std::string prefix = unique_prefix();
  auto a = open_manager({}, prefix);
  auto b = open_manager({}, prefix);
  const RowLockRequest next{.table = prefix + "jobs",
                            .where = {{"state", "pending"}},
                            .order_by = {"id"},
                            .columns = {"id", "state"},
                            .wait = RowLockWait::kSkipLocked,
                            .limit = 2};
  if (row_locks_of(*a) == nullptr) {
    CHECK_THROWS_AS(dblock::sql::Database(*a).with_locked_rows(next, [](Transaction&, const auto&) {}), UnsupportedError);
    return;
  }
  const std::string table = create_jobs(*a, prefix);
  std::vector<std::int64_t> first, second, newest_first;
  std::vector<std::string> second_states;
  const bool ran = dblock::sql::Database(*a).with_locked_rows(next, [&](Transaction& tx, const std::vector<std::vector<Value>>& rows) {
    first = ids_of(rows);
    for (const std::int64_t id : first) {
      tx.execute("UPDATE " + table + " SET state = 'running' WHERE id = ?", {id});
    }
    // Worker B, on its own manager, while A holds its batch (no Catch2 assertions on this thread).
    std::thread worker_b([&] {
      dblock::sql::Database(*b).with_locked_rows(next, [&](Transaction&, const std::vector<std::vector<Value>>& rows) {
        second = ids_of(rows);
        for (const auto& row : rows) second_states.push_back(std::get<std::string>(row.at(1)));
      });
      // B's batch is free again, A's is not: the pending jobs nobody holds, newest first.
      RowLockRequest newest = next;
      newest.order_by = {"-id"};
      newest.limit = 3;
      newest_first = locked_ids(*b, newest);
    });
    worker_b.join();
  });
  REQUIRE(ran);
  CHECK(first == std::vector<std::int64_t>{1, 3});
  CHECK(second == std::vector<std::int64_t>{4, 6});
  CHECK(second_states == std::vector<std::string>{"pending", "pending"});
  CHECK(newest_first == std::vector<std::int64_t>{7, 6, 4});
  // A committed: its jobs are running now. Keys and where together: both apply.
  RowLockRequest among = {.table = table, .keys = {std::int64_t{1}, std::int64_t{2}, std::int64_t{3},
                                                   std::int64_t{4}, std::int64_t{5}},
                          .where = {{"state", "pending"}}, .order_by = {"id"}};
  CHECK(locked_ids(*a, among) == std::vector<std::int64_t>{4});
  among.where = {{"state", "running"}};
  CHECK(locked_ids(*a, among) == std::vector<std::int64_t>{1, 3, 5});
}

TEST_CASE("row locks by predicate: a NULL value means IS NULL; values of every type are parameters",
          "[conformance][rowlock][needs:row-locks]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  const std::string table = create_jobs(*manager, prefix);
  RowLockRequest unowned{.table = table, .where = {{"state", "pending"}, {"owner", Value{}}}, .order_by = {"id"}};
  CHECK(locked_ids(*manager, unowned) == std::vector<std::int64_t>{1, 3, 6, 7});
  unowned.where = {{"owner", Value{}}, {"state", "done"}};
  CHECK(locked_ids(*manager, unowned) == std::vector<std::int64_t>{2});
  RowLockRequest owned{.table = table, .where = {{"owner", "w2"}}};
  CHECK(locked_ids(*manager, owned) == std::vector<std::int64_t>{4});
  owned.where = {{"id", std::int64_t{8}}, {"owner", "w1"}};
  CHECK(locked_ids(*manager, owned) == std::vector<std::int64_t>{8});
  owned.where = {{"owner", "x' OR '1' = '1"}};  // a value, never SQL
  CHECK(locked_ids(*manager, owned).empty());
}

TEST_CASE("row locks by predicate: a request naming no rows or a bad column is a UsageError naming it",
          "[conformance][rowlock][needs:row-locks]") {
  const std::string prefix = unique_prefix();
  auto manager = open_manager({}, prefix);
  // No table is created: a statement that reached the server would fail with another message.
  const RowLockRequest good{.table = prefix + "jobs", .where = {{"state", "pending"}}, .order_by = {"id"}};
  RowLockRequest bad = good;
  bad.where.clear();
  const std::string none = usage_error_of(*manager, bad);
  CHECK_THAT(none, Catch::Contains("no rows chosen") && Catch::Contains("keys") && Catch::Contains("where"));
  bad = good;
  bad.where = {{"", "pending"}};
  CHECK_THAT(usage_error_of(*manager, bad), Catch::Contains("where column ''"));
  bad.where = {{"state = state OR 1", "pending"}};
  CHECK_THAT(usage_error_of(*manager, bad), Catch::Contains("where column 'state = state OR 1'"));
  bad = good;
  bad.order_by = {"id DESC"};
  CHECK_THAT(usage_error_of(*manager, bad), Catch::Contains("order_by column 'id DESC'"));
  bad.order_by = {"-"};
  CHECK_THAT(usage_error_of(*manager, bad), Catch::Contains("order_by column ''"));
  bad = good;
  bad.columns = {"id; DROP TABLE x"};
  CHECK_THAT(usage_error_of(*manager, bad), Catch::Contains("column 'id; DROP TABLE x'"));
}

}  // namespace dblock::testing
