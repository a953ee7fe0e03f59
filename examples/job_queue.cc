// README's job-queue example as a complete program: `job_queue URL` on PostgreSQL or MariaDB (CI
// runs it on both). The lines between the snippet markers are README's text, byte for byte
// (scripts/check-snippets.sh compares them); the rest gives the example what it names.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <variant>
#include <vector>

#include <dblock/dblock.h>

namespace {

int jobs_run = 0;
void run_job(const dblock::Value& payload) {
  ++jobs_run;
  std::printf("job %s\n", std::get<std::string>(payload).c_str());
}

// A fresh queue of 12 pending jobs; an application has its own table.
void create_jobs(dblock::LockManager& manager) {
  dblock::sql::Database(manager).run_in_transaction_lock("job-queue-setup", std::chrono::seconds(5), [](dblock::Transaction& tx) {
    tx.execute("CREATE TABLE IF NOT EXISTS jobs (id BIGINT PRIMARY KEY, state VARCHAR(16), payload VARCHAR(64))");
    tx.execute("DELETE FROM jobs");
    for (std::int64_t id = 1; id <= 12; ++id) {
      tx.execute("INSERT INTO jobs (id, state, payload) VALUES (?, 'pending', ?)", {id, "payload-" + std::to_string(id)});
    }
  });
}

int job_queue(const std::string& url) {
  auto manager = dblock::open(url);
  create_jobs(*manager);
  // snippet-begin: job-queue
// Each worker takes the next 10 pending jobs nobody else holds; rows stay locked until the body returns.
dblock::RowLockRequest next{.table = "jobs", .where = {{"state", "pending"}}, .order_by = {"id"},
                            .columns = {"id", "payload"}, .wait = dblock::RowLockWait::kSkipLocked, .limit = 10};
dblock::sql::Database(*manager).with_locked_rows(next, [](dblock::Transaction& tx, const auto& rows) {
  for (const auto& row : rows) {
    run_job(row[1]);
    tx.execute("UPDATE jobs SET state = 'done' WHERE id = ?", {row[0]});
  }
});
  // snippet-end: job-queue
  // What the example must have done (CI fails it otherwise): 10 of the 12 jobs, and 2 left.
  std::int64_t pending = -1;
  dblock::sql::Database(*manager).run_in_transaction_lock("job-queue-check", std::chrono::seconds(5), [&](dblock::Transaction& tx) {
    pending = std::get<std::int64_t>(tx.query("SELECT COUNT(*) FROM jobs WHERE state = 'pending'")[0][0]);
  });
  if (jobs_run != 10 || pending != 2) {
    std::fprintf(stderr, "job_queue: ran %d jobs, %lld left pending\n", jobs_run, static_cast<long long>(pending));
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: job_queue URL\n");
    return 2;
  }
  try {
    return job_queue(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "job_queue: %s\n", e.what());
    return 1;
  }
}
