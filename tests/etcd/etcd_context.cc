// etcd: the conformance suite's context (what every build runs; the etcd cases beside it, in
// etcd_test.cc and the files next to it, run in the plain build only).
#include <string>
#include <vector>

#include "context.h"
#include "etcd_support.h"

namespace dblock::testing {

namespace {

// The owner digest in the value of the contender of `name` that holds it ("leases", "readers": a
// reader holds from the front of the line) or of the first that waits ("waiters"); "" when there
// is none.
std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name) {
  const std::vector<std::string> values =
      etcdctl("get --prefix '" + prefix + name + "/' --sort-by=CREATE --order=ASCEND --print-value-only");
  const std::size_t at = table == "waiters" ? 1 : 0;
  if (values.size() <= at) return "";
  return values[at].substr(0, 32);  // "<digest> <holder>" or "<digest>/<permits> <holder>"
}

}  // namespace

const Context& context() {
  static Context ctx = [] {
    Context c = server_context("etcd", "DBLOCK_TEST_ETCD_URL", "DBLOCK_TEST_SKIP_ETCD", "DBLOCK_TEST_ETCD_SCRIPT",
                               "DBLOCK_TEST_ETCD_STATE");
    c.expects = {.session_locks = true, .multi_acquire = true, .hold_at_least = true};
    c.shared_leases = true;  // the etcd-mutex layout's readers and semaphores
    c.accounts = false;
    c.stored_owner = stored_owner;
    return c;
  }();
  return ctx;
}

}  // namespace dblock::testing
