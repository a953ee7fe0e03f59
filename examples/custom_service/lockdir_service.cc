#include "lockdir_service.h"

#include <openssl/evp.h>

#include <algorithm>
#include <optional>
#include <vector>

#include "state_file.h"

namespace lockdir {
namespace {

using namespace std::chrono;

// What the state keeps of a secret: the first 128 bits of its SHA-256, as hex.
std::string digest(const dblock::OwnerSecret& secret) {
  unsigned char sum[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(secret.bytes.data(), secret.bytes.size(), sum, &length, EVP_sha256(), nullptr) != 1) {
    throw dblock::Error(std::string(kServiceName) + ": SHA-256 failed", kServiceName);
  }
  return hex(std::string_view(reinterpret_cast<const char*>(sum), 16));
}

std::int64_t us(milliseconds d) { return duration_cast<microseconds>(d).count(); }

class LockDirService final : public dblock::LeaseService {
 public:
  LockDirService(const std::filesystem::path& dir, const std::string& prefix) : state_(dir, prefix) {}

  std::string_view name() const override { return kServiceName; }
  // Exclusive leases on a TTL; nothing optional.
  dblock::ServiceTraits traits() const override { return {}; }

  dblock::AcquireResult try_acquire(const dblock::AcquireRequest& request) override {
    const std::string owner = digest(*request.secret);
    dblock::AcquireResult result;
    state_.transact([&](State& state, std::int64_t now) {
      Entry& e = state.entries[std::string(request.name)];
      if (e.live(now) && e.owner != owner) {
        result.holder_remaining = duration_cast<milliseconds>(microseconds(e.expires_us - now));
        return false;
      }
      // Free, expired, or this secret's own (a retried attempt): a new holding, a new fence.
      e = Entry{state.next_fence(), owner, std::string(request.holder), now, now + us(request.ttl), 0};
      result.acquired = true;
      result.fence = e.fence;
      result.expires_at_us = e.expires_us;
      return true;
    });
    return result;
  }

  dblock::RenewResult renew(const dblock::LeaseKey& lease, milliseconds ttl) override {
    const std::string owner = digest(*lease.secret);
    dblock::RenewResult result;
    state_.transact([&](State& state, std::int64_t now) {
      auto it = state.entries.find(std::string(lease.name));
      if (it == state.entries.end() || !it->second.live(now) || it->second.owner != owner) return false;
      it->second.expires_us = now + us(ttl);
      ++it->second.renewals;
      result.renewed = true;
      result.expires_at_us = it->second.expires_us;
      return true;
    });
    return result;
  }

  bool release(const dblock::LeaseKey& lease) override { return drop(lease, /*live_only=*/true); }

  void lease_lost(const dblock::LeaseKey& lease) noexcept override {
    try {
      drop(lease, /*live_only=*/false);
    } catch (...) {
      // Best effort: the entry ends by its expiry anyway.
    }
  }

  bool force_release(std::string_view name, std::string_view) override {
    bool freed = false;
    state_.transact([&](State& state, std::int64_t now) {
      auto it = state.entries.find(std::string(name));
      if (it == state.entries.end() || !it->second.live(now)) return false;
      it->second.owner.clear();
      it->second.fence = state.next_fence();  // the evicted holder's fence is behind every later one
      freed = true;
      return true;
    });
    return freed;
  }

  std::vector<dblock::LeaseInfo> list(std::optional<std::string_view> name) override {
    std::vector<dblock::LeaseInfo> out;
    state_.transact([&](State& state, std::int64_t now) {
      for (const auto& [key, e] : state.entries) {
        if (!e.live(now) || (name && key != *name)) continue;
        dblock::LeaseInfo info;
        info.name = key;
        info.holder = e.holder;
        info.fence = e.fence;
        info.acquired_at_us = e.acquired_us;
        info.expires_at_us = e.expires_us;
        info.expires_in_us = e.expires_us - now;
        info.renewals = e.renewals;
        out.push_back(std::move(info));
      }
      return false;
    });
    return out;
  }

 private:
  // Compare-and-delete of this owner's entry: true when it was held live by the owner.
  bool drop(const dblock::LeaseKey& lease, bool live_only) {
    const std::string owner = digest(*lease.secret);
    bool dropped = false;
    state_.transact([&](State& state, std::int64_t now) {
      auto it = state.entries.find(std::string(lease.name));
      if (it == state.entries.end() || it->second.owner != owner) return false;
      dropped = it->second.live(now);
      if (live_only && !dropped) return false;
      it->second.owner.clear();
      return true;
    });
    return dropped;
  }

  const StateFile state_;
};

std::unique_ptr<dblock::LeaseService> from_url(const dblock::Url& url, const dblock::ServiceContext& context) {
  dblock::service::UrlParams params(url, kServiceName);
  params.finish();  // lockdir takes no parameters: any given is a UsageError naming it
  if (url.path.empty()) throw dblock::UsageError("lockdir: the URL names no directory (lockdir:///path)", kServiceName);
  return make_service(url.path, context.table_prefix);
}

}  // namespace

std::unique_ptr<dblock::LeaseService> make_service(const std::filesystem::path& dir, const std::string& prefix) {
  dblock::service::validate_table_prefix(prefix);
  return std::make_unique<LockDirService>(dir, prefix);
}

bool register_scheme() {
  return dblock::register_scheme(dblock::SchemeEntry{"lockdir", {}, &from_url, dblock::UrlShape::kFile});
}

}  // namespace lockdir
