// The scripts' calls and replies (scripts.h), built and read in one place for Redis and Redlock:
// a call is a struct whose fields are the script's ARGV by name, a reply a struct read from the
// script's array by field, so no service file reads a reply by position or lists ARGV by hand.
// Internal. Plain values; thread-compatible.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_SCRIPT_CALLS_H_
#define DBLOCK_SRC_BACKENDS_REDIS_SCRIPT_CALLS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service/lease_service.h"
#include "keys.h"
#include "reply.h"

namespace dblock::redis {

// The acquire script's KEYS: the lease, its fence, the waiters' line and its entries.
std::vector<std::string> acquire_keys(const LockKeys& k);

// kAcquire's ARGV.
struct AcquireCall {
  const OwnerSecret* secret = nullptr;
  std::string_view holder;
  std::chrono::milliseconds ttl{0};
  LockMode mode = LockMode::kExclusive;
  std::int64_t ticket = 0;                // the waiter's place (0: none)
  bool queue = false;                     // join or refresh the line when refused
  std::chrono::milliseconds hold_for{0};  // the line entry's life
  int permits = 0;                        // a semaphore's N (0: none)

  // The call of `request`, in line or not.
  static AcquireCall of(const AcquireRequest& request);
  std::vector<std::string> argv() const;
};

// kAcquire's reply.
struct AcquireReply {
  enum class Outcome { kRefused, kAcquired, kPermitsDiffer };
  Outcome outcome = Outcome::kRefused;
  std::int64_t fence = 0;          // kAcquired
  std::int64_t expires_at_us = 0;  // kAcquired: the server's clock
  std::int64_t held_permits = 0;   // kPermitsDiffer: what live readers hold (0: plain readers)
  std::chrono::milliseconds holder_remaining{-1};  // kRefused: -1 unknown
  std::int64_t ticket = 0;                          // kRefused in line
  int position = -1;                                // kRefused in line: waiters ahead

  // Throws Error for a reply of another shape (the script is not this library's).
  static AcquireReply read(const ReplyView& reply);
};

// kAcquireAll's reply: every lease taken (a fence and an expiry per request, in order), none, or
// the request whose live readers hold other permits.
struct AcquireAllReply {
  enum class Outcome { kRefused, kAcquired, kPermitsDiffer };
  Outcome outcome = Outcome::kRefused;
  struct Taken {
    std::int64_t fence = 0;
    std::int64_t expires_at_us = 0;
  };
  std::vector<Taken> taken;        // kAcquired: one per request
  std::size_t differing = 0;       // kPermitsDiffer: the request's index
  std::int64_t held_permits = 0;   // kPermitsDiffer

  // `requests`: how many the call made. Throws Error for a reply of another shape.
  static AcquireAllReply read(const ReplyView& reply, std::size_t requests);
};

// kRenew's reply.
struct RenewReply {
  bool renewed = false;
  bool not_held = false;           // the script found no lease of this secret (a lost key)
  std::int64_t expires_at_us = 0;  // renewed
  std::int64_t fence = 0;          // renewed: the lease's fence on this node

  static RenewReply read(const ReplyView& reply);
};

// kConfirm's reply: the grant this secret holds, if any.
struct ConfirmReply {
  bool held = false;
  std::int64_t fence = 0;
  std::int64_t expires_at_us = 0;
  std::chrono::microseconds granted_for{0};

  static ConfirmReply read(const ReplyView& reply);
};

// kPosition's reply.
struct PositionReply {
  int ahead = 0;                                   // live waiters ahead
  std::chrono::milliseconds holder_remaining{-1};  // -1: unknown

  static PositionReply read(const ReplyView& reply);
};

// kDescribe's reply: the server's time, then one entry per lock key asked about. Text fields view
// into the reply (valid while it lives).
struct DescribeReply {
  struct Entry {
    static constexpr std::int64_t kLease = 1;       // a dblock lease
    static constexpr std::int64_t kForeign = 2;     // another client's string
    static constexpr std::int64_t kNotALock = 3;    // a key that is no lock
    static constexpr std::int64_t kUnreadable = 4;  // a dblock lease that cannot be read (holder: why)
    std::int64_t kind = 0;
    std::string_view mode;  // "s": shared
    std::string_view holder;
    std::int64_t fence = 0;
    std::int64_t acquired_at_us = 0;
    std::int64_t expires_at_us = 0;  // 0: none
    std::int64_t renewals = 0;
    int holders = 0;
    int permits = 0;
    int waiters = -1;  // -1: unknown
  };
  std::int64_t now_us = 0;
  std::vector<Entry> entries;

  // `keys`: how many the call asked about. Throws Error for a reply of another length.
  static DescribeReply read(const ReplyView& reply, std::size_t keys);
};

// The status a script's reply starts with (its first element, or the reply itself when it is a
// plain integer): what Redlock counts across nodes. nullopt for an error or another shape.
std::optional<std::int64_t> status_of(const ReplyView& reply);

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_SCRIPT_CALLS_H_
