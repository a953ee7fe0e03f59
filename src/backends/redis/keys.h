// Key and channel names of the Redis service (scripts.h documents what each holds). Internal.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_
#define DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_

#include <string>
#include <string_view>

#include "dblock/errors.h"
#include "error_map.h"

namespace dblock::redis {

// The keys of one lock name: the lease itself ("<prefix>NAME", what single-key clients use with
// prefix "") and its companions, which share its cluster slot through the hash tag.
struct LockKeys {
  // Throws UsageError for a name that could be another name's companion: with prefix "" the lease
  // key is the name itself, so it may not begin with '{'.
  LockKeys(std::string_view prefix, std::string_view name)
      : lease(checked(prefix, name)),
        fence(tagged(":fence")),
        queue(tagged(":q")),
        queue_info(tagged(":qi")) {}

  std::string lease, fence, queue, queue_info;
  // The key that records a release by the owner whose digest (lowercase hex SHA-1, as the scripts
  // store it) is `digest`.
  std::string latch(std::string_view digest) const { return tagged(":latch:") + std::string(digest); }

 private:
  static std::string checked(std::string_view prefix, std::string_view name) {
    if (prefix.empty() && !name.empty() && name.front() == '{') {
      throw UsageError("redis: with prefix \"\" a lock name may not begin with '{' (it could name another lock's "
                       "companion key)",
                       kServiceName);
    }
    return std::string(prefix).append(name);
  }
  std::string tagged(std::string_view suffix) const { return "{" + lease + "}" + std::string(suffix); }
};

// The force-release stream and the release channel of a prefix.
inline std::string audit_key(std::string_view prefix) { return "{" + std::string(prefix) + "}:audit"; }
inline std::string release_channel(std::string_view prefix) { return "{" + std::string(prefix) + "}:release"; }

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_
