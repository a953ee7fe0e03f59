// Redis error replies into the dblock::Error tree. Internal.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_ERROR_MAP_H_
#define DBLOCK_SRC_BACKENDS_REDIS_ERROR_MAP_H_

#include <string>
#include <string_view>

#include "reply.h"

namespace dblock::redis {

inline constexpr const char* kServiceName = "redis";

// Throws the dblock::Error for an error reply (`what` names the command); returns other replies.
//   NOAUTH, WRONGPASS            ConnectionError (credentials)
//   NOPERM, and a script's       PermissionError (an ACL forbids a command, key or channel; the
//     "ERR The user executing      open-time check, listing.h check_permissions, names which)
//     the script can't ..."
//   LOADING, BUSY, TRYAGAIN, OOM ConnectionError, retryable (OOM: maxmemory reached under
//                                noeviction: writes fail until memory is freed)
//   READONLY, MASTERDOWN         UsageError (a replica)
//   DBLOCK ...                   UsageError (a script refused: a key that is not a lock, a lease
//                                that cannot be read, a fence counter at its end)
//   anything else                Error
const ReplyView& check_reply(const ReplyView& reply, const std::string& what);
inline Reply check_reply(Reply reply, const std::string& what) {
  check_reply(static_cast<const ReplyView&>(reply), what);
  return reply;
}

// The error reply's first word ("NOSCRIPT", "NOPERM", ...).
std::string_view error_code(const ReplyView& reply);

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_ERROR_MAP_H_
