#include "requests.h"

#include <openssl/sha.h>

#include <algorithm>

#include "keys.h"

namespace dblock::etcd {

namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string hex(const unsigned char* bytes, std::size_t n) {
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    out += kHex[bytes[i] >> 4];
    out += kHex[bytes[i] & 15];
  }
  return out;
}

bool printable(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7F; });
}

}  // namespace

void whole_prefix(etcdserverpb::RangeRequest& r, const std::string& prefix) {
  r.set_key(prefix.empty() ? std::string(1, '\0') : prefix);  // "\0" to "\0": every key
  r.set_range_end(range_end(prefix));
}

etcdserverpb::RangeRequest first_by_creation(const std::string& prefix, etcdserverpb::RangeRequest::SortOrder order) {
  etcdserverpb::RangeRequest r;
  whole_prefix(r, prefix);
  r.set_sort_target(etcdserverpb::RangeRequest::CREATE);
  r.set_sort_order(order);
  r.set_limit(1);
  return r;
}

etcdserverpb::Compare created_at(const std::string& key, std::int64_t revision) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::CREATE);
  c.set_result(etcdserverpb::Compare::EQUAL);
  c.set_create_revision(revision);
  return c;
}

etcdserverpb::Compare leased_by(const std::string& key, std::int64_t lease) {
  etcdserverpb::Compare c;
  c.set_key(key);
  c.set_target(etcdserverpb::Compare::LEASE);
  c.set_result(etcdserverpb::Compare::EQUAL);
  c.set_lease(lease);
  return c;
}

std::string contender_value(const OwnerSecret& secret, std::string_view holder, LockMode mode, int permits) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(secret.bytes.data(), secret.bytes.size(), digest);
  std::string out = hex(digest, 16);
  if (mode == LockMode::kShared) out += "/" + std::to_string(permits);
  out += ' ';
  out += holder;
  return out;
}

namespace {

constexpr std::string_view kWindowTag = "dblock-window ";

}  // namespace

std::string window_value(std::string_view holder) { return std::string(kWindowTag) + std::string(holder); }

bool is_window_value(const std::string& value) { return value.rfind(kWindowTag, 0) == 0; }

ContenderView view_of(const std::string& value) {
  ContenderView view;
  if (is_window_value(value)) {
    view.dblock = true;
    view.holder = value.substr(kWindowTag.size()) + " (a scheduled job's window)";
    return view;
  }
  const std::size_t space = value.find(' ');
  if (space != std::string::npos && space >= 32 && value.find_first_not_of(kHex) == 32 &&
      (space == 32 || (value[32] == '/' && space > 33))) {
    const std::string permits = value.substr(33, space > 33 ? space - 33 : 0);
    if (space == 32 || (permits.size() <= 6 && permits.find_first_not_of("0123456789") == std::string::npos)) {
      view.dblock = true;
      view.shared = space > 32;
      view.permits = view.shared ? std::stoi(permits) : 0;
      view.holder = value.substr(space + 1);
      return view;
    }
  }
  if (value.empty()) {
    view.holder = "(a concurrency.Mutex client: etcdctl lock, or another)";
  } else if (value.size() == 16 && !printable(value)) {
    view.holder = "(python-etcd3 or another client: " + hex(reinterpret_cast<const unsigned char*>(value.data()), 16) + ")";
  } else {
    view.holder = "(another client: " +
                  (printable(value) ? value : hex(reinterpret_cast<const unsigned char*>(value.data()), value.size())) + ")";
  }
  return view;
}

std::string holder_of(const std::string& value) { return view_of(value).holder; }

}  // namespace dblock::etcd
