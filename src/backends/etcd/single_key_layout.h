// The python-etcd3 layout (dblock/etcd/etcd.h), the one python-etcd3's Lock uses: the lock NAME is
// the one key "<prefix>NAME", created if absent by a transaction and bound to the holder's lease.
// Internal.
//
// Capabilities: NativeWait (a watch for the key's deletion; every waiter wakes, the next
// transaction decides). No line: python-etcd3's waiters keep none either.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_SINGLE_KEY_LAYOUT_H_
#define DBLOCK_SRC_BACKENDS_ETCD_SINGLE_KEY_LAYOUT_H_

#include <string>
#include <vector>

#include "dblock/service/capabilities.h"
#include "etcd_service.h"

namespace dblock::etcd {

class SingleKeyLayout final : public EtcdService, public NativeWait {
 public:
  explicit SingleKeyLayout(const Options& options) : EtcdService(options) {}

  AcquireResult try_acquire(const AcquireRequest& request) override;
  // Every key under the prefix is a lock held by its writer, foreign holders included.
  std::vector<LeaseInfo> list(std::optional<std::string_view> name) override;

  NativeWait* native_wait() noexcept override { return this; }
  Turn wait_for_turn(std::string_view name, const OwnerSecret& secret, std::int64_t ticket,
                     std::chrono::milliseconds max_wait) override;

 private:
  std::string key_for(std::string_view name, std::int64_t lease, int slot) const override;
  etcdserverpb::RangeRequest holder_read(std::string_view name) const override;
  bool is_key_of(std::string_view name, const std::string& key) const override;
  // python-etcd3's waiters wake on any event and grant a lease each time: renewals only read.
  bool touch_on_renew() const override { return false; }
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_SINGLE_KEY_LAYOUT_H_
