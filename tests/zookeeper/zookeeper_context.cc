// ZooKeeper: the conformance suite's context (what every build runs; the ZooKeeper cases beside
// it, in zookeeper_test.cc and window_test.cc, run in the plain build only).
#include <chrono>
#include <string>
#include <vector>

#include "context.h"
#include "environment.h"
#include "paths.h"
#include "raw_zookeeper.h"

namespace dblock::testing {

namespace zk = dblock::zookeeper;

namespace {

std::string guid_hex(const std::string& child) {
  std::string out;
  for (char c : child.substr(3, 36)) {
    if (c != '-') out += c;
  }
  return out;
}

// The owner digest in the node of `name` that holds it (table "leases": a writer; "readers": a
// reader) or, for "waiters", of the first child that does not hold; "" when there is none.
std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name) {
  RawZk raw(context().url);
  std::vector<std::string> names = raw.children(root_for(prefix) + "/" + zk::escape_name(name));
  const std::vector<zk::Child> sorted = zk::sorted_children(zk::Layout::kReadWrite, names);
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (table == "waiters" && !zk::holds(sorted, i)) return guid_hex(sorted[i].name);
    if (table != "waiters" && zk::holds(sorted, i) && sorted[i].reader == (table == "readers")) {
      return guid_hex(sorted[i].name);
    }
  }
  return "";
}

}  // namespace

const Context& context() {
  static Context ctx = [] {
    // Standalone: restart the server; an ensemble: every node (zookeeper.sh restart without a port).
    const Url url = parse_url(required_server_url("DBLOCK_TEST_ZOOKEEPER_URL", "DBLOCK_TEST_SKIP_ZOOKEEPER"));
    const std::string port = url.hosts.size() == 1 ? std::to_string(url.hosts.at(0).port) : "";
    Context c = server_context("zookeeper", "DBLOCK_TEST_ZOOKEEPER_URL", "DBLOCK_TEST_SKIP_ZOOKEEPER",
                               "DBLOCK_TEST_ZOOKEEPER_SCRIPT", "DBLOCK_TEST_ZOOKEEPER_STATE", port);
    c.expects = {.session_locks = true, .hold_at_least = true};
    c.late_answers = false;  // the client drops a connection silent for 2/3 of the session first
    c.accounts = false;
    c.stored_owner = stored_owner;
    c.lease_bound = std::chrono::milliseconds(
        std::stoi(*parse_url(c.url).param("session_timeout")));  // the scripts' servers grant what is asked
    return c;
  }();
  return ctx;
}

}  // namespace dblock::testing
