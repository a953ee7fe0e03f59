#include "etcd_service.h"

#include <algorithm>
#include <exception>

#include "dblock/errors.h"
#include "audit.h"
#include "dblock/service/call_deadline.h"
#include "requests.h"

namespace dblock::etcd {

namespace {

using std::chrono::milliseconds;

// The longest a call may take where the engine set no deadline (admin calls).
constexpr milliseconds kLongestCall{30'000};
// How long a lease given up in the background may take to be revoked.
constexpr milliseconds kBackgroundCall{2'000};

}  // namespace

EtcdService::EtcdService(const Options& options) : options_(options), client_(options_) {}

EtcdService::~EtcdService() {
  // What the engine did not release (it releases its leases before closing) ends with the service,
  // as a session's locks end with it.
  std::map<Id, Contender, IdLess> left;
  {
    service::MutexLock lock(mutex_);
    left.swap(contenders_);
  }
  const SteadyClock::time_point until = SteadyClock::now() + kBackgroundCall;
  for (const auto& [id, c] : left) {
    try {
      client_.revoke(c.lease, until);
    } catch (...) {
      // Unreachable: the lease ends by its TTL.
    }
  }
}

ServiceTraits EtcdService::traits() const {
  ServiceTraits traits;
  traits.bound = LeaseBound::kSession;  // an etcd lease: no end on a clock a client can read
  return traits;
}

SteadyClock::time_point EtcdService::deadline() {
  return std::min(call_deadline(), SteadyClock::now() + kLongestCall);
}

// ---- what this service remembers ----

std::optional<EtcdService::Contender> EtcdService::find(const Id& id) {
  service::MutexLock lock(mutex_);
  const auto it = contenders_.find(id);
  if (it == contenders_.end()) return std::nullopt;
  return it->second;
}

void EtcdService::remember(const Id& id, const Contender& c) {
  service::MutexLock lock(mutex_);
  contenders_[id] = c;
}

void EtcdService::forget(const Id& id) {
  service::MutexLock lock(mutex_);
  contenders_.erase(id);
}

EtcdService::Contender EtcdService::contender(const AcquireRequest& request, milliseconds ttl,
                                              SteadyClock::time_point until) {
  const Id id{std::string(request.name), *request.secret};
  if (std::optional<Contender> known = find(id)) {
    // A lease that ended took its key, and the place in line, with it: start again.
    if (client_.keep_alive(known->lease, until).count() > 0) return *known;
    forget(id);
  }
  const Client::Granted granted = client_.grant(ttl, until);
  Contender c{granted.id, key_for(request.name, granted.id), 0};
  remember(id, c);
  return c;
}

bool EtcdService::withdraw(const Id& id, const Contender& c, SteadyClock::time_point until) {
  bool deleted = false;
  std::exception_ptr failure;
  if (c.revision != 0) {
    etcdserverpb::TxnRequest txn;
    *txn.add_compare() = created_at(c.key, c.revision);
    txn.add_success()->mutable_request_delete_range()->set_key(c.key);
    try {
      deleted = client_.txn(txn, until, "release").succeeded();
    } catch (const Error&) {
      failure = std::current_exception();
    }
  }
  try {
    client_.revoke(c.lease, until);
  } catch (const Error&) {
    if (failure) std::rethrow_exception(failure);  // neither answered: the key may be there
    if (c.revision == 0) throw;                     // nothing answered: a key bound to it may be there
    forget(id);  // the key is gone; the lease ends by its TTL
    return deleted;
  }
  forget(id);
  return deleted || (failure != nullptr);  // the revocation deleted a key still bound to it
}

// ---- leases ----

RenewResult EtcdService::renew(const LeaseKey& lease, milliseconds) {
  RenewResult result;
  const std::optional<Contender> c = find(Id{std::string(lease.name), *lease.secret});
  if (!c) return result;
  const SteadyClock::time_point until = deadline();
  if (client_.keep_alive(c->lease, until).count() == 0) return result;
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(c->key, c->revision);
  if (touch_on_renew()) {
    etcdserverpb::PutRequest* touch = txn.add_success()->mutable_request_put();
    touch->set_key(c->key);
    touch->set_ignore_value(true);
    touch->set_ignore_lease(true);
  }
  result.renewed = client_.txn(txn, until, "renew").succeeded();
  return result;
}

bool EtcdService::release(const LeaseKey& lease) {
  const Id id{std::string(lease.name), *lease.secret};
  const std::optional<Contender> c = find(id);
  if (!c) return false;
  return withdraw(id, *c, deadline());
}

void EtcdService::lease_lost(const LeaseKey& lease) noexcept {
  try {
    const Id id{std::string(lease.name), *lease.secret};
    const std::optional<Contender> c = find(id);
    forget(id);
    if (c) client_.revoke(c->lease, SteadyClock::now() + kBackgroundCall);
  } catch (...) {
    // Best effort: the lease ends by its TTL.
  }
}

bool EtcdService::force_release(std::string_view name, std::string_view by) {
  const SteadyClock::time_point until = deadline();
  const etcdserverpb::RangeResponse read = client_.range(holder_read(name), until, "force-release");
  const auto it = std::find_if(read.kvs().begin(), read.kvs().end(),
                               [&](const mvccpb::KeyValue& kv) { return is_key_of(name, kv.key()); });
  if (it == read.kvs().end()) return false;
  const mvccpb::KeyValue& held = *it;
  ForceReleaseRecord record;
  record.name = std::string(name);
  record.at_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();  // this host's: etcd has none
  record.by = std::string(by);
  record.by_account = options_.user;
  record.evicted = holder_of(held.value());
  record.old_fence = held.create_revision();
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(held.key(), held.create_revision());
  txn.add_success()->mutable_request_delete_range()->set_key(held.key());
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(audit_key(options_.prefix, name, held.create_revision()));
  put->set_value(encode_record(record));
  return client_.txn(txn, until, "force-release").succeeded();
}

std::vector<ForceReleaseRecord> EtcdService::force_releases(std::optional<std::string_view> name, std::size_t limit) {
  etcdserverpb::RangeRequest read;
  whole_prefix(read, name ? audit_prefix(options_.prefix) + std::string(*name) + "/" : audit_prefix(options_.prefix));
  read.set_sort_target(etcdserverpb::RangeRequest::CREATE);
  read.set_sort_order(etcdserverpb::RangeRequest::DESCEND);
  if (!name) read.set_limit(static_cast<std::int64_t>(limit));  // a name's range holds longer names' too
  const etcdserverpb::RangeResponse r = client_.range(read, deadline(), "force-release history");
  std::vector<ForceReleaseRecord> out;
  for (const mvccpb::KeyValue& kv : r.kvs()) {
    if (out.size() >= limit) break;
    std::optional<ForceReleaseRecord> record = decode_record(kv);
    if (record && (!name || record->name == *name)) out.push_back(std::move(*record));
  }
  return out;
}

}  // namespace dblock::etcd
