// The fault harness's oracle: from the clients' logs, the driver's fault events and the protected
// resource's final state, computes the safety invariants and the reported figures
// (docs/fault-harness.md lists them). Pure functions on values; thread-safe.
#ifndef DBLOCK_TESTS_FAULT_ORACLE_H_
#define DBLOCK_TESTS_FAULT_ORACLE_H_

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dblock::fault {

// One acquisition as a client logged it. Times: mono_ns().
struct Acquisition {
  int client = 0;
  std::int64_t k = 0;
  std::int64_t t_call = 0;      // acquire() called
  std::int64_t t_ret = 0;       // acquire() returned: the believed hold starts
  std::int64_t fence = 0;
  std::int64_t safe_until = 0;  // at acquisition; replaced by the value read just before release
  bool released = false;        // an R record exists
  std::int64_t t_end = 0;       // believed hold ended (release() about to be called), or the client's death
  std::int64_t t_released = 0;  // release() returned (R record)
  std::string result;           // released | already_lost | in_doubt ("" when not released)
  bool lost_at_release = false;
};

enum class WriteOutcome { kUnknown, kAcked, kRejectedGuard, kRejectedResource, kError };

struct WriteAttempt {
  int client = 0;
  std::int64_t k = 0;
  std::string op;
  std::int64_t t = 0;
  bool lost_flag = false;  // Lease::lost() was already true when the write began
  WriteOutcome outcome = WriteOutcome::kUnknown;
  std::int64_t fence = 0;  // from the acquisition
};

// A lease call (acquire, release, close) as a client logged it (C record).
struct LeaseCall {
  std::string what;
  std::int64_t t_call = 0, t_ret = 0;
  std::int64_t bound = 0;  // the latest return its deadline allows
  std::string outcome;     // ok | none | released | ... | the error class
};

// A wrong-owner probe [t0, t] (P record) that saw the lease missing afterwards while lost() was
// false.
struct ProbeGone {
  std::int64_t t0 = 0, t = 0, count = 0;
};

struct ClientLog {
  int client = 0;
  std::vector<LeaseCall> calls;
  std::vector<Acquisition> acquisitions;
  std::vector<WriteAttempt> writes;
  std::int64_t probes = 0, probe_effects = 0, probe_errors = 0;
  std::vector<ProbeGone> probe_gone;  // included in probe_effects
  std::int64_t lost_callbacks = 0, not_acquired = 0, errors = 0, background_errors = 0;
  // Session-lock checks behind a transaction pooler: outcome -> count ("refused" is the only
  // correct one; "granted" and "not_acquired" mean the lock was attempted instead of refused).
  std::map<std::string, std::int64_t> session_checks;
  bool ended = false;         // END record: exited cleanly
  std::int64_t first_t = 0, last_t = 0;
  std::int64_t malformed = 0;
};

// Parses a client log (format in fault_common.h). Unknown or truncated lines count as malformed.
ClientLog parse_client_log(int client, std::istream& in);

struct OpRow {
  std::int64_t seq = 0;
  std::string op;
  std::int64_t fence = 0;
  int client = 0;
};

// What the driver did, on mono_ns().
struct FaultEvent {
  enum Kind {
    kClientKill, kClientStop, kClientCont, kSessionKill, kServerRestart, kServerStop, kServerCont, kEndKill,
    kInterrupt, kRestore,  // relay-stall, conn-full, disk-full: taken away, given back
    kSessionExpire         // ZooKeeper: `client`'s session taken over and closed [t, t_end]
  };
  Kind kind = kClientKill;
  std::int64_t t = 0;
  std::int64_t t_end = 0;  // kServerRestart: server back up; kSessionExpire: the session closed
  int client = 0;          // client events
  int count = 0;           // kSessionKill: sessions terminated
  // kServerRestart of a failover on an asynchronous pair: when the primary was killed (`t` is when
  // its standby stopped receiving); 0: at `t`.
  std::int64_t t_cut = 0;
  std::int64_t cut() const { return t_cut != 0 ? t_cut : t; }
};
const char* to_string(FaultEvent::Kind kind);

struct OracleInput {
  std::vector<ClientLog> clients;
  std::vector<OpRow> ops;
  std::int64_t resource_last_fence = 0;
  std::int64_t resource_value = 0;
  std::vector<FaultEvent> events;
  std::map<int, std::int64_t> death;  // client -> when the driver SIGKILLed it
  std::int64_t ttl_ns = 0;
  bool baseline = false;               // no faults: believed holds must not overlap
  bool expect_session_refused = false; // behind a transaction pooler
  // The resource's fence check is the only guard (Redis: the resource is outside the lock service
  // and nothing checks the lease inside the write): its refusals are the expected way a stale
  // holder is stopped, counted in rejected_resource, not a guard_bypass.
  bool fence_only = false;
  // A server restart may lose every lease (Redis without AOF `always`): holds overlapping within
  // safe-until, leases found lost before their safe-until and a probe's lease gone are excused
  // (and counted apart) when a restart explains them; everything else is checked as usual.
  bool leases_volatile = false;
  // A server restart may lose committed writes (an asynchronous standby promoted): acknowledged
  // writes missing from ops are excused (and counted apart) when acknowledged during a restart.
  bool writes_volatile = false;
  // When the clients were stopped (mono ns, 0: unknown): a holder killed or paused too close to
  // it to be taken over before it is not judged unrecovered.
  std::int64_t ended_at = 0;
};

struct Figures {
  // Volume.
  std::int64_t acquisitions = 0, acked = 0, ops = 0, faults = 0, write_attempts = 0;
  // Safety (each must be 0).
  std::int64_t stale_writes = 0;           // ops in commit order without strictly increasing fences
  std::int64_t lost_acks = 0;              // acknowledged op ids missing from ops
  std::int64_t doubled = 0;                // op ids twice in ops, plus |resource.value - ops|
  std::int64_t phantom_ops = 0;            // ops nobody attempted, or with another fence than their acquisition's
  std::int64_t rejected_committed = 0;     // writes reported rejected that are in ops
  std::int64_t guard_bypass = 0;           // the guard passed but the resource refused the fence
  std::int64_t resource_mismatch = 0;      // resource.last_fence differs from the last op's fence
  std::int64_t fence_regressions = 0;      // non-overlapping holds (within safe-until) without increasing fences
  std::int64_t duplicate_fences = 0;       // two acquisitions with one fence
  std::int64_t restart_regressions = 0;    // a fence after a server restart not above every fence before it
  std::int64_t wrong_owner_effects = 0;
  std::int64_t safe_overlaps = 0;          // holds clipped at safe-until that overlap (safe-until must be conservative)
  std::int64_t session_not_refused = 0;    // a session lock granted behind a transaction pooler
  std::int64_t client_crashes = 0;         // set by the driver: a client exited without being killed
  std::int64_t overdue_calls = 0;          // a lease call returned over a second after its bound (client not stopped)
  std::int64_t early_giveups = 0;          // a wait ended with a transient error before its deadline
  std::int64_t lost_early = 0;             // a release found the lease already lost well before its safe-until
  // Reported.
  std::int64_t overlaps = 0;               // believed holds [acquire returned, release called] intersecting
  double overlap_ms = 0;
  std::vector<double> recovery_ms;         // holder SIGKILLed/SIGSTOPped -> next acquisition by another client
  std::int64_t unrecovered = 0;
  std::int64_t kills = 0, kills_in_hold = 0;
  std::int64_t in_doubt_releases = 0, already_lost_releases = 0;
  std::int64_t rejected_guard = 0, write_errors = 0, indoubt_committed = 0, indoubt_absent = 0;
  std::int64_t rejected_resource = 0;      // fence_only: writes the resource refused for a stale fence
  // leases_volatile: what a restart that lost the leases explains (reported, not violations).
  std::int64_t restart_overlaps = 0, lost_to_restart = 0, probe_gone_at_restart = 0;
  // writes_volatile: acknowledged writes lost with the old primary (reported, not violations).
  std::int64_t acks_lost_to_failover = 0;
  // Holds that spanned a server restart or failover and were released: the lease kept (the
  // release found it), its holder told it was lost (the release said already lost, or lost() was
  // true by then), or the release in doubt.
  std::int64_t holds_across_restart = 0, kept_across_restart = 0, told_lost_at_restart = 0, in_doubt_at_restart = 0;
  // Forced session expiry (ZooKeeper): the expired session's holds end when the expiry began (the
  // lease was taken away then: its holder learns it later); holds so cut, and the releases and
  // probes that found such a lease gone (reported, not violations).
  std::int64_t expired_holds = 0, lost_to_expiry = 0;
  std::int64_t lost_callbacks = 0, lost_at_release = 0, lost_flag_at_write = 0, expired_on_return = 0;
  std::int64_t probes = 0, probe_errors = 0, not_acquired = 0, errors = 0, background_errors = 0;
  std::int64_t session_refused = 0, session_unchecked = 0, malformed = 0;  // unchecked: errors
  std::int64_t calls = 0;                  // lease calls checked against their bounds
  double worst_call_ms = 0;                // the latest return relative to its bound (negative: early; 0: no calls)
  std::string worst_call;                  // that call: "<what> by client <n>: <outcome>"

  // Names of the violated invariants (empty: safe).
  std::vector<std::string> violations(bool baseline) const;
  // Why a run of `fault` proves nothing, or "" when it does: no acquisition or acknowledged write,
  // a fault that never fired, a client kill that never hit a holder, a holder never taken over.
  std::string unproven(const std::string& fault) const;
};

Figures evaluate(const OracleInput& in);

double percentile(std::vector<double> v, double p);  // nearest-rank; 0 for empty

// Checks the oracle against synthetic histories with known violations. Returns failures (empty: ok).
std::vector<std::string> oracle_selftest();

}  // namespace dblock::fault

#endif  // DBLOCK_TESTS_FAULT_ORACLE_H_
