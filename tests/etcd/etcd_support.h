// What the etcd cases share: Debian's etcdctl against the member (or the first member) the
// tests' URL names (the cases check what dblock wrote, and hold locks as a foreign client, with
// etcd's own tool), and the managers and options they open and acquire with.
#ifndef DBLOCK_TESTS_ETCD_ETCD_SUPPORT_H_
#define DBLOCK_TESTS_ETCD_ETCD_SUPPORT_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "dblock/dblock.h"

namespace dblock::testing {

// "host:port" of the first member of context().url.
std::string endpoint();
// Every line etcdctl prints for `args` (run through the shell: the arguments are the tests' own).
std::vector<std::string> etcdctl(const std::string& args);
// A manager on `url` whose namespace is `prefix` ("": the default).
std::unique_ptr<LockManager> open_on(const std::string& url, const std::string& prefix = "");
// Acquire options with TTL `t`.
AcquireOptions ttl(std::chrono::milliseconds t);

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_ETCD_ETCD_SUPPORT_H_
