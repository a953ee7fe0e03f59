#include "script_calls.h"

#include "dblock/errors.h"
#include "error_map.h"
#include "node.h"

namespace dblock::redis {
namespace {

std::string us(std::chrono::milliseconds d) { return std::to_string(d.count() * 1000); }

[[noreturn]] void malformed(const char* script) {
  throw Error(std::string("redis: the ") + script + " script answered in a shape this library does not know",
              kServiceName);
}

}  // namespace

std::vector<std::string> acquire_keys(const LockKeys& k) { return {k.lease, k.fence, k.queue, k.queue_info}; }

AcquireCall AcquireCall::of(const AcquireRequest& request) {
  AcquireCall call;
  call.secret = request.secret;
  call.holder = request.holder;
  call.ttl = request.ttl;
  call.mode = request.mode;
  call.permits = request.permits;
  return call;
}

std::vector<std::string> AcquireCall::argv() const {
  return {std::string(secret_bytes(*secret)), std::string(holder), us(ttl), std::string(mode_arg(mode)),
          std::to_string(ticket), queue ? "1" : "0", us(hold_for), std::to_string(permits)};
}

AcquireReply AcquireReply::read(const ReplyView& r) {
  if (r.size() < 2) malformed("acquire");
  AcquireReply out;
  switch (r[0].integer(-1)) {
    case 1:
      if (r.size() < 3) malformed("acquire");
      out.outcome = Outcome::kAcquired;
      out.fence = r[1].integer();
      out.expires_at_us = r[2].integer();
      return out;
    case 2:
      out.outcome = Outcome::kPermitsDiffer;
      out.held_permits = r[1].integer();
      return out;
    case 0:
      out.holder_remaining = std::chrono::milliseconds(r[1].integer(-1));
      if (r.size() >= 4) {
        out.ticket = r[2].integer();
        out.position = static_cast<int>(r[3].integer());
      }
      return out;
    default:
      malformed("acquire");
  }
}

AcquireAllReply AcquireAllReply::read(const ReplyView& r, std::size_t requests) {
  AcquireAllReply out;
  if (r.size() == 0) return out;
  switch (r[0].integer()) {
    case 1:
      if (r.size() != 1 + 2 * requests) malformed("acquire-all");
      out.outcome = Outcome::kAcquired;
      for (std::size_t i = 0; i < requests; ++i) out.taken.push_back({r[1 + 2 * i].integer(), r[2 + 2 * i].integer()});
      return out;
    case 2:
      if (r.size() < 3 || r[1].integer() < 1) malformed("acquire-all");
      out.outcome = Outcome::kPermitsDiffer;
      out.differing = static_cast<std::size_t>(r[1].integer()) - 1;
      out.held_permits = r[2].integer();
      return out;
    default:
      return out;
  }
}

RenewReply RenewReply::read(const ReplyView& r) {
  RenewReply out;
  if (r.size() == 0) malformed("renew");
  out.renewed = r[0].integer() == 1;
  out.not_held = r[0].integer() == 0;
  if (out.renewed) {
    if (r.size() < 2) malformed("renew");
    out.expires_at_us = r[1].integer();
    if (r.size() >= 3) out.fence = r[2].integer();
  }
  return out;
}

ConfirmReply ConfirmReply::read(const ReplyView& r) {
  ConfirmReply out;
  if (r.size() < 3) return out;
  out.held = true;
  out.fence = r[0].integer();
  out.expires_at_us = r[1].integer();
  out.granted_for = std::chrono::microseconds(r[2].integer());
  return out;
}

PositionReply PositionReply::read(const ReplyView& r) {
  if (r.size() < 2) malformed("position");
  return PositionReply{static_cast<int>(r[0].integer()), std::chrono::milliseconds(r[1].integer(-1))};
}

DescribeReply DescribeReply::read(const ReplyView& r, std::size_t keys) {
  constexpr std::size_t kFields = 10;  // kind, mode, holder, fence, acq, exp, ren, holders, permits, waiters
  if (r.size() != 1 + keys * kFields) malformed("describe");
  DescribeReply out;
  out.now_us = r[0].integer();
  for (std::size_t i = 0; i < keys; ++i) {
    const std::size_t at = 1 + i * kFields;
    Entry& e = out.entries.emplace_back();
    e.kind = r[at].integer();
    e.mode = r[at + 1].text();
    e.holder = r[at + 2].text();
    e.fence = r[at + 3].integer();
    e.acquired_at_us = r[at + 4].integer();
    e.expires_at_us = r[at + 5].integer();
    e.renewals = r[at + 6].integer();
    e.holders = static_cast<int>(r[at + 7].integer());
    e.permits = static_cast<int>(r[at + 8].integer());
    e.waiters = static_cast<int>(r[at + 9].integer(-1));
  }
  return out;
}

std::optional<std::int64_t> status_of(const ReplyView& r) {
  if (r.is_error()) return std::nullopt;
  if (!r.is_array()) return r.integer();
  if (r.size() == 0) return std::nullopt;
  return r[0].integer();
}

}  // namespace dblock::redis
