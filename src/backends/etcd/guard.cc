// The guard on etcd (dblock/etcd/guard.h): the application's writes in one transaction that
// compares the lease's key with its fence.
#include "dblock/etcd/guard.h"

#include "audit.h"
#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"
#include "etcd_service.h"
#include "requests.h"

namespace dblock::etcd {

namespace {

EtcdService& etcd_service_of(LockManager& manager) {
  auto* service = dynamic_cast<EtcdService*>(&manager.service());
  if (service == nullptr) {
    throw UnsupportedError("the etcd guard needs a manager on etcd; this one is on " +
                           std::string(manager.service().name()));
  }
  return *service;
}

}  // namespace

std::string EtcdService::held_key(std::string_view name, const OwnerSecret& secret, std::int64_t fence) {
  const std::optional<Contender> c = find(Id(std::string(name), secret));
  if (!c || c->revision != fence) {
    throw LeaseLostError("etcd: this manager holds no key of '" + std::string(name) + "' at fence " +
                         std::to_string(fence) + " (released, lost or taken over)");
  }
  return c->key;
}

void EtcdService::check_guarded_write(std::string_view name, const Write& write) const {
  if (write.key.empty()) throw UsageError("etcd guard: a write needs a key");
  // Under a non-empty prefix every key is a lock's or a record's: a key written there could stand
  // in some lock's line for good. Under "" (etcdctl's namespace) the lock's own keys are refused.
  const std::string& prefix = options_.prefix;
  const etcdserverpb::RangeRequest lock = holder_read(name);
  const bool in_lock = lock.range_end().empty() ? write.key == lock.key()
                                                : write.key >= lock.key() && write.key < lock.range_end();
  const bool in_prefix = !prefix.empty() && write.key.compare(0, prefix.size(), prefix) == 0;
  if (in_lock || in_prefix || is_audit_key(write.key, prefix)) {
    throw UsageError("etcd guard: the key '" + write.key + "' is under the locks' prefix '" + prefix +
                     "' (or is " + std::string(name) + "'s own); write the application's keys elsewhere");
  }
}

std::int64_t EtcdService::commit_guarded(std::string_view name, const OwnerSecret& secret, std::int64_t fence,
                                         const std::vector<Write>& writes) {
  if (writes.empty()) throw UsageError("etcd guard: no writes to commit");
  etcdserverpb::TxnRequest txn;
  *txn.add_compare() = created_at(held_key(name, secret, fence), fence);
  for (const Write& write : writes) {
    check_guarded_write(name, write);
    if (write.value) {
      auto* put = txn.add_success()->mutable_request_put();
      put->set_key(write.key);
      put->set_value(*write.value);
    } else {
      txn.add_success()->mutable_request_delete_range()->set_key(write.key);
    }
  }
  const etcdserverpb::TxnResponse answer = client_.txn(txn, deadline(), "guarded write");
  if (!answer.succeeded()) {
    throw LeaseLostError("etcd: the key of '" + std::string(name) + "' made at fence " + std::to_string(fence) +
                         " is gone (released, evicted or its lease ended): nothing written");
  }
  return answer.header().revision();
}

std::int64_t commit_guarded(LockManager& manager, const Lease& lease, const std::vector<Write>& writes) {
  const std::string& name = lease.name();  // an empty handle: UsageError
  EtcdService& service = etcd_service_of(manager);
  const service::CallDeadlineScope call(lease.safe_until());
  return service.commit_guarded(name, lease.owner_secret(), lease.fence(), writes);
}

std::string held_key(LockManager& manager, const Lease& lease) {
  const std::string& name = lease.name();
  return etcd_service_of(manager).held_key(name, lease.owner_secret(), lease.fence());
}

}  // namespace dblock::etcd
