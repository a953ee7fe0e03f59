// Redlock: the conformance suite's context (what every build runs; Redlock's own cases, in
// redlock_test.cc, run in the plain build only).
#include <cstdlib>
#include <string>

#include "context.h"
#include "environment.h"
#include "raw_redis.h"

namespace dblock::testing {

namespace {

// What the first node keeps for `name` (Redlock has no line and no readers).
std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name) {
  if (table != "leases") return "";
  Raw raw(parse_url(context().url).hosts.at(0));
  return raw.text({"HGET", prefix + name, "owner"});
}

}  // namespace

const Context& context() {
  static Context ctx = [] {
    Context c;
    c.backend = "redlock";
    c.url = required_server_url("DBLOCK_TEST_REDLOCK_URL", "DBLOCK_TEST_SKIP_REDLOCK");
    c.shared_leases = false;
    c.over_tcp = true;  // a relay in front of every master (the stalled-connection cases)
    c.expects = {.fair_queue = false};
    c.accounts = false;
    c.stored_owner = stored_owner;
    c.digest = sha1_hex;
    c.restart = [] {
      const std::string line =
          env("DBLOCK_TEST_REDLOCK_SCRIPT") + " restart " + env("DBLOCK_TEST_REDLOCK_STATE") + " >/dev/null";
      REQUIRE(std::system(line.c_str()) == 0);
    };
    return c;
  }();
  return ctx;
}

}  // namespace dblock::testing
