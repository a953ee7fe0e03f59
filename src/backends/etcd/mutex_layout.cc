#include "mutex_layout.h"

#include <algorithm>
#include <map>

#include "audit.h"
#include "dblock/errors.h"
#include "dblock/service/identifiers.h"
#include "keys.h"
#include "requests.h"

namespace dblock::etcd {

using std::chrono::milliseconds;
using etcdserverpb::RangeRequest;
using etcdserverpb::RangeResponse;

namespace {

// How long the key of a try that failed unanswered is kept for the engine to try again.
constexpr milliseconds kTryKeep{1'000};
// How long a key found holding a scheduled job's window is not tried again.
constexpr milliseconds kWindowKeptOut{10'000};

// How many of `line` (one name's contenders, oldest first) hold the name: the first; when it is a
// shared contender's, with it the shared ones right behind it, up to its permits. A key of a
// longer name in the name's range from `blocked_from` on (its create revision; 0: none) stands in
// line before every key of the name behind it: none of those holds.
std::size_t holders_at_front(const std::vector<const mvccpb::KeyValue*>& line, std::int64_t blocked_from) {
  const auto before_block = [&](std::size_t i) { return blocked_from == 0 || line[i]->create_revision() < blocked_from; };
  if (line.empty() || !before_block(0)) return 0;
  const ContenderView first = view_of(line.front()->value());
  if (!first.dblock || !first.shared) return 1;
  std::size_t n = 1;
  while (n < line.size() && before_block(n) && (first.permits == 0 || n < static_cast<std::size_t>(first.permits))) {
    const ContenderView next = view_of(line[n]->value());
    if (!next.dblock || !next.shared) break;
    ++n;
  }
  return n;
}

}  // namespace

ServiceTraits MutexLayout::traits() const {
  ServiceTraits traits = EtcdService::traits();
  traits.shared_leases = true;
  traits.permits = true;
  return traits;
}

std::vector<const mvccpb::KeyValue*> MutexLayout::holding(std::string_view name, const RangeResponse& read) const {
  std::vector<const mvccpb::KeyValue*> line;
  std::int64_t blocked_from = 0;  // the oldest longer name's key in the range
  for (const mvccpb::KeyValue& kv : read.kvs()) {
    if (is_key_of(name, kv.key())) {
      line.push_back(&kv);
    } else if (blocked_from == 0) {
      blocked_from = kv.create_revision();
    }
  }
  line.resize(holders_at_front(line, blocked_from));
  return line;
}

std::string MutexLayout::prefix_of(std::string_view name) const { return lock_prefix(options_.prefix, name); }

// concurrency.Mutex's key, "<lease id in hex>", for the first acquisition on a name and lease;
// "<lease id in hex>-<slot>" for others at the same time.
std::string MutexLayout::key_for(std::string_view name, std::int64_t lease, int slot) const {
  std::string key = contender_key(prefix_of(name), lease);
  if (slot > 0) key += "-" + std::to_string(slot);
  return key;
}

RangeRequest MutexLayout::holder_read(std::string_view name) const {
  RangeRequest r = first_by_creation(prefix_of(name), RangeRequest::ASCEND);
  r.set_limit(0);  // every contender: is_key_of() skips longer names'
  return r;
}

bool MutexLayout::is_key_of(std::string_view name, const std::string& key) const {
  return lock_name_of(key, options_.prefix) == std::optional<std::string>(std::string(name));
}

AcquireResult MutexLayout::try_acquire(const AcquireRequest& request) {
  return attempt(request, false, milliseconds::zero()).result;
}

FairQueue::Attempt MutexLayout::attempt_in_line(const AcquireRequest& request, const Place& place) {
  return attempt(request, true, place.hold_for);
}

// A contender already in line only reads (a read-only transaction: no Raft write, no fsync);
// one without a key yet puts it if it is not there (an earlier attempt's answer may have been
// lost) and reads, in one transaction, as concurrency.Mutex does. Its responses: the own key,
// the first contender (a shared one's: every contender ahead), and how many stand before the own
// key.
etcdserverpb::TxnRequest MutexLayout::attempt_request(const Contender& c, const std::string& prefix, bool shared) {
  const bool in_line = c.revision > 0;
  etcdserverpb::TxnRequest txn;
  if (in_line) {
    *txn.add_compare() = created_at(c.key, c.revision);
    txn.add_success()->mutable_request_range()->set_key(c.key);
  } else {
    *txn.add_compare() = created_at(c.key, 0);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(c.key);
    put->set_value(c.value);
    put->set_lease(c.lease);
    txn.add_failure()->mutable_request_range()->set_key(c.key);
  }
  // Then the first contender, and how many there are (put: the own key is the newest; else: the
  // ones before it).
  for (auto* ops : {txn.mutable_success(), txn.mutable_failure()}) {
    if (in_line && ops == txn.mutable_failure()) continue;  // the key is gone: nothing to read
    RangeRequest* line = ops->Add()->mutable_request_range();
    *line = first_by_creation(prefix, RangeRequest::ASCEND);
    if (shared) {  // a reader needs every key ahead, with its value
      line->set_limit(0);
      if (in_line) line->set_max_create_revision(c.revision - 1);
    }
    RangeRequest* ahead = ops->Add()->mutable_request_range();
    whole_prefix(*ahead, prefix);
    ahead->set_count_only(true);
    if (in_line) ahead->set_max_create_revision(c.revision - 1);
  }
  return txn;
}

// As concurrency.Mutex: put the own key if it is not there, then read who is first by create
// revision, in one transaction; the own key first means held.
FairQueue::Attempt MutexLayout::attempt(const AcquireRequest& request, bool queue, milliseconds hold_for) {
  if (request.name.empty()) throw UsageError("etcd: empty lock name", kServiceName);
  const SteadyClock::time_point until = deadline();
  const SteadyClock::time_point began = SteadyClock::now();
  const Id id{std::string(request.name), *request.secret};
  const AttemptScope scope(*this, id);
  // A waiter's key must outlive the pause until its next attempt, which keeps it alive again.
  SteadyClock::time_point expires;
  Contender c = contender(request, std::max(request.ttl, queue ? hold_for : milliseconds::zero()), until, &expires);
  const std::string prefix = prefix_of(request.name);
  // Until it holds, the engine may stop attempting after any fault: sweep() then deletes the key.
  c.attempted = began;
  c.keep_for = queue ? std::max(hold_for, milliseconds(1)) : kTryKeep;
  c.ttl = request.ttl;
  remember(id, c);

  const bool in_line = c.revision > 0;
  const bool shared = request.mode == LockMode::kShared;
  const etcdserverpb::TxnRequest txn = attempt_request(c, prefix, shared);
  etcdserverpb::TxnResponse r;
  try {
    r = client_.txn(txn, until, "acquire");
  } catch (const LeaseNotFound&) {
    lease_gone(id, c.lease);  // it ended before the put (answers came late): the next attempt starts over
    throw;
  } catch (const Error&) {
    if (!in_line) mark_in_doubt(id);
    throw;
  }

  const std::int64_t revision = made_at(id, c, r, request.name);
  const std::int64_t counted = r.responses(2).response_range().count();
  const std::int64_t others = in_line ? counted : counted - 1;  // not in line: the count has the own key

  c.revision = revision;
  bool held;
  try {
    held = holds(request, revision, r.responses(1).response_range());
  } catch (const UsageError&) {
    withdraw(id, c, until);  // a semaphore of another limit: this acquisition leaves the line
    throw;
  }
  Attempt out;
  if (held) {
    out.result = hold(id, c, revision, request.ttl, began, expires);
    return out;
  }
  if (!queue) {
    withdraw(id, c, until);
    return out;
  }
  remember(id, c);
  out.ticket = revision;
  out.position = static_cast<int>(std::max<std::int64_t>(others, 0));
  return out;
}

// The create revision of `c`'s key after its attempt's transaction `r`.
std::int64_t MutexLayout::made_at(const Id& id, const Contender& c, const etcdserverpb::TxnResponse& r,
                                  std::string_view name) {
  const bool in_line = c.revision > 0;
  if (in_line && !r.succeeded()) {
    // Gone since the last attempt (its lease ended, or a sweep took an abandoned waiter's key):
    // the next attempt starts over, at the end of the line.
    forget(id);
    throw ConnectionError("etcd: the key of a waiting acquisition of '" + std::string(name) +
                              "' went between two attempts",
                          kServiceName, "", true);
  }
  if (in_line) return c.revision;
  if (r.succeeded()) return r.header().revision();  // a put: this transaction's
  // The key was there: an earlier attempt's put whose answer was lost, if it holds the own value
  // on the own lease; else a key of an earlier acquisition on this slot, left to be swept.
  const mvccpb::KeyValue& there = r.responses(0).response_range().kvs(0);
  if (is_window_value(there.value())) {
    // A scheduled job's window on this key, longer than keep_window() expected: left alone.
    retire(id, c.key, SteadyClock::now() + kWindowKeptOut);
    throw ConnectionError("etcd: the key for an acquisition of '" + std::string(name) +
                              "' holds a scheduled job's window; the next attempt takes another",
                          kServiceName, "", true);
  }
  if (there.value() != c.value || there.lease() != c.lease) {
    Contender stale = c;
    stale.value = there.value();
    stale.revision = there.create_revision();
    leave_to_sweep(id, stale);
    throw ConnectionError("etcd: the key for an acquisition of '" + std::string(name) +
                              "' was left by an earlier one; it is swept, and the next attempt takes another",
                          kServiceName, "", true);
  }
  return there.create_revision();
}

bool MutexLayout::holds(const AcquireRequest& request, std::int64_t revision, const RangeResponse& line) const {
  if (request.mode != LockMode::kShared) return line.kvs_size() > 0 && line.kvs(0).create_revision() == revision;
  int ahead = 0;
  for (const mvccpb::KeyValue& kv : line.kvs()) {
    if (kv.create_revision() >= revision) break;
    const ContenderView view = view_of(kv.value());
    if (!view.dblock || !view.shared || !is_key_of(request.name, kv.key())) return false;
    // The first key holds the name: its limit is the name's while it is held.
    if (ahead == 0 && view.permits != request.permits) {
      throw service::permits_mismatch(kServiceName, request.name, view.permits, request.permits);
    }
    ++ahead;
  }
  return request.permits == 0 || ahead < request.permits;
}

std::vector<LeaseInfo> MutexLayout::list(std::optional<std::string_view> name) {
  RangeRequest read;
  whole_prefix(read, name ? prefix_of(*name) : options_.prefix);
  read.set_sort_target(RangeRequest::CREATE);
  read.set_sort_order(RangeRequest::ASCEND);
  const etcdserverpb::RangeResponse r = client_.range(read, deadline(), "list");
  std::map<std::string, std::vector<const mvccpb::KeyValue*>> lines;
  std::map<std::string, std::int64_t> blocked_from;  // a name's oldest key of a longer name (oldest first)
  for (const mvccpb::KeyValue& kv : r.kvs()) {
    if (is_audit_key(kv.key(), options_.prefix)) continue;
    const std::optional<std::string> lock = lock_name_of(kv.key(), options_.prefix);
    if (!lock) continue;
    for (std::size_t slash = lock->find('/'); slash != std::string::npos; slash = lock->find('/', slash + 1)) {
      blocked_from.try_emplace(lock->substr(0, slash), kv.create_revision());  // in "a"'s range: "a/b"'s key
    }
    if (!name || *lock == *name) lines[*lock].push_back(&kv);
  }
  std::vector<LeaseInfo> out;
  for (const auto& [lock, line] : lines) {
    const auto blocked = blocked_from.find(lock);
    const std::size_t holders = holders_at_front(line, blocked == blocked_from.end() ? 0 : blocked->second);
    if (holders == 0) continue;  // in line behind a longer name's key: nobody holds it
    const ContenderView first = view_of(line.front()->value());
    LeaseInfo info;
    info.name = lock;
    info.mode = first.shared ? LockMode::kShared : LockMode::kExclusive;
    info.permits = first.permits;
    info.holders = static_cast<int>(holders);
    info.holder = first.holder;
    for (std::size_t i = 1; i < holders; ++i) info.holder += "," + view_of(line[i]->value()).holder;
    const mvccpb::KeyValue& newest = *line[holders - 1];  // shared: the newest holder's fence
    info.fence = newest.create_revision();
    info.renewals = newest.version() - 1;  // each renewal touches the key once
    info.bound = LeaseBound::kSession;
    info.waiters = static_cast<int>(line.size() - holders);
    out.push_back(std::move(info));
  }
  return out;
}

// ---- the line ----

void MutexLayout::leave(std::string_view name, const OwnerSecret& secret) {
  const Id id{std::string(name), secret};
  if (const std::optional<Contender> c = find(id)) withdraw(id, *c, deadline());
}

FairQueue::Position MutexLayout::position(std::string_view name, const OwnerSecret&, std::int64_t ticket) {
  RangeRequest ahead;
  whole_prefix(ahead, prefix_of(name));
  ahead.set_count_only(true);
  ahead.set_max_create_revision(ticket - 1);
  const std::int64_t n = client_.range(ahead, deadline(), "position").count();
  // The first in line holds the lock: nobody's lease stands between it and the name.
  return Position{static_cast<int>(n), n > 0 ? milliseconds(1'000) : milliseconds::zero()};
}

NativeWait::Turn MutexLayout::wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                                            milliseconds max_wait) {
  Turn turn;
  if (ticket == 0) return turn;  // not in line: nothing to watch
  const SteadyClock::time_point until = std::min(deadline(), SteadyClock::now() + max_wait);
  const std::optional<Contender> c = find(Id{std::string(name), secret});
  try {
    if (c && view_of(c->value).shared) {
      wait_shared(name, ticket, view_of(c->value).permits, until);
      turn.outcome = Outcome::kWoken;
      return turn;
    }
    // As concurrency.Mutex waits: read the own key and the one just ahead of it; with none
    // ahead the own key holds (granted here, without another attempt), else watch that one go
    // and read again, until `until`. A deletion is a hint; only the read decides.
    RangeRequest line = first_by_creation(prefix_of(name), RangeRequest::DESCEND);
    line.set_max_create_revision(ticket);
    line.set_limit(2);
    while (c && SteadyClock::now() < until) {
      const etcdserverpb::RangeResponse r = client_.range(line, until, "wait");
      const bool own = r.kvs_size() > 0 && r.kvs(0).key() == c->key && r.kvs(0).create_revision() == ticket &&
                       r.kvs(0).value() == c->value;
      if (!own) break;  // gone since the attempt: the next one says why
      if (r.kvs_size() == 1) {
        turn.grant = grant_at_front(Id{std::string(name), secret}, *c, ticket);
        if (turn.grant) turn.outcome = Outcome::kGranted;
        break;
      }
      if (!client_.wait_deleted(r.kvs(1).key(), r.header().revision(), until)) break;
    }
  } catch (const Error&) {
    // Waiting is an optimisation: the next attempt reports real trouble.
  }
  if (!turn.grant) turn.outcome = Outcome::kWoken;
  return turn;
}

std::optional<LeaseGrant> MutexLayout::grant_at_front(const Id& id, const Contender& c, std::int64_t ticket) {
  // The engine counts a native wait's grant from its last attempt's send time, before c.attempted;
  // the lease must have what an attempt would have given it (else that attempt keeps it alive).
  const std::optional<LeaseTable::Bound> bound = leases_.known(c.lease, c.ttl);
  if (!bound || c.ttl <= milliseconds::zero()) return std::nullopt;
  const std::optional<AcquireResult> held = hold_if_remembered(id, ticket, c.ttl, c.attempted, bound->expires);
  if (!held) return std::nullopt;
  LeaseGrant grant;
  grant.ticket = ticket;
  grant.fence = held->fence;
  grant.granted_for = held->granted_for;
  return grant;
}

void MutexLayout::wait_shared(std::string_view name, std::int64_t ticket, int permits, SteadyClock::time_point until) {
  const std::string prefix = prefix_of(name);
  RangeRequest ahead = first_by_creation(prefix, RangeRequest::ASCEND);
  ahead.set_limit(0);
  ahead.set_max_create_revision(ticket - 1);
  const etcdserverpb::RangeResponse r = client_.range(ahead, until, "wait");
  const mvccpb::KeyValue* writer = nullptr;  // the newest key ahead that is not a reader's
  for (const mvccpb::KeyValue& kv : r.kvs()) {
    const ContenderView view = view_of(kv.value());
    if (!view.dblock || !view.shared || !is_key_of(name, kv.key())) writer = &kv;
  }
  if (writer != nullptr) {
    client_.wait_deleted(writer->key(), r.header().revision(), until);
  } else if (permits > 0 && r.kvs_size() >= permits) {
    client_.wait_deleted(prefix, r.header().revision(), until, range_end(prefix));  // a permit's release
  }
  // Else nothing holds it back any more (gone since the attempt read): the next attempt holds.
}

}  // namespace dblock::etcd
