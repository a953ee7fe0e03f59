// A worker pool on PostgreSQL or MariaDB: `worker_pool URL [WORKERS]`. Each worker holds a slot
// (a lease, "worker-pool/slot-N"); it claims pending jobs with with_locked_rows (SKIP LOCKED: the
// workers take disjoint batches, and the row locks last only as long as the claim), works on them
// outside any transaction, and completes them through run_guarded, which commits only while the
// worker still holds its slot with the fence it claimed them under. A worker that lost its slot
// (paused, cut off, evicted) can no longer complete anything; whoever takes the slot next puts
// that worker's claims back in line.
//
// The program checks what it claims (CI runs it on both servers): every job done exactly once,
// and a worker evicted mid-batch refused.
#include <dblock/dblock.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <optional>
#include <string>
#include <thread>
#include <variant>
#include <vector>

namespace {

using namespace std::chrono_literals;
constexpr std::int64_t kJobs = 40;

std::int64_t as_int(const dblock::Value& v) { return std::get<std::int64_t>(v); }

// A fresh table of pending jobs; an application has its own.
void create_jobs(dblock::LockManager& manager) {
  dblock::sql::Database(manager).run_in_transaction_lock("worker-pool/setup", 10s, [](dblock::Transaction& tx) {
    tx.execute("CREATE TABLE IF NOT EXISTS pool_jobs (id BIGINT PRIMARY KEY, state VARCHAR(16) NOT NULL,"
               " payload VARCHAR(64) NOT NULL, claimed_by VARCHAR(64), claim_fence BIGINT, result VARCHAR(80))");
    tx.execute("DELETE FROM pool_jobs");
    for (std::int64_t id = 1; id <= kJobs; ++id) {
      tx.execute("INSERT INTO pool_jobs (id, state, payload) VALUES (?, 'pending', ?)", {id, "job-" + std::to_string(id)});
    }
  });
}

// The work itself: here, a string computed from the payload.
std::string work_on(const std::string& payload) { return payload + " done"; }

class Worker {
 public:
  Worker(dblock::LockManager& manager, std::string slot) : manager_(manager), slot_(std::move(slot)) {}

  // Takes the slot (waiting for it) and puts back what an earlier holder of the slot claimed.
  bool start() {
    lease_ = manager_.acquire(slot_, 30s);
    if (!lease_) return false;
    dblock::sql::Database(manager_).run_guarded(*lease_, [&](dblock::Transaction& tx) {
      tx.execute("UPDATE pool_jobs SET state = 'pending', claimed_by = NULL, claim_fence = NULL"
                 " WHERE state = 'claimed' AND claimed_by = ? AND claim_fence < ?", {slot_, lease_->fence()});
    });
    return true;
  }

  // Claims up to 5 pending jobs nobody else is claiming; their ids and payloads.
  std::vector<std::vector<dblock::Value>> claim() {
    std::vector<std::vector<dblock::Value>> claimed;
    const dblock::RowLockRequest next{.table = "pool_jobs", .where = {{"state", "pending"}}, .order_by = {"id"},
                                      .columns = {"id", "payload"}, .wait = dblock::RowLockWait::kSkipLocked,
                                      .limit = 5};
    dblock::sql::Database(manager_).with_locked_rows(next, [&](dblock::Transaction& tx, const auto& rows) {
      for (const auto& row : rows) {
        tx.execute("UPDATE pool_jobs SET state = 'claimed', claimed_by = ?, claim_fence = ? WHERE id = ?",
                   {slot_, lease_->fence(), row[0]});
      }
      claimed = rows;
    });
    return claimed;
  }

  // Records the results, only while this worker still holds its slot with the fence it claimed
  // them under. Throws dblock::LeaseLostError, writing nothing, once it does not.
  void complete(const std::vector<std::vector<dblock::Value>>& jobs) {
    dblock::sql::Database(manager_).run_guarded(*lease_, [&](dblock::Transaction& tx) {
      for (const auto& job : jobs) {
        tx.execute("UPDATE pool_jobs SET state = 'done', result = ? WHERE id = ? AND claimed_by = ? AND claim_fence = ?",
                   {work_on(std::get<std::string>(job[1])), job[0], slot_, lease_->fence()});
      }
    });
  }

  // Claims and completes batches until no job is pending; the number completed.
  int run() {
    int done = 0;
    for (auto batch = claim(); !batch.empty(); batch = claim()) {
      complete(batch);
      done += static_cast<int>(batch.size());
    }
    return done;
  }

  void stop() { lease_.reset(); }  // releases the slot

 private:
  dblock::LockManager& manager_;
  const std::string slot_;
  std::optional<dblock::Lease> lease_;
};

// A worker evicted between its claim and its completion: refused, and its claims go back in line
// when the slot is taken again.
bool evicted_worker_is_refused(dblock::LockManager& manager) {
  Worker stale(manager, "worker-pool/slot-0");
  if (!stale.start()) return false;
  const auto batch = stale.claim();
  manager.force_release("worker-pool/slot-0");  // an admin's `dblock release --force`, or a lost lease
  try {
    stale.complete(batch);
    std::fprintf(stderr, "worker_pool: an evicted worker completed its batch\n");
    return false;
  } catch (const dblock::LeaseLostError&) {
    std::printf("evicted worker refused; its %zu jobs go back in line\n", batch.size());
  }
  stale.stop();
  return true;
}

int worker_pool(const std::string& url, int workers) {
  auto manager = dblock::open(url);
  create_jobs(*manager);
  if (!evicted_worker_is_refused(*manager)) return 1;
  std::atomic<int> completed{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < workers; ++i) {
    threads.emplace_back([&, i] {
      try {
        Worker worker(*manager, "worker-pool/slot-" + std::to_string(i));
        if (worker.start()) completed += worker.run();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "worker %d: %s\n", i, e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  std::int64_t done = -1, wrong = -1;
  dblock::sql::Database(*manager).run_in_transaction_lock("worker-pool/check", 10s, [&](dblock::Transaction& tx) {
    done = as_int(tx.query("SELECT COUNT(*) FROM pool_jobs WHERE state = 'done'")[0][0]);
    wrong = as_int(tx.query("SELECT COUNT(*) FROM pool_jobs WHERE result IS NULL"
                            " OR result <> CONCAT(payload, ' done')")[0][0]);
  });
  std::printf("%d workers completed %d jobs; %lld done, %lld without their result\n", workers, completed.load(),
              static_cast<long long>(done), static_cast<long long>(wrong));
  return completed == kJobs && done == kJobs && wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: worker_pool URL [WORKERS]\n");
    return 2;
  }
  try {
    return worker_pool(argv[1], argc == 3 ? std::stoi(argv[2]) : 4);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker_pool: %s\n", e.what());
    return 1;
  }
}
