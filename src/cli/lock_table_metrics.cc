#include "lock_table_metrics.h"

#include <chrono>
#include <exception>
#include <optional>
#include <vector>

#include "dblock/metrics.h"

namespace dblock::cli {
namespace {

double seconds_of_us(std::int64_t us) { return static_cast<double>(us) / 1e6; }

// The held locks: one sample per lock in each family, labelled with its name.
void append_locks(const std::vector<LeaseInfo>& locks, PrometheusText& out) {
  out.family("dblock_lock_holders", "gauge", "Holders of each held lock (readers or permits for shared ones).");
  for (const LeaseInfo& l : locks) {
    out.sample("dblock_lock_holders", {{"name", l.name}, {"mode", l.mode == LockMode::kShared ? "shared" : "exclusive"}},
               l.holders);
  }
  out.family("dblock_lock_age_seconds", "gauge", "How long each held lock has been held (service clock).");
  for (const LeaseInfo& l : locks) {
    if (l.acquired_at_us == 0) continue;  // the service does not know (another client's lock)
    const std::int64_t now_us = l.expires_at_us - l.expires_in_us;
    out.sample("dblock_lock_age_seconds", {{"name", l.name}}, seconds_of_us(now_us - l.acquired_at_us));
  }
  out.family("dblock_lock_expires_in_seconds", "gauge", "Time left until each held lock expires unless renewed.");
  for (const LeaseInfo& l : locks) {
    if (l.expires_at_us == 0) continue;  // no expiry (another client's lock without PX)
    out.sample("dblock_lock_expires_in_seconds", {{"name", l.name}}, seconds_of_us(l.expires_in_us));
  }
  out.family("dblock_lock_fence", "gauge", "The fencing token of each held lock (shared: the newest reader's).");
  for (const LeaseInfo& l : locks) out.sample("dblock_lock_fence", {{"name", l.name}}, static_cast<double>(l.fence));
  out.family("dblock_lock_waiters", "gauge", "Live waiters in each held lock's line, where the service keeps one.");
  for (const LeaseInfo& l : locks) {
    if (l.waiters >= 0) out.sample("dblock_lock_waiters", {{"name", l.name}}, l.waiters);
  }
}

// The lock table; false (with a comment saying why) when it could not be read.
bool append_lock_table(LockManager& manager, PrometheusText& out) {
  std::vector<LeaseInfo> locks;
  std::string error;
  try {
    locks = manager.list();
  } catch (const std::exception& e) {
    error = e.what();
  }
  out.family("dblock_lock_table_up", "gauge", "1 if this scrape read the lock table, else 0.");
  out.sample("dblock_lock_table_up", {}, error.empty() ? 1 : 0);
  if (!error.empty()) {
    out.comment("lock table: " + error);
    return false;
  }
  append_locks(locks, out);
  try {
    const std::optional<std::chrono::microseconds> oldest = manager.oldest_unreaped();
    out.family("dblock_oldest_unreaped_seconds", "gauge",
               "How long ago the oldest expired entry still waiting for the reaper expired (0: none).");
    out.sample("dblock_oldest_unreaped_seconds", {}, oldest ? std::chrono::duration<double>(*oldest).count() : 0);
  } catch (const std::exception& e) {
    out.comment("oldest unreaped entry: " + std::string(e.what()));
  }
  return true;
}

}  // namespace

std::string LockTableMetrics::scrape() {
  scrapes_.fetch_add(1, std::memory_order_relaxed);
  PrometheusText out;
  if (!append_lock_table(manager_, out)) failures_.fetch_add(1, std::memory_order_relaxed);
  out.family("dblock_exporter_scrapes_total", "counter", "Scrapes this exporter answered.");
  out.sample("dblock_exporter_scrapes_total", {}, static_cast<double>(scrapes_.load(std::memory_order_relaxed)));
  out.family("dblock_exporter_lock_table_errors_total", "counter", "Scrapes whose lock-table read failed.");
  out.sample("dblock_exporter_lock_table_errors_total", {},
             static_cast<double>(failures_.load(std::memory_order_relaxed)));
  append_prometheus(manager_.metrics(), out);
  return out.text();
}

}  // namespace dblock::cli
