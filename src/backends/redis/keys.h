// Key and channel names of the Redis service (scripts.h documents what each holds). Internal.
//
// The lease of NAME is the key P..NAME (P the prefix; with P "" exactly the key single-key
// clients such as redis-py's Lock use). Its companions (fence counter, line, latch) hash to the
// same Redis Cluster slot as the lease key, by the cluster's hash-tag rule (a key's slot is that of
// the text between its first '{' and the first '}' after it, when that text is not empty; else of
// the whole key):
//   - a lease key without '}' (most names): "{" + lease + "}" + suffix, the names dblock always
//     used (the tag is the whole lease key, which is the key's own hash);
//   - a lease key with '}' and a hash tag T: "{" + T + "}" + suffix + ":" + lease (the tag first,
//     then the whole lease key, so two names with one tag never share a companion);
//   - a lease key with '}' and no hash tag ("a}b", "x{}y"): refused (UsageError), as no key with
//     a tag can have that key's slot.
// Suffixes are ":fence", ":q", ":qi" and ":latch:" + digest. No companion is a lease key (lease
// keys never begin with '{': P has no braces and, with P "", a name may not begin with one), and
// the two forms never meet (after "{T}" the first comes to ":fence", ":q", ":qi" or ":latch:" + 40
// hex digits and ends there; the second always goes on with ":" + lease).
#ifndef DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_
#define DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_

#include <string>
#include <string_view>

#include "dblock/errors.h"
#include "error_map.h"

namespace dblock::redis {

// What Redis Cluster hashes of `key` to find its slot: its hash tag, else the whole key.
inline std::string_view hash_tag(std::string_view key) {
  const std::size_t open = key.find('{');
  if (open == std::string_view::npos) return key;
  const std::size_t close = key.find('}', open + 1);
  if (close == std::string_view::npos || close == open + 1) return key;
  return key.substr(open + 1, close - open - 1);
}

// The keys of one lock name: the lease itself and its companions, in the lease key's slot.
struct LockKeys {
  // Throws UsageError for a name that could be another name's companion (with prefix "" the lease
  // key is the name itself, so it may not begin with '{') and for a name whose lease key has a
  // '}' outside a hash tag (no companion could share its slot).
  LockKeys(std::string_view prefix, std::string_view name) : LockKeys(prefix, name, true) {}

  // For listing what is stored: never throws for a name LockKeys(prefix, name) refuses; such a
  // key gets the companions of the first form, which dblock used for every name before.
  static LockKeys listed(std::string_view prefix, std::string_view name) { return LockKeys(prefix, name, false); }

  std::string lease, fence, queue, queue_info;
  // The key that records a release by the owner whose digest (lowercase hex SHA-1, as the scripts
  // store it) is `digest`.
  std::string latch(std::string_view digest) const { return companion(":latch:" + std::string(digest)); }

 private:
  LockKeys(std::string_view prefix, std::string_view name, bool strict)
      : lease(std::string(prefix).append(name)) {
    if (strict && prefix.empty() && !name.empty() && name.front() == '{') {
      throw UsageError("redis: with prefix \"\" a lock name may not begin with '{' (it could name another lock's "
                       "companion key)",
                       kServiceName);
    }
    if (lease.find('}') != std::string::npos) {
      const std::string_view tag = hash_tag(lease);
      if (tag.size() != lease.size()) {
        tag_ = "{" + std::string(tag) + "}";
      } else if (strict) {
        throw UsageError("redis: the lock name has a '}' outside a hash tag (Redis Cluster hashes a key by the text "
                         "between its first '{' and the next '}', when there is any): its companion keys could not "
                         "share its slot; use a name without '}', or one with a tag such as 'orders{eu}/7'",
                         kServiceName);
      }
    }
    fence = companion(":fence");
    queue = companion(":q");
    queue_info = companion(":qi");
  }
  std::string companion(const std::string& suffix) const {
    if (tag_.empty()) return "{" + lease + "}" + suffix;
    return tag_ + suffix + ":" + lease;
  }

  std::string tag_;  // "{T}" for a lease key with '}' and a hash tag T; else empty
};

// The force-release stream and the release channel of a prefix.
inline std::string audit_key(std::string_view prefix) { return "{" + std::string(prefix) + "}:audit"; }
inline std::string release_channel(std::string_view prefix) { return "{" + std::string(prefix) + "}:release"; }

}  // namespace dblock::redis

#endif  // DBLOCK_SRC_BACKENDS_REDIS_KEYS_H_
