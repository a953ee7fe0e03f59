// etcd's v3 API as the service uses it: the members' channels, the auth token, and every call
// bounded by a deadline. Internal.
//
// Thread safety: every method may be called from several threads at once (gRPC's channels and
// stubs are thread-safe; the current member and the token are guarded here).
#ifndef DBLOCK_SRC_BACKENDS_ETCD_CLIENT_H_
#define DBLOCK_SRC_BACKENDS_ETCD_CLIENT_H_

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dblock/etcd/etcd.h"
#include "dblock/service/thread_annotations.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

namespace dblock::etcd {

using SteadyClock = std::chrono::steady_clock;

// The longest a call may take where the engine set no deadline (admin calls, session locks).
inline constexpr std::chrono::milliseconds kLongestCall{30'000};
// How long clean-up in the background (sweeps, a lost lease's key, a revoke, closing) may take:
// on a stalled connection a manager closes within the engine's own bound and this.
inline constexpr std::chrono::milliseconds kBackgroundCall{1'000};
// A call's deadline: the engine's (call_deadline()), at most kLongestCall from now.
SteadyClock::time_point bounded_deadline();

class Client {
 public:
  // Reaches a member (and authenticates) by call_deadline(), at most connect_timeout from now.
  // Throws ConnectionError (no member answered as etcd), PermissionError (credentials refused).
  explicit Client(const Options& options);

  // Each call ends by `deadline` and throws what error_map.h says for a failure. A member that
  // could not be reached sends the next call to the next member.
  etcdserverpb::TxnResponse txn(const etcdserverpb::TxnRequest& request, SteadyClock::time_point deadline,
                                const char* what);
  etcdserverpb::RangeResponse range(const etcdserverpb::RangeRequest& request, SteadyClock::time_point deadline,
                                    const char* what);
  struct Granted {
    std::int64_t id = 0;
    std::chrono::seconds ttl{0};  // what etcd granted: whole seconds, at least what was asked
  };
  // A new lease of at least `ttl`.
  Granted grant(std::chrono::milliseconds ttl, SteadyClock::time_point deadline);
  // One keep-alive of `lease`: its TTL from now, or zero when the lease is gone.
  std::chrono::seconds keep_alive(std::int64_t lease, SteadyClock::time_point deadline);
  // Revokes `lease` (its keys are deleted with it). False when it was gone already.
  bool revoke(std::int64_t lease, SteadyClock::time_point deadline);
  // Blocks until `key` (or, with `range_end`, any key in [key, range_end)) is deleted at a
  // revision after `after`, or until `until`. True when a deletion (or a compaction that hides
  // one) was seen: a hint, the caller reads again.
  bool wait_deleted(const std::string& key, std::int64_t after, SteadyClock::time_point until,
                    const std::string& range_end = "");

 private:
  struct Member {
    std::string target;  // as gRPC names it
    std::shared_ptr<grpc::Channel> channel;
    std::unique_ptr<etcdserverpb::KV::Stub> kv;
    std::unique_ptr<etcdserverpb::Lease::Stub> lease;
    std::unique_ptr<etcdserverpb::Watch::Stub> watch;
    std::unique_ptr<etcdserverpb::Auth::Stub> auth;
  };
  // The member calls go to now, and a context for a call ending by `deadline` (with the token).
  Member& member();
  std::unique_ptr<grpc::ClientContext> context(SteadyClock::time_point deadline);
  // After a failed call on member `index`: an unreachable member hands on to the next one.
  void failed(std::size_t index, const grpc::Status& status);
  void authenticate(SteadyClock::time_point deadline);
  // Rethrows the ConnectionError being handled (the open's authentication or last probe) with
  // what TLS, or its absence, may have to do with it.
  [[noreturn]] void throw_unreached() const;
  // What a PermissionError says the user's role must grant.
  std::string needs() const;
  // Runs `call(member, context)`; a token etcd no longer accepts is renewed once and the call
  // repeated. Throws for a failure (what error_map.h says, naming `what`).
  template <class Call>
  void run(const char* what, SteadyClock::time_point deadline, Call&& call);

  const Options options_;
  std::vector<Member> members_;
  service::Mutex mutex_;
  std::size_t current_ DBLOCK_GUARDED_BY(mutex_) = 0;
  std::string token_ DBLOCK_GUARDED_BY(mutex_);
};

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_CLIENT_H_
