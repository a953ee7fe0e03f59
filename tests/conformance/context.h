// The seam between the conformance suite (written once) and each backend's test binary.
// A backend test binary defines dblock::testing::context() and links conformance.cc.
#ifndef DBLOCK_TESTS_CONFORMANCE_CONTEXT_H_
#define DBLOCK_TESTS_CONFORMANCE_CONTEXT_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "dblock/dblock.h"
#include "process.h"

namespace dblock::testing {

// What a service under test must report (each context pins it). The suite's cases that need a
// feature carry a tag, `[needs:<feature>]`, and cases that check its absence `[without:<feature>]`;
// the test binary's main() leaves out the cases that do not apply to its context and names them,
// and fails the run at once when the service reports features other than these (a service that
// stopped reporting one would otherwise shrink the suite silently). Every case that runs must
// assert something (Catch's NoAssertions warning is an error).
//   tags read from the context:   [needs:tcp] over_tcp, [needs:late-answers] over_tcp and
//     late_answers, [needs:shared] shared_leases,
//     [needs:restart] restart, [needs:migration-lock] hold_migration_lock,
//     [needs:stepped-clock] start_stepped_server
//   tags read from Expects below: [needs:sql], [needs:sessions], [needs:row-locks], [needs:multi],
//     [needs:schedule], [needs:reaper], [needs:line], [needs:audit] and their [without:...]
struct Expects {
  bool sql_features = false;   // SqlFeatures (guard, optimistic CAS, transaction locks)
  bool session_locks = false;  // SessionLocks
  bool row_locks = false;      // RowLocks (FOR UPDATE NOWAIT / SKIP LOCKED)
  bool multi_acquire = false;  // MultiAcquire (acquire_all in one call)
  bool hold_at_least = false;  // traits().hold_at_least (scheduled jobs)
  bool maintenance = false;    // Maintenance (migrations, the reaper)
  bool fair_queue = true;      // FairQueue (the waiters' line)
  bool audit_log = true;       // AuditLog (force_release_history)
};

struct Context {
  std::string backend;        // "sqlite", "postgresql", ...
  std::string url;            // where every test connects; tests isolate themselves by table prefix
  bool over_tcp = false;  // the URL names a host and port (the stalled-connection cases put a relay there)
  // A reply can reach the client later than a lease's TTL: false where the client itself gives a
  // connection up first (ZooKeeper's, after two thirds of the session that bounds every lease).
  bool late_answers = true;
  std::string relay_params;  // query parameters for a URL through that relay ("" for none)
  bool shared_leases = true;
  bool accounts = true;  // the service records the database account of a force-release
  // A service whose leases are bound by a session (ZooKeeper): the session timeout it grants, which
  // caps how long it holds a lease whatever TTL is asked (cases timed by a TTL use the smaller).
  // Zero: leases are bound by their TTL alone.
  std::chrono::milliseconds lease_bound{0};
  // Statement the guard test runs inside run_guarded to create/insert into its own table;
  // "{T}" is replaced by the table name. Used only where the service has SQL features.
  std::string guard_create = "CREATE TABLE IF NOT EXISTS {T} (id INTEGER PRIMARY KEY, fence INTEGER)";
  std::string guard_insert = "INSERT INTO {T} (id, fence) VALUES (?, ?)";
  // Restarts the backend server, keeping its data (SQLite: nothing to restart). May be empty.
  std::function<void()> restart;
  // Starts a second server of this service whose wall clock is offset by what `clock_file` says
  // (libfaketime's format, re-read at every reading: a test steps the clock by rewriting the file)
  // and returns its URL; the server stops when `running` is released. Empty for a service without
  // a server (SQLite).
  struct SteppedServer {
    std::string url;
    std::shared_ptr<void> running;
  };
  std::function<SteppedServer(const std::string& clock_file)> start_stepped_server;
  // A bystander (any role that can connect) holding the service's migration lock for the tables of
  // `prefix` while `guard` lives; `named_as` is how the service's timeout error names it. Empty
  // when the service has no lock a bystander could take that way (SQLite's is its write lock).
  struct HeldByBystander {
    std::shared_ptr<void> guard;
    std::string named_as;
  };
  std::function<HeldByBystander(const std::string& prefix)> hold_migration_lock;
  // The owner_secret column of the row for `name` in table `table` ("leases", "readers" or
  // "waiters") under `prefix`, read straight from the service as lowercase hex ("" when there is
  // no such row or the column is NULL).
  std::function<std::string(const std::string& prefix, const std::string& table, const std::string& name)>
      stored_owner;
  // What the service stores for `secret` (the owner column stored_owner reads), as lowercase hex.
  // Empty: the first 128 bits of SHA-256 of the secret's 16 bytes, as the SQL services store it.
  std::function<std::string(const OwnerSecret&)> digest;
  // What the service must report (see Expects); checked before any case runs.
  Expects expects;
};

// main() of every backend test binary (test_main.cc): checks the service against
// context().expects, leaves out the cases that do not apply (printing their names), makes a case
// without an assertion fail, and runs the rest. Defined in test_main.cc.
int run_suite(int argc, char** argv);

// Defined by the backend's test binary.
const Context& context();

// A lease TTL the service holds for its whole length: `ttl`, or less where a ZooKeeper session
// bounds every lease (Context::lease_bound).
inline std::chrono::milliseconds capped_ttl(std::chrono::milliseconds ttl) {
  const std::chrono::milliseconds bound = context().lease_bound;
  return bound.count() > 0 ? std::min(ttl, bound) : ttl;
}

// A steady_clock moment as a child prints it for its parent: nanoseconds of CLOCK_MONOTONIC, the
// same clock in every process.
inline std::string steady_stamp(std::chrono::steady_clock::time_point at) {
  return std::to_string(std::chrono::duration_cast<std::chrono::nanoseconds>(at.time_since_epoch()).count());
}

// A child's "<word> <fence> <stamp>" line (the roles hold, permit, job); nullopt when malformed.
struct StampedLine {
  std::int64_t fence = 0;
  std::chrono::steady_clock::time_point at;
};
inline std::optional<StampedLine> parse_stamped(const std::string& line) {
  std::istringstream in(line);
  std::string word;
  long long fence = 0, ns = 0;
  if (!(in >> word >> fence >> ns)) return std::nullopt;
  return StampedLine{fence, std::chrono::steady_clock::time_point(std::chrono::nanoseconds(ns))};
}

// A context for a backend on a server the tests started: its URL from `url_var` (required: a run
// without one fails, unless it opted out with `skip_var`), restarted with
// "$<script_var> restart $<state_var> <restart_args>" when script_var is set. Its stepped-clock
// server runs on port $DBLOCK_TEST_CLOCK_PORT (required when a case starts it), started by the same
// script.
Context server_context(std::string backend, const char* url_var, const char* skip_var, const char* script_var,
                       const char* state_var, const std::string& restart_args = "");

// What the service stores for `secret` (its digest: Context::digest, or its default), as lowercase hex.
std::string digest_hex(const OwnerSecret& secret);
// The 16 bytes that the first 32 hex digits of `hex` (a stored owner value, at least 32 digits)
// spell: the secret a reader who read the stored value presents.
OwnerSecret secret_from_hex(const std::string& hex);

// `sql` with its "{T}" replaced by `table` (the guard statements of Context).
std::string with_table(std::string sql, const std::string& table);
// Creates the guard cases' table `table` (Context::guard_create) in a guarded transaction of a
// lease on "setup", which it takes and releases on `manager`.
void create_guard_table(LockManager& manager, const std::string& table);
// The row locks of the service behind `manager` (nullptr: it has none, or no SQL features).
RowLocks* row_locks_of(LockManager& manager);
// An application table for the optional-mode tests, created (and filled) by `statements` in one
// transaction under the backend's transaction lock "setup-<prefix>".
void create_app_table(LockManager& manager, const std::string& prefix, const std::vector<std::string>& statements);
// For a service without SQL features: checks that run_guarded, given a lease `manager` holds,
// throws UnsupportedError.
void check_guard_unsupported(LockManager& manager);
// A table prefix no other test (or test process) uses: "t<pid>_<n>_".
std::string unique_prefix();
// Opens a manager on context().url with `options`; sets the table prefix if it is still the default.
std::unique_ptr<LockManager> open_manager(ManagerOptions options, const std::string& prefix);

// For a service whose acquire re-takes a lease its secret holds (the server services: a reply can
// be lost): a MultiAcquire call repeated with the same secrets finds every name its own again,
// each with a new fence, and `other` gets none of them meanwhile. Defined in conformance.cc.
void check_repeated_acquire_all(LockManager& manager, LockManager& other);

// After `manager`'s acquire_all({"multi-b", "multi-a"}) was refused because `holder` holds
// "multi-b" (as `held`): nothing was taken ("multi-a" is free to `observer`); once `held` is
// released, the same call takes both, "multi-a" with a fence above `before`; then
// check_repeated_acquire_all. Defined in conformance.cc.
void check_after_refused_acquire_all(LockManager& manager, LockManager& observer, LockManager& holder, Lease& held,
                                     std::int64_t before);

// Child-process entry point: `test_binary --child <role> args...`. Returns an exit code.
int run_child(int argc, char** argv);
// Waits (bounded) for a line starting with `prefix` from `child`; fails the case without one.
std::string expect_line(Child& child, const std::string& prefix, std::chrono::milliseconds timeout = std::chrono::seconds(20));
// The child role "elect <prefix> <name> <ttl_ms>" (recipes.cc): campaigns for `name` and prints
// "elected <term>" and "revoked <term>" as they happen, until its stdin ends.
int child_elect(const std::string& prefix, const std::string& name, int ttl_ms);
// The child role "permit <prefix> <name> <permits> <ttl_ms>" (semaphores.cc): holds one permit and
// prints "holding <fence>", until its stdin ends.
int child_permit(const std::string& prefix, const std::string& name, int permits, int ttl_ms);
// The child role "job <prefix> <name> <hold_ms>" (scheduled.cc): runs `name` as a scheduled job
// (hold_at_least and TTL `hold_ms`) and prints "running <fence>", until its stdin ends.
int child_job(const std::string& prefix, const std::string& name, int hold_ms);

// Records the LostLease an on_lost callback is given; wait() blocks until one came. Thread-safe.
class LostWatch {
 public:
  std::function<void(const LostLease&)> callback() {
    return [this](const LostLease& l) {
      std::lock_guard<std::mutex> lock(m_);
      lost_ = l;
      cv_.notify_all();
    };
  }
  // The recorded loss, or nullopt if none came within `limit`.
  std::optional<LostLease> wait(std::chrono::milliseconds limit) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait_for(lock, limit, [&] { return lost_.has_value(); });
    return lost_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::optional<LostLease> lost_;
};

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_CONFORMANCE_CONTEXT_H_
