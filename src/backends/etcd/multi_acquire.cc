// MultiAcquire in the etcd-mutex layout (mutex_layout.h): every name's key in one transaction,
// all or none.
#include <algorithm>
#include <memory>

#include "dblock/errors.h"
#include "keys.h"
#include "mutex_layout.h"
#include "requests.h"

namespace dblock::etcd {

using std::chrono::milliseconds;
using etcdserverpb::RangeRequest;
using etcdserverpb::RangeResponse;

namespace {

// How long the keys of a call that failed unanswered are kept for the engine to call again.
constexpr milliseconds kCallKeep{1'000};

// "Every key in `prefix`'s range was created before revision `after` + 1" (an empty range too:
// etcd compares it as one key of create revision 0).
etcdserverpb::Compare none_created_after(const std::string& prefix, std::int64_t after) {
  etcdserverpb::Compare c;
  c.set_key(prefix);
  c.set_range_end(range_end(prefix));
  c.set_target(etcdserverpb::Compare::CREATE);
  c.set_result(etcdserverpb::Compare::LESS);
  c.set_create_revision(after + 1);
  return c;
}

}  // namespace

bool MutexLayout::only_readers(std::string_view name, const RangeResponse& line, const Contender& own) const {
  return std::all_of(line.kvs().begin(), line.kvs().end(), [&](const mvccpb::KeyValue& kv) {
    if (kv.key() == own.key && kv.value() == own.value) return true;
    const ContenderView view = view_of(kv.value());
    return is_key_of(name, kv.key()) && view.dblock && view.shared && view.permits == 0;
  });
}

std::int64_t MutexLayout::readers_only_at(const std::vector<AcquireRequest>& requests, const std::vector<Contender>& cs,
                                          SteadyClock::time_point until) {
  etcdserverpb::TxnRequest read;
  for (const AcquireRequest& request : requests) {
    RangeRequest* line = read.add_success()->mutable_request_range();
    whole_prefix(*line, prefix_of(request.name));
  }
  const etcdserverpb::TxnResponse r = client_.txn(read, until, "acquire");
  for (std::size_t i = 0; i < requests.size(); ++i) {
    if (!only_readers(requests[i].name, r.responses(static_cast<int>(i)).response_range(), cs[i])) return 0;
  }
  return r.header().revision();
}

etcdserverpb::TxnRequest MutexLayout::put_all_request(const std::vector<AcquireRequest>& requests,
                                                      const std::vector<Contender>& cs, std::int64_t seen) const {
  etcdserverpb::TxnRequest txn;
  for (std::size_t i = 0; i < requests.size(); ++i) {
    *txn.add_compare() = none_created_after(prefix_of(requests[i].name), seen);
    *txn.add_compare() = created_at(cs[i].key, 0);  // an earlier call's key: read below
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(cs[i].key);
    put->set_value(cs[i].value);
    put->set_lease(cs[i].lease);
    txn.add_failure()->mutable_request_range()->set_key(cs[i].key);
  }
  return txn;
}

// Exclusive: the put is conditional on every range being empty. Shared: a read first finds every
// range holding readers only, and the put is conditional on no key having come since. Either way
// a refusal leaves nothing behind. A call whose answer was lost may have put every key: the next
// call with the same secrets finds them its own.
std::vector<AcquireResult> MutexLayout::try_acquire_all(const std::vector<AcquireRequest>& requests) {
  const SteadyClock::time_point until = deadline();
  const SteadyClock::time_point began = SteadyClock::now();
  std::vector<Id> ids;
  std::vector<std::unique_ptr<AttemptScope>> scopes;
  std::vector<Contender> cs;
  SteadyClock::time_point expires = SteadyClock::time_point::max();
  for (const AcquireRequest& request : requests) {
    if (request.name.empty()) throw UsageError("etcd: empty lock name", kServiceName);
    ids.emplace_back(std::string(request.name), *request.secret);
    scopes.push_back(std::make_unique<AttemptScope>(*this, ids.back()));
    SteadyClock::time_point e;
    Contender c = contender(request, request.ttl, until, &e);
    expires = std::min(expires, e);
    c.attempted = began;
    c.keep_for = kCallKeep;
    remember(ids.back(), c);
    cs.push_back(std::move(c));
  }
  const auto give_up = [&] {
    // Nothing of this call was put; an earlier call's puts that went unanswered may land yet.
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (find(ids[i]).value_or(cs[i]).in_doubt) {
        leave_to_sweep(ids[i], cs[i]);
      } else {
        forget(ids[i]);
      }
    }
    return std::vector<AcquireResult>{};
  };
  const bool shared = !requests.empty() && requests.front().mode == LockMode::kShared;
  const std::int64_t seen = shared ? readers_only_at(requests, cs, until) : 0;
  if (shared && seen == 0) return give_up();

  etcdserverpb::TxnResponse r;
  try {
    r = client_.txn(put_all_request(requests, cs, seen), until, "acquire");
  } catch (const LeaseNotFound&) {
    for (std::size_t i = 0; i < ids.size(); ++i) lease_gone(ids[i], cs[i].lease);
    throw;
  } catch (const Error&) {
    for (const Id& id : ids) mark_in_doubt(id);
    throw;
  }
  std::vector<std::int64_t> revisions(cs.size(), r.header().revision());  // the puts': this transaction's
  if (!r.succeeded()) {
    // Held already if every key is there as this call puts it: an earlier call's, whose answer
    // was lost (its puts are all or none). Else nothing of this call is there.
    for (std::size_t i = 0; i < cs.size(); ++i) {
      const RangeResponse& there = r.responses(static_cast<int>(i)).response_range();
      if (there.kvs_size() == 0 || there.kvs(0).value() != cs[i].value || there.kvs(0).lease() != cs[i].lease) {
        return give_up();
      }
      revisions[i] = there.kvs(0).create_revision();
    }
  }
  std::vector<AcquireResult> out(cs.size());
  for (std::size_t i = 0; i < cs.size(); ++i) out[i] = hold(ids[i], cs[i], revisions[i], requests[i].ttl, began, expires);
  return out;
}

}  // namespace dblock::etcd
