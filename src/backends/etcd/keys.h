// Where the etcd-mutex layout keeps a lock (dblock/etcd/etcd.h). Internal; pure functions.
#ifndef DBLOCK_SRC_BACKENDS_ETCD_KEYS_H_
#define DBLOCK_SRC_BACKENDS_ETCD_KEYS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dblock::etcd {

// The key range of lock `name`: "<prefix><name>/", concurrency.Mutex's prefix for the name.
std::string lock_prefix(std::string_view prefix, std::string_view name);
// etcd's range_end for every key that begins with `prefix`: the prefix with its last byte that is
// not 0xff incremented (and what follows it dropped); "\0", every key, for "" or all 0xff.
std::string range_end(std::string_view prefix);
// A contender's key in `lock_prefix`: its lease id in lowercase hex, as concurrency.Mutex writes it.
std::string contender_key(std::string_view lock_prefix, std::int64_t lease);
// The lock name of a contender's key "<prefix><name>/<suffix>" under `prefix` (suffix: up to 33 of
// [0-9a-f-], concurrency.Mutex's lease id, or dblock's lease id and slot); nullopt for any other key.
std::optional<std::string> lock_name_of(std::string_view key, std::string_view prefix);
// Throws UsageError for a prefix etcd's keys cannot carry safely: over 128 bytes, a control
// character, or a non-empty one that does not end in a separator (one of : _ - . /).
void validate_prefix(std::string_view prefix);

}  // namespace dblock::etcd

#endif  // DBLOCK_SRC_BACKENDS_ETCD_KEYS_H_
