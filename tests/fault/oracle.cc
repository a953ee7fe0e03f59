#include "oracle.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

#include "fault_common.h"

namespace dblock::fault {

namespace {

constexpr std::int64_t kForever = std::numeric_limits<std::int64_t>::max();

bool to_i64(const std::string& s, std::int64_t& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  out = v;
  return true;
}

struct Interval {
  std::int64_t start, end, fence;
  int client;
  bool told = false;  // its holder learned it lost the lease, or that it could not be confirmed
};

struct OverlapCount {
  std::int64_t count = 0, total_ns = 0, excused = 0;
};

// Pairs of intervals from different clients that intersect: count and total intersection (ns).
// A pair `excuse(earlier, later)` (by start) accepts is counted in `excused` instead.
OverlapCount overlaps(std::vector<Interval> v,
                      const std::function<bool(const Interval&, const Interval&)>& excuse = nullptr) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::vector<Interval> active;
  OverlapCount out;
  for (const auto& cur : v) {
    active.erase(std::remove_if(active.begin(), active.end(), [&](const Interval& a) { return a.end <= cur.start; }),
                 active.end());
    for (const auto& a : active) {
      if (a.client == cur.client) continue;
      if (excuse && excuse(a, cur)) {
        ++out.excused;
        continue;
      }
      ++out.count;
      out.total_ns += std::min(a.end, cur.end) - cur.start;
    }
    active.push_back(cur);
  }
  return out;
}

// [from, to] of each time the driver SIGSTOPped `client` (to: its SIGCONT, or forever).
std::vector<std::pair<std::int64_t, std::int64_t>> stops_of(const OracleInput& in, int client) {
  std::vector<std::pair<std::int64_t, std::int64_t>> stopped;
  for (const auto& e : in.events) {
    if (e.client != client) continue;
    if (e.kind == FaultEvent::kClientStop) stopped.emplace_back(e.t, INT64_MAX);
    if (e.kind == FaultEvent::kClientCont && !stopped.empty()) stopped.back().second = e.t;
  }
  return stopped;
}

bool intersects(const std::vector<std::pair<std::int64_t, std::int64_t>>& spans, std::int64_t from, std::int64_t to) {
  return std::any_of(spans.begin(), spans.end(), [&](const auto& s) { return s.first < to && s.second > from; });
}

// [begun, session closed] of each forced expiry of `client`'s session.
std::vector<std::pair<std::int64_t, std::int64_t>> expiries_of(const OracleInput& in, int client) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  for (const auto& e : in.events) {
    if (e.kind == FaultEvent::kSessionExpire && e.client == client) out.emplace_back(e.t, e.t_end);
  }
  return out;
}

// A hold [start, end) of a client whose session was expired by force at [t, t_end]: the lease was
// taken away at t (a hold that began before the session was closed may be in it: it ends at its
// start). Returns the end the hold keeps.
std::int64_t cut_by_expiry(const std::vector<std::pair<std::int64_t, std::int64_t>>& expiries, std::int64_t start,
                           std::int64_t end) {
  for (const auto& [t, t_end] : expiries) {
    if (start <= t_end && end > t) end = std::max(start, std::min(end, t));
  }
  return end;
}

}  // namespace

const char* to_string(FaultEvent::Kind kind) {
  switch (kind) {
    case FaultEvent::kClientKill: return "client-kill";
    case FaultEvent::kClientStop: return "client-stop";
    case FaultEvent::kClientCont: return "client-cont";
    case FaultEvent::kSessionKill: return "session-kill";
    case FaultEvent::kServerRestart: return "server-restart";
    case FaultEvent::kServerStop: return "server-stop";
    case FaultEvent::kServerCont: return "server-cont";
    case FaultEvent::kEndKill: return "end-kill";
    case FaultEvent::kInterrupt: return "interrupt";
    case FaultEvent::kRestore: return "restore";
    case FaultEvent::kSessionExpire: return "session-expire";
  }
  return "?";
}

ClientLog parse_client_log(int client, std::istream& in) {
  ClientLog log;
  log.client = client;
  std::map<std::int64_t, std::size_t> by_k;  // k -> index in acquisitions
  std::map<std::string, std::size_t> writes;  // op -> index in writes
  std::string line;
  while (std::getline(in, line)) {
    auto rec = parse_log_line(line);
    if (!rec) continue;
    const auto& f = rec->fields;
    std::int64_t n[6] = {0, 0, 0, 0, 0, 0};
    auto nums = [&](std::initializer_list<int> idx) {
      for (int i : idx) {
        if (i >= static_cast<int>(f.size()) || !to_i64(f[i], n[i])) return false;
      }
      return true;
    };
    std::int64_t t = 0;
    bool ok = true;
    const std::string& ty = rec->type;
    if (ty == "START") {
      ok = nums({0, 1, 2});
      t = n[2];
    } else if (ty == "A") {
      ok = nums({0, 1, 2, 3, 4});
      if (ok) {
        Acquisition a;
        a.client = client;
        a.k = n[0];
        a.t_call = n[1];
        a.t_ret = n[2];
        a.fence = n[3];
        a.safe_until = n[4];
        by_k[a.k] = log.acquisitions.size();
        log.acquisitions.push_back(a);
        t = a.t_ret;
      }
    } else if (ty == "WB") {
      ok = f.size() >= 4 && nums({0, 2, 3}) && by_k.count(n[0]);
      if (ok) {
        WriteAttempt w;
        w.client = client;
        w.k = n[0];
        w.op = f[1];
        w.t = n[2];
        w.lost_flag = n[3] != 0;
        w.fence = log.acquisitions[by_k[w.k]].fence;
        writes[w.op] = log.writes.size();
        log.writes.push_back(w);
        t = w.t;
      }
    } else if (ty == "W" || ty == "J" || ty == "X") {
      ok = f.size() >= 4 && nums({0, 2}) && writes.count(f[1]);
      if (ok) {
        auto& w = log.writes[writes[f[1]]];
        if (ty == "W") w.outcome = WriteOutcome::kAcked;
        else if (ty == "X") w.outcome = WriteOutcome::kError;
        else w.outcome = f[3] == "resource" ? WriteOutcome::kRejectedResource : WriteOutcome::kRejectedGuard;
        t = n[2];
      }
    } else if (ty == "P") {
      ok = nums({0, 1, 2}) && (f.size() < 5 || nums({3, 4}));
      if (ok) {
        ++log.probes;
        log.probe_effects += n[2];
        if (f.size() >= 5 && n[3] > 0) log.probe_gone.push_back({n[4], n[1], n[3]});
        t = n[1];
      }
    } else if (ty == "Q") {
      ok = nums({0, 1});
      if (ok) {
        ++log.probe_errors;
        t = n[1];
      }
    } else if (ty == "R") {
      ok = f.size() >= 6 && nums({0, 1, 2, 4, 5}) && by_k.count(n[0]);
      if (ok) {
        auto& a = log.acquisitions[by_k[n[0]]];
        a.released = true;
        a.t_end = n[1];
        a.t_released = n[2];
        a.result = f[3];
        a.safe_until = n[4];
        a.lost_at_release = n[5] != 0;
        t = n[2];
      }
    } else if (ty == "L") {
      ok = nums({0, 1});
      if (ok) {
        ++log.lost_callbacks;
        t = n[1];
      }
    } else if (ty == "T") {
      ok = nums({0});
      if (ok) {
        ++log.not_acquired;
        t = n[0];
      }
    } else if (ty == "E") {
      ok = nums({0});
      if (ok) {
        ++log.errors;
        t = n[0];
      }
    } else if (ty == "B") {
      ok = nums({0});
      if (ok) {
        ++log.background_errors;
        t = n[0];
      }
    } else if (ty == "S") {
      ok = f.size() >= 2 && nums({0});
      if (ok) {
        ++log.session_checks[f[1]];
        t = n[0];
      }
    } else if (ty == "C") {
      ok = f.size() >= 5 && nums({1, 2, 3});
      if (ok) {
        log.calls.push_back(LeaseCall{f[0], n[1], n[2], n[3], f[4]});
        t = n[2];
      }
    } else if (ty == "END") {
      ok = nums({0});
      if (ok) {
        log.ended = true;
        t = n[0];
      }
    } else {
      ok = false;
    }
    if (!ok) {
      ++log.malformed;
      continue;
    }
    if (log.first_t == 0) log.first_t = t;
    log.last_t = std::max(log.last_t, t);
  }
  return log;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, rank == 0 ? 0 : rank - 1)];
}

std::string Figures::unproven(const std::string& fault) const {
  if (acquisitions == 0 || acked == 0) return "no progress (no acquisition or no acknowledged write)";
  if (fault != "none" && faults == 0) return "the fault never fired";
  if (fault == "client-kill" && kills_in_hold == 0) return "no client kill hit a holder";
  if (unrecovered != 0) return "a holder killed or paused was never taken over (" + std::to_string(unrecovered) + ")";
  return "";
}

std::vector<std::string> Figures::violations(bool baseline) const {
  std::vector<std::string> out;
  auto check = [&](std::int64_t v, const char* name) {
    if (v != 0) out.push_back(std::string(name) + "=" + std::to_string(v));
  };
  check(stale_writes, "stale_writes");
  check(lost_acks, "lost_acks");
  check(doubled, "doubled");
  check(phantom_ops, "phantom_ops");
  check(rejected_committed, "rejected_committed");
  check(guard_bypass, "guard_bypass");
  check(resource_mismatch, "resource_mismatch");
  check(fence_regressions, "fence_regressions");
  check(duplicate_fences, "duplicate_fences");
  check(restart_regressions, "restart_regressions");
  check(wrong_owner_effects, "wrong_owner_effects");
  check(safe_overlaps, "safe_overlaps");
  check(session_not_refused, "session_not_refused");
  check(client_crashes, "client_crashes");
  check(overdue_calls, "overdue_calls");
  check(early_giveups, "early_giveups");
  check(lost_early, "lost_early");
  if (baseline) check(overlaps, "baseline_overlaps");
  return out;
}

namespace {

// Every lease call returns by its bound (plus a second of scheduling slack), unless its own
// process was stopped meanwhile; a wait never ends early with an error it rides over.
void check_calls(const OracleInput& in, Figures& fig) {
  constexpr std::int64_t kSlackNs = 1'000'000'000;
  constexpr std::int64_t kFloorNs = kCallFloorMs * 1'000'000;
  bool any = false;
  for (const auto& c : in.clients) {
    const auto stopped = stops_of(in, c.client);
    for (const auto& call : c.calls) {
      ++fig.calls;
      if (intersects(stopped, call.t_call, call.t_ret)) continue;
      const double late_ms = static_cast<double>(call.t_ret - call.bound) / 1e6;
      if (!any || late_ms > fig.worst_call_ms) {
        fig.worst_call_ms = late_ms;
        fig.worst_call = call.what + " by client " + std::to_string(c.client) + ": " + call.outcome;
      }
      any = true;
      if (call.t_ret > call.bound + kSlackNs) ++fig.overdue_calls;
      const bool transient = call.outcome == "ConnectionError" || call.outcome == "InDoubtError";
      if (call.what == "acquire" && transient && call.t_ret < call.bound - kFloorNs - kSlackNs / 10) {
        ++fig.early_giveups;
      }
    }
  }
}

}  // namespace

Figures evaluate(const OracleInput& in) {
  Figures fig;
  std::vector<const Acquisition*> acqs;
  std::unordered_map<std::string, const WriteAttempt*> attempts;
  for (const auto& c : in.clients) {
    fig.probes += c.probes;
    fig.wrong_owner_effects += c.probe_effects;
    fig.probe_errors += c.probe_errors;
    fig.lost_callbacks += c.lost_callbacks;
    fig.not_acquired += c.not_acquired;
    fig.errors += c.errors;
    fig.background_errors += c.background_errors;
    fig.malformed += c.malformed;
    if (in.expect_session_refused) {
      for (const auto& [outcome, n] : c.session_checks) {
        if (outcome == "refused") fig.session_refused += n;
        else if (outcome == "granted" || outcome == "not_acquired") fig.session_not_refused += n;
        else fig.session_unchecked += n;
      }
    }
    for (const auto& a : c.acquisitions) acqs.push_back(&a);
    for (const auto& w : c.writes) attempts[w.op] = &w;
  }
  fig.acquisitions = static_cast<std::int64_t>(acqs.size());
  for (const auto& e : in.events) {
    if (e.kind != FaultEvent::kClientCont && e.kind != FaultEvent::kServerCont && e.kind != FaultEvent::kEndKill &&
        e.kind != FaultEvent::kRestore) {
      ++fig.faults;
    }
  }

  // ---- believed holds ----
  // The raw believed hold is [acquire returned, release about to be called]; a holder that never
  // logged its release died (SIGKILL: its death time) or stopped logging (its last record).
  auto death_of = [&](int client) -> std::int64_t {
    auto it = in.death.find(client);
    return it == in.death.end() ? kForever : it->second;
  };
  std::map<int, std::int64_t> last_t;
  for (const auto& c : in.clients) last_t[c.client] = c.last_t;
  std::vector<Interval> raw, clipped;
  for (const Acquisition* a : acqs) {
    std::int64_t end = a->t_end;
    if (!a->released) {
      const std::int64_t death = death_of(a->client);
      end = death != kForever ? death : std::max(last_t[a->client], a->t_ret);
    }
    raw.push_back({a->t_ret, end, a->fence, a->client});
    // Within safe-until the backend must still hold the lease: these holds never overlap, and
    // when one ends before the next starts, the fences increase. A holder paused inside
    // acquire() may return with safe-until already passed: that hold is empty.
    std::int64_t cend = std::min(end, a->safe_until);
    const std::int64_t cut = cut_by_expiry(expiries_of(in, a->client), a->t_ret, cend);
    if (cut < cend) ++fig.expired_holds;
    cend = cut;
    if (cend > a->t_ret) {
      // Told: the lease lost (on_lost before its release, or the release found it gone), or the
      // release could not confirm it (in doubt: Redlock with nodes down at that moment).
      const bool told = a->released && (a->result == "already_lost" || a->result == "in_doubt" || a->lost_at_release);
      clipped.push_back({a->t_ret, cend, a->fence, a->client, told});
    } else {
      ++fig.expired_on_return;
    }
    if (a->released) {
      if (a->result == "in_doubt") ++fig.in_doubt_releases;
      if (a->result == "already_lost") ++fig.already_lost_releases;
      if (a->lost_at_release) ++fig.lost_at_release;
    }
  }
  // Server restarts [killed, back up]: with volatile leases they explain lost leases.
  std::vector<std::pair<std::int64_t, std::int64_t>> restarts;
  if (in.leases_volatile) {
    for (const auto& e : in.events) {
      if (e.kind == FaultEvent::kServerRestart) restarts.emplace_back(e.t, e.t_end);
    }
  }
  const OverlapCount raw_overlaps = overlaps(raw);
  fig.overlaps = raw_overlaps.count;
  fig.overlap_ms = static_cast<double>(raw_overlaps.total_ns) / 1e6;
  // Two holds within safe-until overlap only if the server forgot the earlier one: excused when a
  // restart began before the later hold started and ended after the earlier one's acquire
  // returned, and the earlier holder was told it had lost the lease (a holder that is never told
  // ran on as if it held it: never excused).
  const OverlapCount safe = overlaps(clipped, [&](const Interval& earlier, const Interval& later) {
    return earlier.told && std::any_of(restarts.begin(), restarts.end(), [&](const auto& r) {
      return r.first <= later.start && r.second >= earlier.start;
    });
  });
  fig.safe_overlaps = safe.count;
  fig.restart_overlaps = safe.excused;

  // A release that answered "already lost" and returned before the lease's safe-until: the
  // service said the lease was gone (now, or at a refused renewal) at a time it had granted it
  // for. A release that reached the service after the expiry (a frozen server) returns after
  // safe-until and is not counted, nor is one whose client was stopped meanwhile.
  for (const auto& c : in.clients) {
    const auto stopped = stops_of(in, c.client);
    const auto expired = expiries_of(in, c.client);
    for (const auto& a : c.acquisitions) {
      if (!a.released || a.result != "already_lost" || a.t_released >= a.safe_until) continue;
      if (intersects(stopped, a.t_end, a.t_released)) continue;
      if (intersects(expired, a.t_call, a.t_released)) {
        ++fig.lost_to_expiry;
        continue;
      }
      const bool restarted = std::any_of(restarts.begin(), restarts.end(), [&](const auto& r) {
        return r.first <= a.t_released && r.second >= a.t_call;
      });
      ++(restarted ? fig.lost_to_restart : fig.lost_early);
    }
    // A probe that saw the lease vanish while a restart was under way.
    for (const auto& g : c.probe_gone) {
      if (intersects(expired, g.t0, g.t)) {
        fig.lost_to_expiry += g.count;
        fig.wrong_owner_effects -= g.count;
        continue;
      }
      const bool restarted = std::any_of(restarts.begin(), restarts.end(),
                                         [&](const auto& r) { return r.first <= g.t && r.second >= g.t0; });
      if (restarted) {
        fig.probe_gone_at_restart += g.count;
        fig.wrong_owner_effects -= g.count;
      }
    }
  }

  {
    std::vector<Interval> by_start = clipped, by_end = clipped;
    std::sort(by_start.begin(), by_start.end(), [](auto& a, auto& b) { return a.start < b.start; });
    std::sort(by_end.begin(), by_end.end(), [](auto& a, auto& b) { return a.end < b.end; });
    std::size_t p = 0;
    std::int64_t max_fence = std::numeric_limits<std::int64_t>::min();
    for (const auto& b : by_start) {
      while (p < by_end.size() && by_end[p].end < b.start) max_fence = std::max(max_fence, by_end[p++].fence);
      if (max_fence >= b.fence) ++fig.fence_regressions;
    }
    std::map<std::int64_t, int> fences;
    for (const Acquisition* a : acqs) {
      if (++fences[a->fence] == 2) ++fig.duplicate_fences;
    }
  }
  for (const auto& e : in.events) {
    if (e.kind != FaultEvent::kServerRestart) continue;
    std::int64_t before = std::numeric_limits<std::int64_t>::min(), after = std::numeric_limits<std::int64_t>::max();
    for (const Acquisition* a : acqs) {
      if (a->t_ret < e.cut()) before = std::max(before, a->fence);
      if (a->t_call > e.t_end) after = std::min(after, a->fence);
    }
    if (before != std::numeric_limits<std::int64_t>::min() && after != std::numeric_limits<std::int64_t>::max() &&
        after <= before) {
      ++fig.restart_regressions;
    }
  }

  for (const Acquisition* a : acqs) {
    if (!a->released) continue;
    const bool spanned = std::any_of(in.events.begin(), in.events.end(), [&](const FaultEvent& e) {
      return e.kind == FaultEvent::kServerRestart && a->t_call <= e.t_end && a->t_end >= e.cut();
    });
    if (!spanned) continue;
    ++fig.holds_across_restart;
    if (a->result == "already_lost" || a->lost_at_release) {
      ++fig.told_lost_at_restart;
    } else if (a->result == "released") {
      ++fig.kept_across_restart;
    } else {
      ++fig.in_doubt_at_restart;
    }
  }

  // ---- recovery: a holder SIGKILLed or SIGSTOPped -> the next acquisition by another client ----
  for (const auto& e : in.events) {
    if (e.kind != FaultEvent::kClientKill && e.kind != FaultEvent::kClientStop) continue;
    if (e.kind == FaultEvent::kClientKill) ++fig.kills;
    const Interval* held = nullptr;
    for (const auto& iv : raw) {
      if (iv.client == e.client && iv.start <= e.t && iv.end >= e.t) held = &iv;
    }
    if (!held) continue;
    if (e.kind == FaultEvent::kClientKill) ++fig.kills_in_hold;
    std::int64_t next = kForever;
    for (const Acquisition* a : acqs) {
      if (a->client != e.client && a->t_ret >= e.t) next = std::min(next, a->t_ret);
    }
    // A paused holder that was resumed and released before anybody took over (the run ended,
    // say) handed the lock over normally: that is not a recovery.
    if (e.kind == FaultEvent::kClientStop && next != kForever && next > held->end) continue;
    if (next == kForever) {
      // A takeover needs the lease's TTL and a waiter's next attempt: one so close to the end
      // that the run stopped first is not judged.
      const bool had_time = in.ended_at == 0 || e.t + 2 * in.ttl_ns + 2'000'000'000 < in.ended_at;
      if (had_time) ++fig.unrecovered;
    } else {
      fig.recovery_ms.push_back(static_cast<double>(next - e.t) / 1e6);
    }
  }

  // ---- the protected resource ----
  const auto restarted_at = [&](std::int64_t t) {
    return std::any_of(in.events.begin(), in.events.end(), [&](const FaultEvent& e) {
      return e.kind == FaultEvent::kServerRestart && e.t <= t && t <= e.t_end;
    });
  };
  fig.ops = static_cast<std::int64_t>(in.ops.size());
  std::unordered_map<std::string, int> seen;
  for (std::size_t i = 0; i < in.ops.size(); ++i) {
    const auto& op = in.ops[i];
    if (i > 0 && op.fence <= in.ops[i - 1].fence) ++fig.stale_writes;
    if (++seen[op.op] == 2) ++fig.doubled;
    auto it = attempts.find(op.op);
    if (it == attempts.end() || it->second->fence != op.fence) ++fig.phantom_ops;
  }
  fig.doubled += std::llabs(in.resource_value - fig.ops);
  if (in.resource_last_fence != (in.ops.empty() ? 0 : in.ops.back().fence)) ++fig.resource_mismatch;
  for (const auto& c : in.clients) {
    for (const auto& w : c.writes) {
      ++fig.write_attempts;
      if (w.lost_flag) ++fig.lost_flag_at_write;
      const bool present = seen.count(w.op) > 0;
      switch (w.outcome) {
        case WriteOutcome::kAcked:
          ++fig.acked;
          if (!present) ++(in.writes_volatile && restarted_at(w.t) ? fig.acks_lost_to_failover : fig.lost_acks);
          break;
        case WriteOutcome::kRejectedGuard:
          ++fig.rejected_guard;
          if (present) ++fig.rejected_committed;
          break;
        case WriteOutcome::kRejectedResource:
          ++(in.fence_only ? fig.rejected_resource : fig.guard_bypass);
          if (present) ++fig.rejected_committed;
          break;
        case WriteOutcome::kError:
          ++fig.write_errors;
          [[fallthrough]];
        case WriteOutcome::kUnknown:
          if (present) ++fig.indoubt_committed; else ++fig.indoubt_absent;
          break;
      }
    }
  }
  check_calls(in, fig);
  return fig;
}

// ---- self-test ----

namespace {

ClientLog parse_text(int client, const std::string& text) {
  std::istringstream in(text);
  return parse_client_log(client, in);
}

// Two clients taking turns cleanly: c1 holds [100,200] fence 1, c2 holds [300,400] fence 2.
OracleInput clean_history() {
  OracleInput in;
  in.ttl_ns = 1000;
  in.clients.push_back(parse_text(1,
                                  "START 1 11 50\n"
                                  "A 1 90 100 1 1090\n"
                                  "WB 1 r-1-1 110 0\n"
                                  "W 1 r-1-1 120 1\n"
                                  "P 1 130 0\n"
                                  "R 1 200 210 released 1090 0\n"
                                  "END 220\n"));
  in.clients.push_back(parse_text(2,
                                  "START 2 12 50\n"
                                  "A 1 150 300 2 1150\n"
                                  "WB 1 r-2-1 310 0\n"
                                  "W 1 r-2-1 320 2\n"
                                  "R 1 400 410 released 1150 0\n"
                                  "END 420\n"));
  in.ops = {{1, "r-1-1", 1, 1}, {2, "r-2-1", 2, 2}};
  in.resource_last_fence = 2;
  in.resource_value = 2;
  in.baseline = true;
  return in;
}

}  // namespace

std::vector<std::string> oracle_selftest() {
  std::vector<std::string> failures;
  auto expect = [&](bool ok, const std::string& what) {
    if (!ok) failures.push_back(what);
  };
  {
    Figures f = evaluate(clean_history());
    expect(f.violations(true).empty(), "clean history reported violations");
    expect(f.acquisitions == 2 && f.acked == 2 && f.ops == 2 && f.probes == 1, "clean history counts");
  }
  {  // lease calls: one returned 2 s after its bound; a wait gave up early on a ConnectionError;
     // a stopped client's late return and a wait that ended with an error at its deadline are fine
    auto in = clean_history();
    in.clients[0] = parse_text(1, "START 1 11 50\n"
                                  "C release 1000000000 5000000000 3000000000 released\n"
                                  "C acquire 1000000000 1500000000 6000000000 ConnectionError\n"
                                  "C acquire 1000000000 4100000000 6000000000 ConnectionError\n"
                                  "END 6000000000\n");
    in.clients[1] = parse_text(2, "START 2 12 50\n"
                                  "C acquire 1000000000 9000000000 3000000000 ok\n"
                                  "END 9000000000\n");
    in.events = {{FaultEvent::kClientStop, 2000000000, 0, 2, 0}, {FaultEvent::kClientCont, 8000000000, 0, 2, 0}};
    in.ops.clear();
    in.resource_last_fence = 0;
    in.resource_value = 0;
    in.baseline = false;
    Figures f = evaluate(in);
    expect(f.calls == 4 && f.overdue_calls == 1 && f.early_giveups == 1, "lease calls past their bounds not counted");
  }
  {  // stale write accepted: commit order 2 then 1
    auto in = clean_history();
    std::swap(in.ops[0].fence, in.ops[1].fence);
    std::swap(in.ops[0].op, in.ops[1].op);
    in.resource_last_fence = 1;
    expect(evaluate(in).stale_writes == 1, "stale write not detected");
  }
  {  // acknowledged op lost
    auto in = clean_history();
    in.ops.pop_back();
    in.resource_value = 1;
    in.resource_last_fence = 1;
    Figures f = evaluate(in);
    expect(f.lost_acks == 1, "lost ack not detected");
    // An asynchronous standby promoted: a write acknowledged while it was behind may be lost.
    in.writes_volatile = true;
    in.events.push_back({FaultEvent::kServerRestart, 300, 400, 0, 0});
    f = evaluate(in);
    expect(f.lost_acks == 0 && f.acks_lost_to_failover == 1, "ack lost in a failover window not excused");
    in.events.back() = {FaultEvent::kServerRestart, 330, 400, 0, 0};  // the failover came after the ack
    f = evaluate(in);
    expect(f.lost_acks == 1 && f.acks_lost_to_failover == 0, "ack lost outside a failover window excused");
  }
  {  // doubled op, and value drift
    auto in = clean_history();
    in.ops.push_back({3, "r-2-1", 2, 2});
    in.resource_value = 3;
    Figures f = evaluate(in);
    expect(f.doubled >= 1 && f.stale_writes == 1, "doubled op not detected");
    auto in2 = clean_history();
    in2.resource_value = 5;
    expect(evaluate(in2).doubled == 3, "value drift not detected");
  }
  {  // fence regression: the later hold got a smaller fence
    auto in = clean_history();
    in.clients[1].acquisitions[0].fence = 1;
    in.clients[1].writes[0].fence = 1;
    in.ops[1].fence = 1;
    in.resource_last_fence = 1;
    Figures f = evaluate(in);
    expect(f.fence_regressions == 1 && f.duplicate_fences == 1, "fence regression not detected");
  }
  {  // overlap: c2 starts at 150 while c1 holds until 200 (within both safe-untils)
    auto in = clean_history();
    in.clients[1].acquisitions[0].t_ret = 150;
    Figures f = evaluate(in);
    expect(f.overlaps == 1 && std::abs(f.overlap_ms - 50e-6) < 1e-9 && f.safe_overlaps == 1,
           "overlap not detected");
    expect(!f.violations(true).empty(), "baseline overlap not a violation");
    // Past c1's safe-until (clipped at 120) the overlap is only a believed one.
    in.clients[0].acquisitions[0].safe_until = 120;
    f = evaluate(in);
    expect(f.overlaps == 1 && f.safe_overlaps == 0 && f.violations(false).empty(), "safe-until clipping");
  }
  {  // wrong-owner effect, guard bypass, rejected-but-committed, phantom
    auto in = clean_history();
    in.clients[0].probe_effects = 1;
    in.clients[1].writes[0].outcome = WriteOutcome::kRejectedResource;
    in.ops.push_back({3, "nobody", 9, 3});
    in.resource_value = 3;
    in.resource_last_fence = 9;
    Figures f = evaluate(in);
    expect(f.wrong_owner_effects == 1 && f.guard_bypass == 1 && f.rejected_committed == 1 && f.phantom_ops == 1,
           "probe/guard/phantom not detected");
  }
  {  // fence-only resource (Redis): a refused stale write is the resource doing its job
    auto in = clean_history();
    in.clients[1].writes[0].outcome = WriteOutcome::kRejectedResource;
    in.ops.pop_back();
    in.resource_value = 1;
    in.resource_last_fence = 1;
    Figures f = evaluate(in);
    expect(f.guard_bypass == 1 && f.rejected_resource == 0, "guard bypass not counted with a guard");
    in.fence_only = true;
    f = evaluate(in);
    expect(f.guard_bypass == 0 && f.rejected_resource == 1 && f.violations(true).empty(),
           "fence-only refusal counted as a violation");
  }
  {  // a run proves something only when its fault fired, hit a holder and the service recovered
    Figures f;
    f.acquisitions = f.acked = 5;
    expect(f.unproven("none").empty(), "a clean baseline run judged unproven");
    expect(!f.unproven("client-kill").empty(), "a client-kill run whose fault never fired passed");
    f.faults = 3;
    expect(!f.unproven("client-kill").empty(), "a client-kill run whose kills hit no holder passed");
    f.kills_in_hold = 1;
    expect(f.unproven("client-kill").empty(), "a client-kill run that proves its point judged unproven");
    f.unrecovered = 1;
    expect(!f.unproven("client-kill").empty(), "a run whose service never recovered passed");
    f.unrecovered = 0;
    f.acked = 0;
    expect(!f.unproven("server-stop").empty(), "a run without an acknowledged write passed");
  }
  {  // holds overlapping within safe-until: excused only by a restart of a volatile server between
     // them, and only when the earlier holder was told it had lost the lease
    constexpr std::int64_t ms = 1'000'000;
    auto in = clean_history();
    const auto earlier = [&](const char* result) {
      return parse_text(1, "START 1 11 50\nA 1 " + std::to_string(90 * ms) + " " + std::to_string(100 * ms) + " 1 " +
                               std::to_string(1000 * ms) + "\nR 1 " + std::to_string(500 * ms) + " " +
                               std::to_string(510 * ms) + " " + result + " " + std::to_string(1000 * ms) + " 0\n");
    };
    in.clients[0] = earlier("already_lost");
    in.clients[1] = parse_text(2, "START 2 12 50\nA 1 " + std::to_string(250 * ms) + " " + std::to_string(300 * ms) +
                                      " 2 " + std::to_string(1200 * ms) + "\nR 1 " + std::to_string(400 * ms) + " " +
                                      std::to_string(410 * ms) + " released " + std::to_string(1200 * ms) + " 0\nEND " +
                                      std::to_string(500 * ms) + "\n");
    in.ops.clear();
    in.resource_value = 0;
    in.resource_last_fence = 0;
    in.baseline = false;
    in.events.push_back({FaultEvent::kServerRestart, 150 * ms, 200 * ms, 0, 0});
    Figures f = evaluate(in);
    expect(f.safe_overlaps == 1 && f.restart_overlaps == 0, "overlap within safe-until excused on a durable server");
    in.leases_volatile = true;
    f = evaluate(in);
    expect(f.safe_overlaps == 0 && f.restart_overlaps == 1 && f.violations(false).empty(),
           "overlap after a restart of a volatile server not excused");
    in.clients[0] = earlier("released");  // the earlier holder never learned it had lost the lease
    f = evaluate(in);
    expect(f.safe_overlaps == 1 && f.restart_overlaps == 0, "overlap excused although its earlier holder was not told");
    in.clients[0] = earlier("already_lost");
    in.events[0].t = 350 * ms;  // the restart came after the later hold began: no excuse
    in.events[0].t_end = 360 * ms;
    expect(evaluate(in).safe_overlaps == 1, "overlap excused by a later restart");
  }
  {  // a release that finds its lease lost long before its safe-until; a probe that saw it vanish
    constexpr std::int64_t ms = 1'000'000;
    auto t = [](std::int64_t v) { return std::to_string(v * 1'000'000); };
    auto in = clean_history();
    in.clients[0] = parse_text(1, "START 1 11 50\nA 1 " + t(90) + " " + t(100) + " 1 " + t(1000) + "\nP 1 " + t(130) +
                                      " 1 1 " + t(120) + "\nR 1 " + t(200) + " " + t(210) + " already_lost " + t(1000) +
                                      " 0\nEND " + t(220) + "\n");
    // Client 2's release reached the service after its safe-until (a frozen server): not counted.
    in.clients[1] = parse_text(2, "START 2 12 50\nA 1 " + t(300) + " " + t(310) + " 2 " + t(1300) + "\nR 1 " + t(900) +
                                      " " + t(1010) + " already_lost " + t(1000) + " 0\nEND " + t(1020) + "\n");
    in.ops.clear();
    in.resource_value = 0;
    in.resource_last_fence = 0;
    in.baseline = false;
    Figures f = evaluate(in);
    expect(f.lost_early == 1 && f.wrong_owner_effects == 1 && !f.violations(false).empty(),
           "lease lost before its safe-until not detected");
    in.leases_volatile = true;
    in.events.push_back({FaultEvent::kServerRestart, 125 * ms, 128 * ms, 0, 0});
    f = evaluate(in);
    expect(f.lost_early == 0 && f.lost_to_restart == 1 && f.wrong_owner_effects == 0 && f.probe_gone_at_restart == 1 &&
               f.violations(false).empty(),
           "lease lost at a restart of a volatile server not excused");
    in.events.push_back({FaultEvent::kClientStop, 201 * ms, 0, 1, 0});  // stopped before its release: not counted
    in.leases_volatile = false;
    in.events.erase(in.events.begin());
    f = evaluate(in);
    expect(f.lost_early == 0 && f.lost_to_restart == 0, "a stopped client's late release counted as lost early");
  }
  {  // forced session expiry: the expired holder's hold ends when the expiry began, not later
    auto t = [](std::int64_t v) { return std::to_string(v * 1'000'000); };
    constexpr std::int64_t ms = 1'000'000;
    auto in = clean_history();
    in.clients[0] = parse_text(1, "START 1 11 50\nA 1 " + t(90) + " " + t(100) + " 1 " + t(1000) + "\nP 1 " + t(400) +
                                      " 1 1 " + t(120) + "\nR 1 " + t(500) + " " + t(510) + " already_lost " + t(1000) +
                                      " 0\nEND " + t(520) + "\n");
    in.clients[1] = parse_text(2, "START 2 12 50\nA 1 " + t(200) + " " + t(300) + " 2 " + t(1200) + "\nR 1 " + t(600) +
                                      " " + t(610) + " released " + t(1200) + " 0\nEND " + t(620) + "\n");
    in.ops.clear();
    in.resource_value = 0;
    in.resource_last_fence = 0;
    in.baseline = false;
    Figures f = evaluate(in);
    expect(f.safe_overlaps == 1 && f.lost_early == 1 && f.wrong_owner_effects == 1 && f.expired_holds == 0,
           "a lease taken away without an expiry event not detected");
    in.events.push_back({FaultEvent::kSessionExpire, 250 * ms, 260 * ms, 1, 0});
    f = evaluate(in);
    expect(f.safe_overlaps == 0 && f.lost_early == 0 && f.wrong_owner_effects == 0 && f.expired_holds == 1 &&
               f.lost_to_expiry == 2 && f.violations(false).empty(),
           "a forced expiry's lost lease not excused");
    in.events[0].client = 2;  // another client's session: nothing excused
    f = evaluate(in);
    expect(f.safe_overlaps == 1 && f.lost_early == 1, "an expiry of another session excused the holder");
    in.events[0] = {FaultEvent::kSessionExpire, 350 * ms, 360 * ms, 1, 0};  // after the takeover: no excuse
    f = evaluate(in);
    expect(f.safe_overlaps == 1, "an overlap excused by a later expiry");
  }
  {  // a failover's regression: a fence issued while the standby was behind, not exceeded after
    auto in = clean_history();
    // Standby behind from 90, primary killed at 120, new primary at 140: c1's fence (returned at
    // 100) was issued during the lag; c2's (called at 150) must be above it.
    in.events.push_back({FaultEvent::kServerRestart, 90, 140, 0, 0, 120});
    in.clients[1].acquisitions[0].fence = 1;
    expect(evaluate(in).restart_regressions == 1, "regression of a fence issued while the standby was behind not detected");
  }
  {  // restart regression
    auto in = clean_history();
    in.events.push_back({FaultEvent::kServerRestart, 210, 220, 0, 0});
    in.clients[1].acquisitions[0].fence = 0;
    in.clients[1].acquisitions[0].t_call = 250;
    expect(evaluate(in).restart_regressions == 1, "restart regression not detected");
  }
  {  // recovery: c1 killed at 150 while holding; c2 acquires at 300
    auto in = clean_history();
    in.clients[0] = parse_text(1, "START 1 11 50\nA 1 90 100 1 1090\nWB 1 r-1-1 110 0\nW 1 r-1-1 120 1\n");
    in.death[1] = 150;
    in.events.push_back({FaultEvent::kClientKill, 150, 0, 1, 0});
    in.baseline = false;
    Figures f = evaluate(in);
    expect(f.kills_in_hold == 1 && f.recovery_ms.size() == 1 && std::abs(f.recovery_ms[0] - 150e-6) < 1e-9,
           "recovery not measured");
    expect(f.violations(false).empty(), "kill history reported violations");
  }
  {  // a malformed (truncated) last line is tolerated and counted
    ClientLog c = parse_text(1, "START 1 11 50\nA 1 90 100 1 10\nR 1 2");
    expect(c.malformed == 1 && c.acquisitions.size() == 1 && !c.acquisitions[0].released, "truncated log");
  }
  {
    expect(percentile({1, 2, 3, 4}, 50) == 2 && percentile({1, 2, 3, 4}, 99) == 4 && percentile({}, 50) == 0,
           "percentile");
  }
  return failures;
}

}  // namespace dblock::fault
