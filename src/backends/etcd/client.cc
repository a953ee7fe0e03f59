#include "client.h"

#include <algorithm>
#include <thread>

#include "dblock/errors.h"
#include "dblock/service/call_deadline.h"
#include "error_map.h"
#include "keys.h"
#include "tls.h"

namespace dblock::etcd {

namespace {

// The pause between two rounds of an open's first read over the members.
constexpr std::chrono::milliseconds kProbePause{100};

// gRPC's name of a member: an IP literal as is, a host name through its resolver.
std::string target_of(const Options::Endpoint& endpoint) {
  const bool v6 = endpoint.host.find(':') != std::string::npos;
  const std::string address = (v6 ? "[" + endpoint.host + "]" : endpoint.host) + ":" + std::to_string(endpoint.port);
  const bool literal = v6 || std::all_of(endpoint.host.begin(), endpoint.host.end(),
                                         [](char c) { return (c >= '0' && c <= '9') || c == '.'; });
  return literal ? (v6 ? "ipv6:" : "ipv4:") + address : "dns:///" + address;
}

// A member that did not answer, or answered without a leader: the next call goes to the next one.
bool unreachable(const grpc::Status& status) {
  return status.error_code() == grpc::StatusCode::UNAVAILABLE ||
         status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED;
}

// etcd's answer to a token it no longer knows (it restarted, or the token's TTL passed), or one
// issued before the auth store last changed (a user or role edited since).
bool token_refused(const grpc::Status& status) {
  return status.error_message().find("invalid auth token") != std::string::npos ||
         status.error_message().find("revision of auth store is old") != std::string::npos;
}

}  // namespace

SteadyClock::time_point bounded_deadline() { return std::min(call_deadline(), SteadyClock::now() + kLongestCall); }

Client::Client(const Options& options) : options_(options) {
  grpc::ChannelArguments args;
  // A member that went away is noticed within a few seconds rather than at the OS's TCP timeout.
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 10'000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 5'000);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1'000);
  const std::shared_ptr<grpc::ChannelCredentials> credentials = channel_credentials(options_.tls);
  for (const Options::Endpoint& endpoint : options_.endpoints) {
    Member m;
    m.target = target_of(endpoint);
    m.channel = grpc::CreateCustomChannel(m.target, credentials, args);
    m.kv = etcdserverpb::KV::NewStub(m.channel);
    m.lease = etcdserverpb::Lease::NewStub(m.channel);
    m.watch = etcdserverpb::Watch::NewStub(m.channel);
    m.auth = etcdserverpb::Auth::NewStub(m.channel);
    members_.push_back(std::move(m));
  }
  const SteadyClock::time_point deadline = std::min(call_deadline(), SteadyClock::now() + options_.connect_timeout);
  if (!options_.user.empty()) {
    try {
      authenticate(deadline);
    } catch (const ConnectionError&) {
      throw_unreached();
    }
  }
  // A first read: the endpoint is etcd, and this user may read the lock keys' range.
  etcdserverpb::RangeRequest probe;
  probe.set_key(options_.prefix.empty() ? std::string(1, '\0') : options_.prefix);
  probe.set_range_end(range_end(options_.prefix));
  probe.set_count_only(true);
  // Each member of a round gets its share of what is left, so that a blackholed first one leaves
  // time for the others; a round that reached none is tried again after kProbePause until the
  // deadline (a first connection can fail at once on a loaded host: "handshaker shutdown").
  for (std::size_t tried = 0;; ++tried) {
    const std::size_t in_round = tried % members_.size();
    const auto share = (deadline - SteadyClock::now()) / static_cast<int>(members_.size() - in_round);
    try {
      range(probe, std::min(deadline, SteadyClock::now() + share), "connect");
      return;
    } catch (const ConnectionError&) {
      if (SteadyClock::now() + kProbePause >= deadline) throw_unreached();
      if (in_round + 1 == members_.size()) std::this_thread::sleep_for(kProbePause);
    }
  }
}

void Client::throw_unreached() const {
  try {
    throw;
  } catch (const ConnectionError& e) {
    // gRPC says only that the connection failed; a TLS mismatch looks the same.
    const char* hint = options_.tls.enabled
                           ? " (over TLS: a member must serve TLS with a certificate that cacert's CAs signed, for "
                             "the host as the URL names it, and accept cert's client certificate if it asks for one)"
                           : " (a member that serves TLS needs tls=1 or cacert=, cert=, key=)";
    throw ConnectionError(e.what() + std::string(hint), e.backend(), e.sqlstate(), e.retryable());
  }
}

Client::Member& Client::member() {
  service::MutexLock lock(mutex_);
  return members_[current_];
}

std::unique_ptr<grpc::ClientContext> Client::context(SteadyClock::time_point deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  // Deadlines are on the steady clock; gRPC takes the system clock's.
  const auto left = std::max(deadline - SteadyClock::now(), SteadyClock::duration::zero());
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
  // A member cut off from the leader answers at once (UNAVAILABLE, "no leader") instead of
  // serving stale reads or holding watches that never fire.
  ctx->AddMetadata("hasleader", "true");
  service::MutexLock lock(mutex_);
  if (!token_.empty()) ctx->AddMetadata("token", token_);
  return ctx;
}

void Client::failed(std::size_t index, const grpc::Status& status) {
  if (!unreachable(status) || members_.size() < 2) return;
  service::MutexLock lock(mutex_);
  if (current_ == index) current_ = (current_ + 1) % members_.size();
}

void Client::authenticate(SteadyClock::time_point deadline) {
  etcdserverpb::AuthenticateRequest request;
  request.set_name(options_.user);
  request.set_password(options_.password);
  etcdserverpb::AuthenticateResponse response;
  grpc::Status status;
  for (std::size_t tried = 0; tried < members_.size(); ++tried) {
    std::size_t index;
    {
      service::MutexLock lock(mutex_);
      index = current_;
    }
    auto ctx = std::make_unique<grpc::ClientContext>();
    const auto left = std::max(deadline - SteadyClock::now(), SteadyClock::duration::zero());
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(left));
    status = members_[index].auth->Authenticate(ctx.get(), request, &response);
    if (status.ok()) {
      service::MutexLock lock(mutex_);
      token_ = response.token();
      return;
    }
    failed(index, status);
    if (!unreachable(status)) break;
  }
  check(status, "authenticate as '" + options_.user + "'");
}

template <class Call>
void Client::run(const char* what, SteadyClock::time_point deadline, Call&& call) {
  for (int attempt = 0;; ++attempt) {
    std::size_t index;
    {
      service::MutexLock lock(mutex_);
      index = current_;
    }
    auto ctx = context(deadline);
    const grpc::Status status = call(members_[index], *ctx);
    if (status.ok()) return;
    failed(index, status);
    if (attempt == 0 && token_refused(status) && !options_.user.empty()) {
      authenticate(deadline);
      continue;
    }
    check(status, what, needs());
  }
}

std::string Client::needs() const {
  const std::string keys = options_.prefix.empty() ? "every key" : "the keys under '" + options_.prefix + "'";
  return "user '" + options_.user + "' needs readwrite on " + keys +
         " (etcdctl role grant-permission --prefix=true ROLE readwrite '" + options_.prefix + "')";
}

etcdserverpb::TxnResponse Client::txn(const etcdserverpb::TxnRequest& request, SteadyClock::time_point deadline,
                                      const char* what) {
  etcdserverpb::TxnResponse response;
  run(what, deadline, [&](Member& m, grpc::ClientContext& ctx) { return m.kv->Txn(&ctx, request, &response); });
  return response;
}

etcdserverpb::RangeResponse Client::range(const etcdserverpb::RangeRequest& request, SteadyClock::time_point deadline,
                                          const char* what) {
  etcdserverpb::RangeResponse response;
  run(what, deadline, [&](Member& m, grpc::ClientContext& ctx) { return m.kv->Range(&ctx, request, &response); });
  return response;
}

Client::Granted Client::grant(std::chrono::milliseconds ttl, SteadyClock::time_point deadline) {
  etcdserverpb::LeaseGrantRequest request;
  request.set_ttl(std::max<std::int64_t>(1, std::chrono::ceil<std::chrono::seconds>(ttl).count()));
  etcdserverpb::LeaseGrantResponse response;
  run("lease grant", deadline,
      [&](Member& m, grpc::ClientContext& ctx) { return m.lease->LeaseGrant(&ctx, request, &response); });
  if (!response.error().empty()) throw Error("etcd: lease grant: " + response.error(), kServiceName);
  return Granted{response.id(), std::chrono::seconds(response.ttl())};
}

std::chrono::seconds Client::keep_alive(std::int64_t lease, SteadyClock::time_point deadline) {
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseKeepAliveResponse response;
  run("lease keep-alive", deadline, [&](Member& m, grpc::ClientContext& ctx) {
    auto stream = m.lease->LeaseKeepAlive(&ctx);
    if (stream->Write(request)) {
      stream->WritesDone();
      if (!stream->Read(&response)) response.Clear();
    }
    return stream->Finish();
  });
  return std::chrono::seconds(std::max<std::int64_t>(response.ttl(), 0));
}

bool Client::revoke(std::int64_t lease, SteadyClock::time_point deadline) {
  etcdserverpb::LeaseRevokeRequest request;
  request.set_id(lease);
  etcdserverpb::LeaseRevokeResponse response;
  bool gone = false;
  run("lease revoke", deadline, [&](Member& m, grpc::ClientContext& ctx) {
    const grpc::Status status = m.lease->LeaseRevoke(&ctx, request, &response);
    gone = is_lease_not_found(status);
    return gone ? grpc::Status::OK : status;
  });
  return !gone;
}

bool Client::wait_deleted(const std::string& key, std::int64_t after, SteadyClock::time_point until,
                          const std::string& range_end) {
  Member& m = member();
  auto ctx = context(until);
  auto stream = m.watch->Watch(ctx.get());
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(key);
  if (!range_end.empty()) create->set_range_end(range_end);
  create->set_start_revision(after + 1);
  create->add_filters(etcdserverpb::WatchCreateRequest::NOPUT);
  bool deleted = false;
  if (stream->Write(request)) {
    etcdserverpb::WatchResponse response;
    while (!deleted && stream->Read(&response)) {
      // Canceled: the revision was compacted away (the key may be gone meanwhile), or the watch
      // was refused: look again either way.
      if (response.canceled() || response.compact_revision() != 0) deleted = true;
      for (const mvccpb::Event& event : response.events()) {
        if (event.type() == mvccpb::Event::DELETE) deleted = true;
      }
    }
  }
  ctx->TryCancel();
  stream->Finish();
  return deleted;
}

}  // namespace dblock::etcd
