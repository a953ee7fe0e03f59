// Key and channel names of the Redis service (scripts.h documents what each holds). Internal.
#ifndef DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_
#define DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_

#include <string>
#include <string_view>

namespace dblock::redis {

// The keys of one lock name: the lease itself ("<prefix>NAME", what single-key clients use with
// prefix "") and its companions, which share its cluster slot through the hash tag.
struct LockKeys {
  LockKeys(std::string_view prefix, std::string_view name)
      : lease(std::string(prefix).append(name)),
        fence(tagged(":fence")),
        queue(tagged(":q")),
        queue_info(tagged(":qi")) {}

  std::string lease, fence, queue, queue_info;
  // The key that records a release by the owner whose digest (lowercase hex SHA-1, as the scripts
  // store it) is `digest`.
  std::string latch(std::string_view digest) const { return tagged(":latch:") + std::string(digest); }

 private:
  std::string tagged(std::string_view suffix) const { return "{" + lease + "}" + std::string(suffix); }
};

// The force-release stream and the release channel of a prefix.
inline std::string audit_key(std::string_view prefix) { return "{" + std::string(prefix) + "}:audit"; }
inline std::string release_channel(std::string_view prefix) { return "{" + std::string(prefix) + "}:release"; }

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_
