// src/cli/lock_table_metrics.h — what `dblock exporter` serves at /metrics: the lock table as the
// service sees it (held locks, their age and time to expiry, waiters, the reaper's backlog) and
// the exporter's own LockManager figures, as Prometheus text.
//
// Thread-safe: a scrape may run on any of the HTTP server's threads.
#ifndef DBLOCK_CLI_LOCK_TABLE_METRICS_H_
#define DBLOCK_CLI_LOCK_TABLE_METRICS_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "dblock/lock_manager.h"

namespace dblock::cli {

class LockTableMetrics {
 public:
  explicit LockTableMetrics(LockManager& manager) : manager_(manager) {}

  // One scrape. Never throws for a service failure: the lock-table part then says it failed
  // (dblock_lock_table_up 0 and a comment with the error, which never holds a password) and the
  // exporter's own figures follow as usual.
  std::string scrape();

 private:
  LockManager& manager_;
  std::atomic<std::uint64_t> scrapes_{0};
  std::atomic<std::uint64_t> failures_{0};
};

}  // namespace dblock::cli

#endif  // DBLOCK_CLI_LOCK_TABLE_METRICS_H_
