// Redis: the conformance suite's context (what every build runs; the Redis cases beside it, in
// redis_test.cc, run in the plain build only).
#include <string>

#include "context.h"
#include "environment.h"
#include "raw_redis.h"

namespace dblock::testing {

namespace {

// What the service keeps for `name` in "leases" (the hash's owner), "readers" (a reader's field)
// or "waiters" (the line's first member).
std::string stored_owner(const std::string& prefix, const std::string& table, const std::string& name) {
  Raw raw(context().url);
  const std::string key = prefix + name;
  if (table == "leases") return raw.text({"HGET", key, "owner"});
  if (table == "readers") {
    for (const std::string& field : raw.list({"HKEYS", key})) {
      if (field.rfind("r:", 0) == 0) return field.substr(2);
    }
    return "";
  }
  const auto first = raw.list({"ZRANGE", "{" + key + "}:q", "0", "0"});
  return first.empty() ? "" : first[0];
}

}  // namespace

const Context& context() {
  static Context ctx = [] {
    // Restarts touch the main server only (the spare is the cases' own).
    const std::string port =
        std::to_string(parse_url(required_server_url("DBLOCK_TEST_REDIS_URL", "DBLOCK_TEST_SKIP_REDIS")).hosts.at(0).port);
    Context c = server_context("redis", "DBLOCK_TEST_REDIS_URL", "DBLOCK_TEST_SKIP_REDIS", "DBLOCK_TEST_REDIS_SCRIPT",
                               "DBLOCK_TEST_REDIS_STATE", port);
    c.expects = {.multi_acquire = true, .hold_at_least = true};
    c.accounts = false;
    c.stored_owner = stored_owner;
    c.digest = sha1_hex;
    return c;
  }();
  return ctx;
}

}  // namespace dblock::testing
