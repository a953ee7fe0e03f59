#include "single_key_layout.h"

#include <algorithm>

#include "audit.h"
#include "dblock/errors.h"
#include "requests.h"

namespace dblock::etcd {

using std::chrono::milliseconds;
using etcdserverpb::RangeRequest;

std::string SingleKeyLayout::key_for(std::string_view name, std::int64_t) const {
  return options_.prefix + std::string(name);
}

RangeRequest SingleKeyLayout::holder_read(std::string_view name) const {
  RangeRequest r;
  r.set_key(key_for(name, 0));
  return r;
}

// As python-etcd3's Lock: put the key bound to the own lease if nobody created it, else read it.
// A key already bound to the own lease is an earlier attempt's whose answer was lost: held.
bool SingleKeyLayout::is_key_of(std::string_view name, const std::string& key) const { return key == key_for(name, 0); }

AcquireResult SingleKeyLayout::try_acquire(const AcquireRequest& request) {
  if (request.name.empty()) throw UsageError("etcd: empty lock name", kServiceName);
  const SteadyClock::time_point until = deadline();
  const Id id{std::string(request.name), *request.secret};
  const Contender c = contender(request, request.ttl, until);

  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(c.key, 0);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(c.key);
  put->set_value(contender_value(*request.secret, request.holder));
  put->set_lease(c.lease);
  txn.add_failure()->mutable_request_range()->set_key(c.key);
  etcdserverpb::TxnResponse r;
  try {
    r = client_.txn(txn, until, "acquire");
  } catch (const LeaseNotFound&) {
    forget(id);  // it ended before the put (answers came late): the next attempt starts over
    throw;
  }

  AcquireResult out;
  std::int64_t revision = r.header().revision();  // a put: this transaction's revision
  if (!r.succeeded()) {
    const auto& held = r.responses(0).response_range();
    if (held.kvs_size() == 0 || held.kvs(0).lease() != c.lease) {
      withdraw(id, Contender{c.lease, c.key, 0}, until);  // no key of ours: revokes the lease
      return out;
    }
    revision = held.kvs(0).create_revision();
  }
  remember(id, Contender{c.lease, c.key, revision});
  out.acquired = true;
  out.fence = revision;
  return out;
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
