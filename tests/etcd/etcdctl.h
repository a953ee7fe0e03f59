// Debian's etcdctl against the member (or the first member) the tests' URL names: the etcd cases
// check what dblock wrote, and hold locks as a foreign client, with etcd's own tool.
#ifndef DBLOCK_TESTS_ETCD_ETCDCTL_H_
#define DBLOCK_TESTS_ETCD_ETCDCTL_H_

#include <string>
#include <vector>

namespace dblock::testing {

// "host:port" of the first member of context().url.
std::string endpoint();
// Every line etcdctl prints for `args` (run through the shell: the arguments are the tests' own).
std::vector<std::string> etcdctl(const std::string& args);

}  // namespace dblock::testing

#endif  // DBLOCK_TESTS_ETCD_ETCDCTL_H_
