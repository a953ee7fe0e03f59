// The scheme registry (dblock/schemes.h): the services linked in register themselves, and a
// scheme registered by the application is opened like theirs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "dblock/dblock.h"
#include "dblock/schemes.h"
#include "dblock/service/url_params.h"
#include "memory_service.h"

namespace dblock::testing {
namespace {

bool listed(const std::string& scheme) {
  const std::vector<std::string> schemes = available_schemes();
  return std::find(schemes.begin(), schemes.end(), scheme) != schemes.end();
}

std::unique_ptr<LeaseService> make_memory_service(const Url& url, const std::string&) {
  service::UrlParams(url, "memory").finish();  // refuses every parameter, as the services do unknown ones
  static const auto store = std::make_shared<MemoryStore>();
  return std::make_unique<MemoryService>(store, MemoryService::Config{});
}

// What the last make_memory_service_in_context was given.
ServiceContext g_seen_context;

std::unique_ptr<LeaseService> make_memory_service_in_context(const Url& url, const ServiceContext& context) {
  g_seen_context = context;
  return make_memory_service(url, context.table_prefix);
}

TEST_CASE("schemes: every service this build links registers itself", "[unit][url]") {
  // DBLOCK_TEST_SERVICES: the backends CMake enabled. Each lives in a static archive whose
  // registration unit nothing refers to: the target's --undefined link option keeps it.
  std::istringstream services(DBLOCK_TEST_SERVICES);
  for (std::string service; services >> service;) {
    INFO(service);
    CHECK(listed(service));
  }
  try {
    dblock::open("ftp://h/x");
    FAIL("no error");
  } catch (const UsageError& e) {
    const std::string message = e.what();
    INFO(message);
    CHECK(message.find("unsupported URL scheme 'ftp' (this program can open: ") != std::string::npos);
    for (const std::string& scheme : available_schemes()) CHECK(message.find(scheme) != std::string::npos);
  }
}

TEST_CASE("schemes: a scheme the application registers is opened like a service's", "[unit][url]") {
  if (!listed("memory")) {
    CHECK(register_scheme({"memory", {"mem"}, &make_memory_service}));
  }
  CHECK(listed("memory"));
  CHECK(listed("mem"));
  CHECK(find_scheme("mem") == &make_memory_service);
  auto manager = dblock::open("mem://unit/x");
  auto lease = manager->try_acquire("schemes-test");
  REQUIRE(lease);
  CHECK(lease->release() == ReleaseResult::kReleased);
  CHECK_THROWS_WITH(dblock::open("memory://unit/x?bogus=1"), Catch::Contains("'bogus'"));

  // A name or alias taken stays with its first registration.
  CHECK_FALSE(register_scheme({"memory", {}, &make_memory_service}));
  CHECK_FALSE(register_scheme({"other", {"mem"}, &make_memory_service}));
  CHECK_FALSE(listed("other"));
  // Malformed entries are refused with a message naming what is wrong.
  CHECK_THROWS_WITH(register_scheme({"", {}, &make_memory_service}), Catch::Contains("scheme name ''"));
  CHECK_THROWS_WITH(register_scheme({"Mem", {}, &make_memory_service}), Catch::Contains("'Mem'"));
  CHECK_THROWS_WITH(register_scheme({"ok", {"no_underscore"}, &make_memory_service}), Catch::Contains("'no_underscore'"));
  CHECK_THROWS_WITH(register_scheme({"nofactory", {}, nullptr}), Catch::Contains("no factory"));
  CHECK_FALSE(listed("ok"));
  CHECK_FALSE(listed("nofactory"));
}

TEST_CASE("schemes: a factory is given what the manager knows at open: its table prefix and default TTL",
          "[unit][url]") {
  if (!listed("memctx")) {
    CHECK(register_scheme({"memctx", {}, &make_memory_service_in_context}));
  }
  CHECK(find_scheme("memctx") == SchemeFactory(&make_memory_service_in_context));
  CHECK_FALSE(find_scheme("never-registered"));
  ManagerOptions options;
  options.table_prefix = "ctx_";
  options.default_ttl = std::chrono::seconds(7);  // what `dblock run --ttl 7s` sets
  auto manager = dblock::open("memctx://unit/x", options);
  CHECK(g_seen_context.table_prefix == "ctx_");
  CHECK(g_seen_context.default_ttl == std::chrono::seconds(7));
  // A factory of the earlier form, given the prefix alone, is called as before.
  if (!listed("memory")) {
    CHECK(register_scheme({"memory", {"mem"}, &make_memory_service}));
  }
  options.table_prefix = "prefix_only_";
  CHECK(dblock::open("mem://unit/x", options)->try_acquire("schemes-context"));
}

TEST_CASE("schemes: namespace= on any URL is the manager's namespace, taken before the service sees the URL",
          "[unit][url]") {
  if (!listed("memctx")) {
    CHECK(register_scheme({"memctx", {}, &make_memory_service_in_context}));
  }
  // The service refuses every parameter it is given: it never sees namespace=.
  auto manager = dblock::open("memctx://unit/x?namespace=app_");
  CHECK(g_seen_context.table_prefix == "app_");
  ManagerOptions same;
  same.table_prefix = "app_";
  CHECK(dblock::open("memctx://unit/x?namespace=app_", same));
  ManagerOptions other;
  other.table_prefix = "other_";
  CHECK_THROWS_WITH(dblock::open("memctx://unit/x?namespace=app_", other), Catch::Contains("give one of them"));
  CHECK_THROWS_AS(dblock::open("memctx://unit/x?namespace=app_&namespace=b_"), UsageError);
  CHECK_THROWS_WITH(dblock::open("memctx://unit/x?namespace=App-1"), Catch::Contains("namespace"));
}

TEST_CASE("schemes: a scheme's URLs are read in the shape its service registered", "[unit][url]") {
  // A kFile scheme of the application's: no host, the path as written.
  if (!listed("memfile")) {
    CHECK(register_scheme({"memfile", {}, &make_memory_service, UrlShape::kFile}));
  }
  CHECK(scheme_url_shape("memfile") == UrlShape::kFile);
  CHECK(scheme_url_shape("never-registered") == UrlShape::kHosts);
  const Url relative = parse_url("memfile:dir/locks.db?x=1");
  CHECK(relative.hosts.empty());
  CHECK(relative.path == "dir/locks.db");
  CHECK(relative.redacted() == "memfile:dir/locks.db?x=1");
  const Url absolute = parse_url("memfile:///var/tmp/locks.db");
  CHECK(absolute.path == "/var/tmp/locks.db");
  CHECK(absolute.redacted() == "memfile:///var/tmp/locks.db");
  CHECK_THROWS_WITH(parse_url("memfile://host/x"), Catch::Contains("memfile:// must be followed by an absolute path"));
  CHECK_THROWS_WITH(parse_url("memfile:"), Catch::Contains("memfile URL has no file path"));
  // The same text under a kHosts scheme names a host.
  const Url hosts = parse_url("memhosts:///db");
  CHECK(hosts.hosts.empty());
  CHECK(hosts.path == "db");
  CHECK_THROWS_WITH(parse_url("memhosts:dir/locks.db"), Catch::Contains("expected 'memhosts://'"));
}

}  // namespace
}  // namespace dblock::testing
