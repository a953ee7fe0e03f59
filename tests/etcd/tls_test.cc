// etcd over TLS ([tls]): a member that serves clients over TLS only and asks for a client
// certificate (scripts/servers/etcd.sh start-tls, its test CA and certificates in
// DBLOCK_TEST_ETCD_TLS_DIR); the suite's URL names the CA, the certificate and its key.
#include <catch2/catch.hpp>

#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "context.h"
#include "etcd_support.h"

namespace dblock::testing {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;

std::string tls_dir() {
  const char* dir = std::getenv("DBLOCK_TEST_ETCD_TLS_DIR");
  REQUIRE(dir != nullptr);
  return dir;
}

// The member's URL with `params` (the TLS ones given here, nothing of the suite's URL), its keys
// under `prefix`.
std::string url_with(const std::string& params, const std::string& prefix = unique_prefix()) {
  return "etcd://" + endpoint() + "?connect_timeout=1&prefix=" + prefix + (params.empty() ? "" : "&" + params);
}

std::string client_files() {
  return "cert=" + tls_dir() + "/client.pem&key=" + tls_dir() + "/client-key.pem";
}

// What opening `url` throws as ConnectionError, within a bound of the connect timeout.
std::string connect_failure(const std::string& url) {
  const auto start = SteadyClock::now();
  try {
    dblock::open(url);
  } catch (const ConnectionError& e) {
    CHECK(SteadyClock::now() - start < 5s);
    return e.what();
  }
  FAIL("opened " << url);
  return "";
}

}  // namespace

TEST_CASE("etcd tls: with the CA and a client certificate a lease is taken and released over TLS", "[etcd][tls]") {
  const std::string prefix = unique_prefix();
  auto locks = dblock::open(url_with("cacert=" + tls_dir() + "/ca.pem&" + client_files(), prefix));
  AcquireOptions options;
  options.ttl = 2s;
  std::optional<Lease> lease = locks->try_acquire("tls-job", options);
  REQUIRE(lease);
  // The key is there, for etcdctl with the same certificates.
  const std::string flags =
      " --cacert " + tls_dir() + "/ca.pem --cert " + tls_dir() + "/client.pem --key " + tls_dir() + "/client-key.pem";
  const std::vector<std::string> keys = etcdctl("get --prefix '" + prefix + "tls-job/' --keys-only" + flags);
  REQUIRE_FALSE(keys.empty());
  CHECK(keys.front().rfind(prefix + "tls-job/", 0) == 0);
  CHECK(locks->inspect("tls-job").has_value());
  CHECK(lease->release() == ReleaseResult::kReleased);
  CHECK_FALSE(locks->inspect("tls-job").has_value());
}

TEST_CASE("etcd tls: without the client certificate, with another CA or without TLS the open fails by its "
          "connect timeout",
          "[etcd][tls]") {
  CHECK_THAT(connect_failure(url_with("cacert=" + tls_dir() + "/ca.pem")), Catch::Contains("over TLS"));
  CHECK_THAT(connect_failure(url_with("cacert=" + tls_dir() + "/other-ca.pem&" + client_files())),
             Catch::Contains("over TLS"));
  CHECK_THAT(connect_failure(url_with("")), Catch::Contains("needs tls=1 or cacert="));
}

TEST_CASE("etcd tls: unreadable or non-PEM files and half a client certificate are usage errors naming the "
          "parameter, never the key",
          "[etcd][tls][input]") {
  const auto usage = [](const std::string& url) {
    try {
      dblock::open(url);
    } catch (const UsageError& e) {
      return std::string(e.what());
    }
    FAIL("no UsageError for " << url);
    return std::string();
  };
  CHECK_THAT(usage(url_with("cacert=/nonexistent/ca.pem")), Catch::Contains("cacert") && Catch::Contains("/nonexistent/ca.pem"));
  CHECK_THAT(usage(url_with("cacert=" + tls_dir() + "/server.ext")), Catch::Contains("holds no PEM"));
  CHECK_THAT(usage(url_with("cert=" + tls_dir() + "/client.pem")), Catch::Contains("both"));
  CHECK_THAT(usage(url_with("tls=0&cacert=" + tls_dir() + "/ca.pem")), Catch::Contains("tls=0"));
  CHECK_THAT(usage(url_with("tls=maybe")), Catch::Contains("tls"));
  // A key file that is not a key is refused by gRPC when it connects; its content is never printed.
  const std::string failure = connect_failure(url_with("cacert=" + tls_dir() + "/ca.pem&cert=" + tls_dir() +
                                                        "/client.pem&key=" + tls_dir() + "/other-ca.pem"));
  CHECK_THAT(failure, !Catch::Contains("BEGIN"));
}

}  // namespace dblock::testing
