// Where the ZooKeeper service keeps a lock: path validation, name escaping, node names as Curator
// writes them, and reading them back. Pure functions; thread-safe.
#ifndef DBLOCK_SRC_BACKENDS_ZOOKEEPER_PATHS_H_
#define DBLOCK_SRC_BACKENDS_ZOOKEEPER_PATHS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/errors.h"
#include "dblock/options.h"
#include "dblock/service/lease_service.h"
#include "dblock/zookeeper/zookeeper.h"

namespace dblock::zookeeper {

inline constexpr const char* kServiceName = "zookeeper";

// Throws UsageError naming `option` unless `path` is an absolute ZooKeeper path: "/" followed by
// non-empty segments, none "." or "..", no control or reserved characters, no trailing "/"
// ("/" alone is accepted).
void validate_path(std::string_view path, std::string_view option);

// The base the options give (Options::base, or the one derived from `table_prefix`).
std::string base_path(const Options& options, const std::string& table_prefix);

// A lock name as one path segment that round-trips: '%', '/', U+E000-U+F8FF, U+FFF0-U+FFFF and
// every code point above U+FFFF (the server, in Java, sees those as surrogates, which it refuses)
// percent-encoded byte by byte; "." and ".." as "%2E" and "%2E%2E".
std::string escape_name(std::string_view name);
// The inverse; nullopt when `segment` is no escaped name (not ours).
std::optional<std::string> unescape_name(std::string_view segment);

// The owner digest (first 128 bits of SHA-256 of the secret) as a lowercase 8-4-4-4-12 UUID.
std::string guid_of(const OwnerSecret& secret);

// The lock-name part of a child ("__WRIT__", "__READ__" or "lock-") for `mode` in `layout`.
std::string_view lock_name(Layout layout, LockMode mode);
// "_c_<guid>-<lock name>": what the server appends the 10-digit sequence to. A permit of a
// semaphore of `permits` (> 0, shared mode) is "_c_<guid>-p<permits>-__READ__": a reader to every
// client (Curator's read-write lock included), its N readable from its name alone.
std::string node_prefix(const std::string& guid, Layout layout, LockMode mode, int permits = 0);
// The full child name of a sequence.
std::string node_name(const std::string& guid, Layout layout, LockMode mode, std::uint32_t sequence,
                      int permits = 0);

// A dblock node's data: "dblock:" + the holder string. Data without that tag is another client's
// (Curator writes the client's IP address).
std::string node_data(std::string_view holder);
// The holder string in a dblock node's data; nullopt for another client's node.
std::optional<std::string> holder_in(std::string_view data);
// How a holder is shown (list, inspect, the audit record): a dblock node's holder string, another
// client's as "foreign <child name>" and its data in parentheses when it has any.
std::string shown_holder(std::string_view data, std::string_view child);

// A scheduled job's window (window.h): a persistent child of the lock's container that no client
// takes for a lock node. It sorts after every sequence number, so Curator's recipes, which sort
// it among their nodes, never wait for it.
inline constexpr std::string_view kWindowNode = "window.dblock";

// Whether a container's children (`names`) include a window.
bool has_window(const std::vector<std::string>& names);

// The layout of the Curator recipe that `layout`'s does not share a lock with: InterProcessMutex
// ("lock-" nodes) for kReadWrite, InterProcessReadWriteLock ("__READ__"/"__WRIT__") for
// kCuratorMutex. Each recipe sorts the other's nodes after all of its own and so never waits for
// them: on one path the two recipes' holders hold at once.
Layout other_layout(Layout layout);
// Whether the child `name` of a lock container is a node of other_layout(layout)'s recipe: its
// lock name followed by a 10-digit sequence at the end.
bool other_recipe(Layout layout, std::string_view name);
// The first child among `names` that is other_recipe(layout, ...), if any.
std::optional<std::string> other_recipe_child(Layout layout, const std::vector<std::string>& names);
// What refuses an acquisition of `name` beside `child`, a node of the other recipe: a UsageError
// that names the node and the layout= that pairs with that recipe.
UsageError recipe_mismatch(Layout layout, std::string_view name, std::string_view child);

// One child of a lock container as Curator sees it.
struct Child {
  std::string name;
  std::string sort_key;     // Curator's fixForSorting: the text after the lock name, else the name
  bool writer = false;      // holds exclusively when first ("__WRIT__", or "lock-" in curator-mutex)
  bool reader = false;      // "__READ__" (rw layout only)
  int permits = 0;          // a reader's semaphore N ("-p<N>-__READ__"), else 0
  std::uint32_t sequence = 0;
};
// The lock nodes among `names` (kWindowNode left out), sorted as Curator sorts them.
std::vector<Child> sorted_children(Layout layout, std::vector<std::string> names);
// Whether the child at `index` holds: a writer when first, a reader when no writer precedes it
// and, for a permit of N, fewer than N readers do.
bool holds(const std::vector<Child>& children, std::size_t index);
// The readers that hold, other than the one at `index`, granted under other permits than it asks
// for: the permits of the first such (0: plain readers), or nullopt when there is none.
std::optional<int> permits_conflict(const std::vector<Child>& sorted, std::size_t index);
// The holding readers ahead of the permit at `index` that waits for one of them to leave.
std::vector<std::size_t> permit_holders_ahead(const std::vector<Child>& sorted, std::size_t index);
// The child the one at `index` waits for when it does not hold: a writer the one just ahead, a
// reader the nearest writer ahead.
std::optional<std::size_t> awaited(const std::vector<Child>& sorted, std::size_t index);
// Where the child `name` is in `sorted`.
std::optional<std::size_t> index_of(const std::vector<Child>& sorted, const std::string& name);

}  // namespace dblock::zookeeper

#endif  // DBLOCK_SRC_BACKENDS_ZOOKEEPER_PATHS_H_
