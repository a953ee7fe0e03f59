// Shared pieces of the fault-injection harness (tests/fault/): the clock every process logs on,
// the protected resource's tables per SQL dialect, the client log format, and small helpers.
//
// The lock service and the protected resource: on the SQL backends the resource is two tables in
// the lock's own database, written by a guarded write (run_guarded). Redis, ZooKeeper and etcd have no
// transactions to guard, so there the resource lives outside the lock service: the same two tables in an SQLite
// file of the run's work directory (resource_url()), whose fence check is then the only thing that
// stops a stale holder.
//
// Time: every harness time is CLOCK_MONOTONIC in nanoseconds. It is shared by all processes of the
// host, so the driver's fault times and all clients' believed-hold intervals are comparable, and
// it is the clock std::chrono::steady_clock reads (so Lease::safe_until() converts exactly).
//
// Pure functions and value types; thread-safe.
#ifndef DBLOCK_TESTS_FAULT_FAULT_COMMON_H_
#define DBLOCK_TESTS_FAULT_FAULT_COMMON_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/dblock.h"

namespace dblock::fault {

// CLOCK_MONOTONIC, nanoseconds.
constexpr std::int64_t kMs = 1'000'000;  // one millisecond in mono_ns() units
std::int64_t mono_ns();
// A steady_clock time point on the same scale as mono_ns().
std::int64_t to_mono_ns(std::chrono::steady_clock::time_point t);

// Every fault a run can inject (docs/fault-harness.md, "Faults"), in the report's order.
const std::vector<std::string>& fault_kinds();

enum class Dialect { kSqlite, kPostgresql, kMysql, kRedis, kRedlock, kZookeeper, kEtcd };
// From the URL scheme ("sqlite", "postgresql", "mysql"/"mariadb", "redis", "redlock", "zookeeper",
// "etcd").
// Throws UsageError otherwise.
Dialect dialect_of(std::string_view url);
const char* dialect_name(Dialect d);
// Whether the service behind `d` has SQL transactions (the resource can live beside the lock).
inline bool is_redis(Dialect d) { return d == Dialect::kRedis || d == Dialect::kRedlock; }
inline bool is_sql(Dialect d) { return d == Dialect::kSqlite || d == Dialect::kPostgresql || d == Dialect::kMysql; }
// Where a run whose lock service is `d` keeps its protected resource: `url` itself on the SQL
// backends; on Redis, ZooKeeper and etcd the SQLite file <work>/resource.db.
std::string resource_url(Dialect d, const std::string& url, const std::string& work);

// `url` with one more query parameter (adds '?' or '&').
std::string with_param(const std::string& url, const std::string& key, const std::string& value);

// Integer from a result column whatever type the driver reported (int64, double, text).
std::int64_t as_int(const Value& v);
std::string as_text(const Value& v);

// The protected resource: one row that accepts a write only with a fence greater than the last
// accepted one, and an append-only log of accepted operations whose auto-increment `seq` gives
// the commit order (the resource row is updated first in the same transaction, so its row lock
// orders the inserts). Table names are "<prefix>resource" and "<prefix>ops".
struct ResourceSql {
  std::vector<std::string> create;  // DDL + the initial row
  std::string guarded_update;       // params: fence, fence -> 1 row changed, or 0 when stale
  std::string unfenced_update;      // params: fence (sabotage mode: no fence check at all)
  std::string insert_op;            // params: op_id, fence, client, t_ns
  std::string select_ops;           // seq, op_id, fence, client ORDER BY seq
  std::string select_resource;      // last_fence, value
  std::string server_version;       // one row, one text column
};
// REQUIRES: is_sql(d).
ResourceSql resource_sql(Dialect d, const std::string& prefix);

// ---- the client log --------------------------------------------------------------------------
// One file per client process, one record per line, fields separated by single spaces, written
// with one write(2) each (a SIGKILLed client loses at most the record it was writing). Times are
// mono_ns(). `k` numbers a client's acquisitions from 1.
//
//   START client pid t
//   A k t_call t_ret fence safe_until            acquired: believed hold starts at t_ret
//   WB k op t lost_flag                          guarded write begins (op id, local lost() flag)
//   W k op t fence                               guarded write committed: acknowledged
//   J k op t guard|resource                      guarded write rejected (LeaseLostError / 0 rows)
//   X k op t class                               guarded write failed otherwise: outcome unknown
//                                                (ResourceBusy: the resource's write lock was not
//                                                obtained, nothing written)
//   P k t effects gone t0                        wrong-owner probe [t0, t]: number of effects seen (must
//                                                be 0), `gone` of them the lease missing afterwards
//   Q k t error                                  wrong-owner probe could not run (fault)
//   R k t_end t_ret result safe_until lost_flag  release: believed hold ended at t_end (before the call)
//   L k t                                        on_lost callback ran
//   T t                                          not acquired within the wait
//   E t where class                              other error (acquire, open, ...)
//   S t refused|granted|unsupported|error        session-lock check behind a transaction pooler
//   B t class                                    background error reported by the manager
//   C what t_call t_ret bound outcome             a lease call (acquire | release | close) returned;
//                                                bound: the latest return its deadline allows
//                                                (kCallFloorMs included); outcome: ok | none | the
//                                                error class
//   END t
struct LogLine {
  std::string type;
  std::vector<std::string> fields;
};
// Splits a line; nullopt when empty.
std::optional<LogLine> parse_log_line(std::string_view line);

// The least time dblock gives one service call (its deadline is never nearer than this from the
// call's start): a lease call may return this long after its own deadline.
inline constexpr std::int64_t kCallFloorMs = 2000;
// How long after a closing manager's last call may still be running it takes at most to close.
inline constexpr std::int64_t kCloseBoundMs = 3000;

// Exception class name for the log ("ConnectionError", "LeaseLostError", ...).
std::string error_class(const std::exception& e);

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_FAULT_COMMON_H_
