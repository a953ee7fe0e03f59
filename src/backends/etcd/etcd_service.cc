#include "etcd_service.h"

#include <algorithm>

#include "audit.h"
#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"
#include "dblock/service/identifiers.h"
#include "requests.h"

namespace dblock::etcd {

namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;

// sweep(): how often, and how many keys a pass deletes at most.
constexpr milliseconds kSweepEvery{500};
constexpr std::size_t kSweepBatch = 16;
// How long past a scheduled job's window its key is kept out of reuse.
constexpr milliseconds kWindowSlack{5'000};

// "`key` holds `value`".
etcdserverpb::Compare holds(const std::string& key, const std::string& value) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::VALUE);
  c.set_result(etcdserverpb::Compare::EQUAL);
  c.set_value(value);
  return c;
}

}  // namespace

EtcdService::EtcdService(const Options& options) : options_(options), client_(options_) {}

EtcdService::~EtcdService() {
  // What the engine did not release (it releases its leases before closing) ends with the
  // service's leases, as a session's locks end with it.
  const SteadyClock::time_point until = SteadyClock::now() + kBackgroundCall;
  for (const std::int64_t lease : leases_.take_all()) {
    try {
      client_.revoke(lease, until);
    } catch (...) {
      // Unreachable: the lease ends by its TTL, and its keys with it.
    }
  }
}

ServiceTraits EtcdService::traits() const {
  ServiceTraits traits;
  traits.bound = LeaseBound::kSession;  // an etcd lease: no end on a clock a client can read
  traits.hold_at_least = true;
  return traits;
}

SteadyClock::time_point EtcdService::deadline() {
  return bounded_deadline();
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

void EtcdService::retire(const Id& id, const std::string& key, SteadyClock::time_point until) {
  service::MutexLock lock(mutex_);
  contenders_.erase(id);
  kept_out_.emplace_back(key, until);
}

void EtcdService::remember_new(const Id& id, Contender& c, std::string_view name) {
  service::MutexLock lock(mutex_);
  const SteadyClock::time_point now = SteadyClock::now();
  std::erase_if(kept_out_, [&](const auto& k) { return k.second <= now; });
  const std::string shared = key_for(name, c.lease, 0);
  for (int slot = 0;; ++slot) {
    c.key = key_for(name, c.lease, slot);
    if (slot > 0 && c.key == shared) break;  // the layout's one key per name
    bool taken = false;
    for (const auto& [other, held] : contenders_) taken = taken || held.key == c.key;
    for (const Contender& orphan : orphans_) taken = taken || orphan.key == c.key;
    for (const auto& [key, until] : kept_out_) taken = taken || key == c.key;
    if (!taken) break;
  }
  contenders_[id] = c;
}

void EtcdService::lease_gone(const Id& id, std::int64_t lease) {
  leases_.gone(lease);
  forget(id);
}

void EtcdService::leave_to_sweep(const Id& id, const Contender& stale) {
  service::MutexLock lock(mutex_);
  contenders_.erase(id);
  orphans_.push_back(stale);
}

void EtcdService::mark_in_doubt(const Id& id) {
  service::MutexLock lock(mutex_);
  if (const auto it = contenders_.find(id); it != contenders_.end()) it->second.in_doubt = true;
}

void EtcdService::end_attempt(const Id& id) {
  service::MutexLock lock(mutex_);
  if (const auto it = contenders_.find(id); it != contenders_.end()) {
    it->second.in_flight = false;
    it->second.attempted = SteadyClock::now();  // the next attempt is due keep_for from here
  }
}

microseconds EtcdService::granted_for(SteadyClock::time_point began, SteadyClock::time_point expires) {
  return std::max(microseconds::zero(), std::chrono::duration_cast<microseconds>(expires - began));
}

EtcdService::Contender EtcdService::contender(const AcquireRequest& request, milliseconds ttl,
                                              SteadyClock::time_point until, SteadyClock::time_point* expires) {
  // An orphan on the lease this attempt keeps alive would outlive it: deleted first.
  sweep(std::min(until, SteadyClock::now() + kBackgroundCall));
  const Id id{std::string(request.name), *request.secret};
  std::optional<Contender> known;
  {
    service::MutexLock lock(mutex_);
    if (const auto it = contenders_.find(id); it != contenders_.end()) {
      it->second.in_flight = true;  // from here sweep() leaves it alone
      known = it->second;
    }
  }
  if (known) {
    // A waiter's key lives as long as its lease: kept alive for the next attempts.
    if (const std::optional<LeaseTable::Bound> kept = leases_.keep(known->lease, ttl, until)) {
      *expires = kept->expires;
      return *known;
    }
    lease_gone(id, known->lease);  // its key, and its place in line, went with it: start again
  }
  const LeaseTable::Bound bound = leases_.lease_for(ttl, until);
  *expires = bound.expires;
  Contender c;
  c.lease = bound.lease;
  c.value = contender_value(*request.secret, request.holder, request.mode, request.permits);
  c.in_flight = true;
  remember_new(id, c, request.name);
  return c;
}

AcquireResult EtcdService::hold(const Id& id, Contender c, std::int64_t revision, milliseconds ttl,
                                SteadyClock::time_point began, SteadyClock::time_point expires) {
  c.revision = revision;
  const AcquireResult result = mark_held(c, ttl, began, expires);
  remember(id, c);
  return result;
}

AcquireResult EtcdService::mark_held(Contender& c, milliseconds ttl, SteadyClock::time_point began,
                                     SteadyClock::time_point expires) {
  c.keep_for = milliseconds::zero();  // from here sweep() counts it as a holder
  c.ttl = ttl;
  c.renewed = began;
  c.granted = SteadyClock::now();
  AcquireResult result;
  result.acquired = true;
  result.fence = c.revision;
  result.granted_for = granted_for(began, expires);
  return result;
}

std::optional<AcquireResult> EtcdService::hold_if_remembered(const Id& id, std::int64_t revision, milliseconds ttl,
                                                             SteadyClock::time_point began,
                                                             SteadyClock::time_point expires) {
  service::MutexLock lock(mutex_);
  const auto it = contenders_.find(id);
  if (it == contenders_.end() || it->second.revision != revision) return std::nullopt;
  return mark_held(it->second, ttl, began, expires);
}

bool EtcdService::delete_key(const Contender& c, SteadyClock::time_point until) {
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = c.revision != 0 ? created_at(c.key, c.revision) : holds(c.key, c.value);
  txn.add_success()->mutable_request_delete_range()->set_key(c.key);
  return client_.txn(txn, until, "release").succeeded();
}

bool EtcdService::withdraw(const Id& id, const Contender& c, SteadyClock::time_point until) {
  bool deleted;
  try {
    deleted = delete_key(c, until);
  } catch (const Error&) {
    leave_to_sweep(id, c);  // unanswered: the key may still be there, kept alive with the lease
    throw;
  }
  forget(id);
  return deleted && c.revision != 0;
}

void EtcdService::sweep(SteadyClock::time_point until) {
  std::vector<Contender> due;
  {
    service::MutexLock lock(mutex_);
    const SteadyClock::time_point now = SteadyClock::now();
    if (now < next_sweep_) return;
    next_sweep_ = now + kSweepEvery;
    for (auto it = contenders_.begin(); it != contenders_.end();) {
      const Contender& c = it->second;
      const bool abandoned = c.keep_for.count() > 0 && now - c.attempted > 2 * c.keep_for;
      const bool expired = c.keep_for.count() == 0 && c.ttl.count() > 0 && now - c.renewed > c.ttl + kBackgroundCall;
      if (!c.in_flight && (abandoned || expired)) {
        orphans_.push_back(c);
        it = contenders_.erase(it);
      } else {
        ++it;
      }
    }
    due.assign(orphans_.begin(), orphans_.begin() + static_cast<std::ptrdiff_t>(std::min(orphans_.size(), kSweepBatch)));
  }
  for (const Contender& c : due) {
    if (SteadyClock::now() >= until) return;
    try {
      delete_key(c, until);
    } catch (const Error&) {
      continue;  // kept for a later pass
    }
    service::MutexLock lock(mutex_);
    std::erase_if(orphans_, [&](const Contender& o) { return o.key == c.key && o.value == c.value && o.revision == c.revision; });
  }
}

// ---- leases ----

RenewResult EtcdService::renew(const LeaseKey& lease, milliseconds) {
  RenewResult result;
  const Id id{std::string(lease.name), *lease.secret};
  const std::optional<Contender> c = find(id);
  if (!c) return result;
  const SteadyClock::time_point until = deadline();
  const SteadyClock::time_point began = SteadyClock::now();
  const std::optional<SteadyClock::time_point> expires = leases_.keep_alive(c->lease, until);
  if (!expires) {
    lease_gone(id, c->lease);
    return result;
  }
  result.granted_for = granted_for(began, *expires);
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(c->key, c->revision);
  if (touch_on_renew()) {
    etcdserverpb::PutRequest* touch = txn.add_success()->mutable_request_put();
    touch->set_key(c->key);
    touch->set_ignore_value(true);
    touch->set_ignore_lease(true);
  }
  result.renewed = client_.txn(txn, until, "renew").succeeded();
  if (result.renewed) {
    service::MutexLock lock(mutex_);
    if (const auto it = contenders_.find(id); it != contenders_.end()) it->second.renewed = began;
  }
  sweep(std::min(until, SteadyClock::now() + kBackgroundCall));
  return result;
}

bool EtcdService::release(const LeaseKey& lease) {
  const Id id{std::string(lease.name), *lease.secret};
  const std::optional<Contender> c = find(id);
  if (!c) return false;
  const SteadyClock::time_point until = deadline();
  if (lease.hold_at_least > milliseconds::zero()) {
    const auto left = std::chrono::ceil<milliseconds>(lease.hold_at_least - (SteadyClock::now() - c->granted));
    if (left > milliseconds::zero()) return keep_window(id, *c, left, until);
  }
  return withdraw(id, *c, until);
}

bool EtcdService::keep_window(const Id& id, const Contender& c, milliseconds left, SteadyClock::time_point until) {
  const Client::Granted window = client_.grant(left, until);
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(c.key, c.revision);
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(c.key);
  put->set_value(window_value(view_of(c.value).holder));
  put->set_lease(window.id);
  bool kept = false;
  try {
    kept = client_.txn(txn, until, "release").succeeded();
  } catch (const Error&) {
    // Unanswered: the key may be bound to the window's lease now, or still to its own. `c`
    // stays, and sweep() deletes the key (if it is still there) only once the window has passed.
    Contender waiting = c;
    waiting.renewed = SteadyClock::now();
    waiting.ttl = std::max(left, std::chrono::duration_cast<milliseconds>(window.ttl));
    remember(id, waiting);
    throw;
  }
  if (!kept) {
    forget(id);  // force-released meanwhile: the window's lease has no key
    try {
      client_.revoke(window.id, std::min(until, SteadyClock::now() + kBackgroundCall));
    } catch (const Error&) {
      // It ends by itself.
    }
    return false;
  }
  // etcd ends the window's lease on its leader after what it granted, later after a leader
  // change: the key is not reused before then (a later attempt that finds it anyway leaves it
  // alone, MutexLayout::made_at()).
  retire(id, c.key, SteadyClock::now() + std::max(left, std::chrono::duration_cast<milliseconds>(window.ttl)) + kWindowSlack);
  return true;
}

void EtcdService::lease_lost(const LeaseKey& lease) noexcept {
  try {
    const Id id{std::string(lease.name), *lease.secret};
    if (const std::optional<Contender> c = find(id)) withdraw(id, *c, SteadyClock::now() + kBackgroundCall);
  } catch (...) {
    // Kept for a later sweep; the key ends with its lease at the latest.
  }
}

std::vector<const mvccpb::KeyValue*> EtcdService::holding(std::string_view name,
                                                          const etcdserverpb::RangeResponse& read) const {
  for (const mvccpb::KeyValue& kv : read.kvs()) {
    if (is_key_of(name, kv.key())) return {&kv};
  }
  return {};
}

bool EtcdService::force_release(std::string_view name, std::string_view by) {
  const SteadyClock::time_point until = deadline();
  const etcdserverpb::RangeResponse read = client_.range(holder_read(name), until, "force-release");
  const std::vector<const mvccpb::KeyValue*> held = holding(name, read);
  if (held.empty()) return false;
  ForceReleaseRecord record;
  record.name = std::string(name);
  record.at_us = std::chrono::duration_cast<std::chrono::microseconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();  // this host's: etcd has none
  record.by = std::string(by);
  record.by_account = options_.user;
  etcdserverpb::TxnRequest txn;
  std::vector<std::string> evicted;
  for (const mvccpb::KeyValue* kv : held) {
    const ContenderView view = view_of(kv->value());
    evicted.push_back(view.holder);
    record.mode = view.shared ? LockMode::kShared : LockMode::kExclusive;
    record.old_fence = std::max(record.old_fence, kv->create_revision());  // shared: the newest holder's
    *txn.add_compare() = created_at(kv->key(), kv->create_revision());
    txn.add_success()->mutable_request_delete_range()->set_key(kv->key());
  }
  record.evicted = service::joined_holders(std::move(evicted));
  etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
  put->set_key(audit_key(options_.prefix, name, record.old_fence));
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
