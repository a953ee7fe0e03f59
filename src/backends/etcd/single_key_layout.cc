#include "single_key_layout.h"

#include <algorithm>

#include "audit.h"
#include "dblock/errors.h"
#include "requests.h"

namespace dblock::etcd {

using std::chrono::milliseconds;
using etcdserverpb::RangeRequest;

namespace {

// How long the key of a try that failed unanswered is kept for the engine to try again.
constexpr milliseconds kTryKeep{1'000};

}  // namespace

std::string SingleKeyLayout::key_for(std::string_view name, std::int64_t, int) const {
  return options_.prefix + std::string(name);
}

RangeRequest SingleKeyLayout::holder_read(std::string_view name) const {
  RangeRequest r;
  r.set_key(key_for(name, 0, 0));
  return r;
}

bool SingleKeyLayout::is_key_of(std::string_view name, const std::string& key) const {
  return key == key_for(name, 0, 0);
}

// As python-etcd3's Lock: put the key bound to the lease if nobody created it, else read it. A
// key holding the own value is an earlier attempt's whose answer was lost: held.
AcquireResult SingleKeyLayout::try_acquire(const AcquireRequest& request) {
  if (request.name.empty()) throw UsageError("etcd: empty lock name", kServiceName);
  const SteadyClock::time_point until = deadline();
  const SteadyClock::time_point began = SteadyClock::now();
  const Id id{std::string(request.name), *request.secret};
  const AttemptScope scope(*this, id);
  SteadyClock::time_point expires;
  Contender c = contender(request, request.ttl, until, &expires);
  // Until it holds, the engine may stop attempting after any fault: sweep() then deletes the key.
  c.attempted = began;
  c.keep_for = kTryKeep;
  remember(id, c);

  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(c.key, 0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(c.key);
  put->set_value(c.value);
  put->set_lease(c.lease);
  txn.add_failure()->mutable_request_range()->set_key(c.key);
  etcdserverpb::TxnResponse r;
  try {
    r = client_.txn(txn, until, "acquire");
  } catch (const LeaseNotFound&) {
    lease_gone(id, c.lease);  // it ended before the put (answers came late): the next attempt starts over
    throw;
  } catch (const Error&) {
    mark_in_doubt(id);
    throw;
  }

  AcquireResult out;
  std::int64_t revision = r.header().revision();  // a put: this transaction's revision
  if (!r.succeeded()) {
    const auto& held = r.responses(0).response_range();
    // Ours only if bound to the lease this acquisition keeps alive (an orphan of its own on
    // another lease is swept, not taken up).
    if (held.kvs_size() == 0 || held.kvs(0).value() != c.value || held.kvs(0).lease() != c.lease) {
      // A put of an earlier attempt that went unanswered may land yet: its key is swept.
      if (find(id).value_or(c).in_doubt) {
        leave_to_sweep(id, c);
      } else {
        forget(id);
      }
      return out;
    }
    revision = held.kvs(0).create_revision();
  }
  return hold(id, c, revision, request.ttl, began, expires);
}

std::vector<LeaseInfo> SingleKeyLayout::list(std::optional<std::string_view> name) {
  RangeRequest read;
  if (name) {
    read = holder_read(*name);
  } else {
    whole_prefix(read, options_.prefix);
  }
  const etcdserverpb::RangeResponse r = client_.range(read, deadline(), "list");
  std::vector<LeaseInfo> out;
  for (const mvccpb::KeyValue& kv : r.kvs()) {
    if (kv.key().size() <= options_.prefix.size() || is_audit_key(kv.key(), options_.prefix)) continue;
    LeaseInfo info;
    info.name = kv.key().substr(options_.prefix.size());
    info.holder = holder_of(kv.value());
    info.fence = kv.create_revision();
    info.renewals = kv.version() - 1;  // each renewal touches the key once
    info.bound = LeaseBound::kSession;
    out.push_back(std::move(info));  // waiters stay -1: nobody keeps a line here
  }
  return out;
}

NativeWait::Turn SingleKeyLayout::wait_for_turn(std::string_view name, const OwnerSecret&, std::int64_t,
                                                milliseconds max_wait) {
  Turn turn;
  const SteadyClock::time_point until = std::min(deadline(), SteadyClock::now() + max_wait);
  try {
    const etcdserverpb::RangeResponse r = client_.range(holder_read(name), until, "wait");
    if (r.kvs_size() > 0) client_.wait_deleted(r.kvs(0).key(), r.header().revision(), until);
  } catch (const Error&) {
    // Waiting is an optimisation: the next attempt reports real trouble.
  }
  turn.outcome = Outcome::kWoken;
  return turn;
}

}  // namespace dblock::etcd
