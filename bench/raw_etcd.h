// bench/raw_etcd.h — the etcd floor of etcd_bench: etcd's v3 API called directly through the gRPC
// stubs generated from Debian's rpc.proto (the code dblock's backend is built with), one channel,
// synchronous calls, each bounded by a deadline; and the two lock recipes written by hand:
//
//   RawEtcdKeyLock  the pair floor: one key per lock name, created if absent and bound to a lease
//                   granted once and kept alive by the floor itself (python-etcd3's Lock with one
//                   lease for all its acquisitions): acquire = one Txn "create_revision(key) == 0 ?
//                   put(key, token, lease) : get(key)", release = one DeleteRange. 2 round trips.
//   RawEtcdMutex    the hand-off floor, concurrency.Mutex's recipe as Debian's etcd 3.4 writes it
//                   (clientv3/concurrency/mutex.go): one lease per process, granted once; the key
//                   "<lock prefix><lease hex>", put if absent in a Txn that also reads the first key
//                   by create revision; the first holds. A waiter reads the key just ahead of its own
//                   (max_create_revision = own - 1, newest first, limit 1), watches it from the
//                   read's revision + 1 until its DELETE, and reads again. Release deletes the key.
//                   The fence is the own key's create revision.
//
// Nothing here uses dblock beyond its URL parser. Header-only, one translation unit. A RawEtcd is
// used by one thread at a time (gRPC's own threads carry the calls).
//
// gRPC does not survive fork(): a process that made a channel must not fork and then use gRPC in
// the child. etcd_bench makes every RawEtcd of its parent process after its last fork.
#ifndef DBLOCK_BENCH_RAW_ETCD_H_
#define DBLOCK_BENCH_RAW_ETCD_H_

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>

#include "bench_util.h"
#include "dblock/url.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace dblock_bench {

// Every call of the floor ends within this (a benchmark's server answers; a lost one fails the run).
inline constexpr std::chrono::seconds kRawCallTimeout{10};
// The floors' leases: long enough to outlast a figure, kept alive every kRawKeepAliveEvery anyway.
inline constexpr std::chrono::seconds kRawLeaseTtl{60};
inline constexpr std::chrono::seconds kRawKeepAliveEvery{5};

// gRPC's name of the first member of an etcd:// URL (port 2379 when absent): an IP literal as is,
// a host name through the DNS resolver.
inline std::string etcd_target(const std::string& url) {
  const dblock::Url u = dblock::parse_url(url);
  if (u.scheme != "etcd" || u.hosts.empty()) throw std::runtime_error("not an etcd:// URL: " + u.redacted());
  const dblock::Url::Host& h = u.hosts.front();
  const std::string port = std::to_string(h.port != 0 ? h.port : 2379);
  if (h.host.find(':') != std::string::npos) return "ipv6:[" + h.host + "]:" + port;
  const bool literal = h.host.find_first_not_of("0123456789.") == std::string::npos;
  return (literal ? "ipv4:" : "dns:///") + h.host + ":" + port;
}

// The range_end that makes a Range or DeleteRange cover every key beginning with `prefix`
// (a non-empty prefix whose last byte is not 0xff, which is all this file needs).
inline std::string prefix_end(std::string prefix) {
  prefix.back() = static_cast<char>(prefix.back() + 1);
  return prefix;
}

// One gRPC channel to one etcd member and the stubs the recipes need.
class RawEtcd {
 public:
  explicit RawEtcd(const std::string& url)
      : channel_(grpc::CreateChannel(etcd_target(url), grpc::InsecureChannelCredentials())),
        kv_(etcdserverpb::KV::NewStub(channel_)),
        lease_(etcdserverpb::Lease::NewStub(channel_)),
        watch_(etcdserverpb::Watch::NewStub(channel_)),
        maintenance_(etcdserverpb::Maintenance::NewStub(channel_)) {
    // Connect now, so that no measured call pays for it.
    if (!channel_->WaitForConnected(std::chrono::system_clock::now() + kRawCallTimeout)) {
      throw std::runtime_error("etcd: no connection within 10 s: " + url);
    }
  }
  RawEtcd(const RawEtcd&) = delete;
  RawEtcd& operator=(const RawEtcd&) = delete;

  etcdserverpb::TxnResponse txn(const etcdserverpb::TxnRequest& request) {
    etcdserverpb::TxnResponse response;
    call("txn", [&](grpc::ClientContext& ctx) { return kv_->Txn(&ctx, request, &response); });
    return response;
  }
  etcdserverpb::RangeResponse range(const etcdserverpb::RangeRequest& request) {
    etcdserverpb::RangeResponse response;
    call("range", [&](grpc::ClientContext& ctx) { return kv_->Range(&ctx, request, &response); });
    return response;
  }
  // Deletes `key` (with `range_end`, the range [key, range_end)); how many keys went.
  std::int64_t remove(const std::string& key, const std::string& range_end = "") {
    etcdserverpb::DeleteRangeRequest request;
    request.set_key(key);
    request.set_range_end(range_end);
    etcdserverpb::DeleteRangeResponse response;
    call("delete", [&](grpc::ClientContext& ctx) { return kv_->DeleteRange(&ctx, request, &response); });
    return response.deleted();
  }
  std::int64_t remove_prefix(const std::string& prefix) { return remove(prefix, prefix_end(prefix)); }

  // A new lease of `ttl`; its id.
  std::int64_t grant(std::chrono::seconds ttl) {
    etcdserverpb::LeaseGrantRequest request;
    request.set_ttl(ttl.count());
    etcdserverpb::LeaseGrantResponse response;
    call("lease grant", [&](grpc::ClientContext& ctx) { return lease_->LeaseGrant(&ctx, request, &response); });
    if (!response.error().empty()) throw std::runtime_error("etcd lease grant: " + response.error());
    return response.id();
  }
  // One keep-alive of `lease` on a stream of its own; throws when the lease is gone.
  void keep_alive(std::int64_t lease) {
    etcdserverpb::LeaseKeepAliveRequest request;
    request.set_id(lease);
    etcdserverpb::LeaseKeepAliveResponse response;
    call("lease keep-alive", [&](grpc::ClientContext& ctx) {
      auto stream = lease_->LeaseKeepAlive(&ctx);
      if (stream->Write(request)) {
        stream->WritesDone();
        if (!stream->Read(&response)) response.Clear();
      }
      return stream->Finish();
    });
    if (response.ttl() <= 0) throw std::runtime_error(format("etcd: lease %llx is gone", static_cast<unsigned long long>(lease)));
  }
  void revoke(std::int64_t lease) {
    etcdserverpb::LeaseRevokeRequest request;
    request.set_id(lease);
    etcdserverpb::LeaseRevokeResponse response;
    call("lease revoke", [&](grpc::ClientContext& ctx) { return lease_->LeaseRevoke(&ctx, request, &response); });
  }

  // Watches `key` from revision `after` + 1 until it is deleted (true) or `until` passes (false).
  // A watch etcd cancels (its start revision compacted away) also returns true: look again.
  bool wait_deleted(const std::string& key, std::int64_t after, Clock::time_point until) {
    grpc::ClientContext ctx;
    ctx.set_deadline(system_deadline(until));
    auto stream = watch_->Watch(&ctx);
    etcdserverpb::WatchRequest request;
    etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
    create->set_key(key);
    create->set_start_revision(after + 1);
    bool deleted = false;
    if (stream->Write(request)) {
      etcdserverpb::WatchResponse response;
      while (!deleted && stream->Read(&response)) {
        if (response.canceled() || response.compact_revision() != 0) deleted = true;
        for (const mvccpb::Event& event : response.events()) {
          if (event.type() == mvccpb::Event::DELETE) deleted = true;
        }
      }
    }
    if (deleted) ctx.TryCancel();  // done with the stream: no round trip to close it
    const grpc::Status status = stream->Finish();
    if (deleted || status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return deleted;
    fail("watch", status);
  }

  // The member's etcd version (Maintenance.Status).
  std::string server_version() {
    etcdserverpb::StatusRequest request;
    etcdserverpb::StatusResponse response;
    call("status", [&](grpc::ClientContext& ctx) { return maintenance_->Status(&ctx, request, &response); });
    return response.version();
  }

 private:
  static std::chrono::system_clock::time_point system_deadline(Clock::time_point until) {
    // gRPC takes deadlines on the system clock.
    const auto left = std::max(until - Clock::now(), Clock::duration::zero());
    return std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(left);
  }

  [[noreturn]] static void fail(const char* what, const grpc::Status& status) {
    throw std::runtime_error(format("etcd %s: %s (gRPC status %d)", what, status.error_message().c_str(),
                                    static_cast<int>(status.error_code())));
  }

  // Runs `rpc(context)` with a context ending kRawCallTimeout from now; throws when it fails.
  template <class Rpc>
  void call(const char* what, Rpc&& rpc) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + kRawCallTimeout);
    const grpc::Status status = rpc(ctx);
    if (!status.ok()) fail(what, status);
  }

  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<etcdserverpb::KV::Stub> kv_;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease_;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch_;
  std::unique_ptr<etcdserverpb::Maintenance::Stub> maintenance_;
};

// A compare "create_revision(key) == revision" (0: the key does not exist).
inline etcdserverpb::Compare raw_created_at(const std::string& key, std::int64_t revision) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::CREATE);
  c.set_result(etcdserverpb::Compare::EQUAL);
  c.set_create_revision(revision);
  return c;
}

// Keeps `lease` alive when kRawKeepAliveEvery has passed since the last time. Called by the floors
// between their timed calls, never inside one.
class RawKeepAlive {
 public:
  void due(RawEtcd& etcd, std::int64_t lease) {
    if (Clock::now() - last_ < kRawKeepAliveEvery) return;
    etcd.keep_alive(lease);
    last_ = Clock::now();
  }

 private:
  Clock::time_point last_ = Clock::now();
};

// The pair floor: key "<prefix><name>", put if absent with the one lease, deleted to release.
// `lease_each` (a diagnostic) grants a lease per acquisition and revokes it after the delete (each
// acquisition then has a TTL of its own): 4 round trips instead of 2.
class RawEtcdKeyLock {
 public:
  RawEtcdKeyLock(RawEtcd& etcd, std::string prefix, bool lease_each = false)
      : etcd_(etcd), prefix_(std::move(prefix)), lease_each_(lease_each) {
    // A 16-byte owner token (as python-etcd3's uuid4), made once.
    std::random_device random;
    for (int i = 0; i < 4; ++i) {
      const unsigned word = random();
      token_.append(reinterpret_cast<const char*>(&word), sizeof word);
    }
    if (!lease_each_) lease_ = etcd_.grant(kRawLeaseTtl);
  }
  ~RawEtcdKeyLock() {
    if (lease_ == 0) return;
    try {
      etcd_.revoke(lease_);
    } catch (const std::exception&) {
      // It ends by its TTL.
    }
  }
  RawEtcdKeyLock(const RawEtcdKeyLock&) = delete;
  RawEtcdKeyLock& operator=(const RawEtcdKeyLock&) = delete;

  // Keeps the shared lease alive when due: call it outside the timed calls.
  void keep_alive_if_due() {
    if (!lease_each_) keep_alive_.due(etcd_, lease_);
  }

  // One try; the key's create revision (the fence) when taken, 0 when another holds it.
  std::int64_t acquire(const std::string& name) {
    if (lease_each_) lease_ = etcd_.grant(kRawLeaseTtl);
    const std::string key = prefix_ + name;
    etcdserverpb::TxnRequest request;
    *request.add_compare() = raw_created_at(key, 0);
    etcdserverpb::PutRequest* put = request.add_success()->mutable_request_put();
    put->set_key(key);
    put->set_value(token_);
    put->set_lease(lease_);
    request.add_failure()->mutable_request_range()->set_key(key);
    const etcdserverpb::TxnResponse r = etcd_.txn(request);
    if (r.succeeded()) return r.header().revision();
    if (lease_each_) {
      etcd_.revoke(lease_);
      lease_ = 0;
    }
    return 0;
  }
  // Deletes the key; false when it was not there.
  bool release(const std::string& name) {
    const bool deleted = etcd_.remove(prefix_ + name) == 1;
    if (lease_each_) {
      etcd_.revoke(lease_);
      lease_ = 0;
    }
    return deleted;
  }

 private:
  RawEtcd& etcd_;
  const std::string prefix_;
  const bool lease_each_;
  std::string token_;
  std::int64_t lease_ = 0;
  RawKeepAlive keep_alive_;
};

// concurrency.Mutex's recipe on the lock prefix `lock_prefix` (ending in '/'), one lease per
// instance (granted by the constructor, revoked by the destructor).
class RawEtcdMutex {
 public:
  RawEtcdMutex(RawEtcd& etcd, std::string lock_prefix) : etcd_(etcd), prefix_(std::move(lock_prefix)) {
    lease_ = etcd_.grant(kRawLeaseTtl);
    char hex[24];
    std::snprintf(hex, sizeof hex, "%llx", static_cast<unsigned long long>(lease_));
    key_ = prefix_ + hex;
  }
  ~RawEtcdMutex() {
    try {
      etcd_.revoke(lease_);  // deletes the key too, if it is still there
    } catch (const std::exception&) {
      // It ends by its TTL.
    }
  }
  RawEtcdMutex(const RawEtcdMutex&) = delete;
  RawEtcdMutex& operator=(const RawEtcdMutex&) = delete;

  // Takes the lock, waiting up to `wait` (0: try once); the own key's create revision (the fence),
  // or nullopt when not held by then (the own key is deleted again).
  std::optional<std::int64_t> acquire(std::chrono::milliseconds wait) {
    const Clock::time_point until = Clock::now() + wait;
    // One round trip when uncontended: put the own key if absent (else read it: an earlier
    // attempt's) and read the first key by create revision.
    etcdserverpb::TxnRequest request;
    *request.add_compare() = raw_created_at(key_, 0);
    etcdserverpb::PutRequest* put = request.add_success()->mutable_request_put();
    put->set_key(key_);
    put->set_lease(lease_);
    request.add_failure()->mutable_request_range()->set_key(key_);
    for (auto* ops : {request.mutable_success(), request.mutable_failure()}) {
      *ops->Add()->mutable_request_range() = by_creation(etcdserverpb::RangeRequest::ASCEND);
    }
    const etcdserverpb::TxnResponse r = etcd_.txn(request);
    std::int64_t own = r.header().revision();
    if (!r.succeeded()) {
      const auto& mine = r.responses(0).response_range();
      if (mine.kvs_size() == 0) throw std::runtime_error("etcd: own lock key vanished: " + key_);
      own = mine.kvs(0).create_revision();
    }
    const auto& first = r.responses(1).response_range();
    if (first.kvs_size() == 0 || first.kvs(0).create_revision() == own) return own;
    if (wait.count() <= 0) {
      etcd_.remove(key_);
      return std::nullopt;
    }
    // Wait until no key created before the own one is left: watch the newest of them until it goes.
    etcdserverpb::RangeRequest ahead = by_creation(etcdserverpb::RangeRequest::DESCEND);
    ahead.set_max_create_revision(own - 1);
    for (;;) {
      const etcdserverpb::RangeResponse a = etcd_.range(ahead);
      if (a.kvs_size() == 0) return own;
      if (!etcd_.wait_deleted(a.kvs(0).key(), a.header().revision(), until)) {
        etcd_.remove(key_);
        return std::nullopt;
      }
    }
  }

  // Deletes the own key (false when it was gone), then keeps the lease alive when due (after the
  // delete: the next holder does not wait for it).
  bool release() {
    const bool deleted = etcd_.remove(key_) == 1;
    keep_alive_.due(etcd_, lease_);
    return deleted;
  }

 private:
  // The first (ASCEND) or last (DESCEND) key of the lock prefix by create revision.
  etcdserverpb::RangeRequest by_creation(etcdserverpb::RangeRequest::SortOrder order) const {
    etcdserverpb::RangeRequest r;
    r.set_key(prefix_);
    r.set_range_end(prefix_end(prefix_));
    r.set_sort_target(etcdserverpb::RangeRequest::CREATE);
    r.set_sort_order(order);
    r.set_limit(1);
    return r;
  }

  RawEtcd& etcd_;
  const std::string prefix_;
  std::int64_t lease_ = 0;
  std::string key_;
  RawKeepAlive keep_alive_;
};

}  // namespace dblock_bench

#endif  // DBLOCK_BENCH_RAW_ETCD_H_
