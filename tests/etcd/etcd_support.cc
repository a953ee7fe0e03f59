#include "etcd_support.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <memory>

#include "context.h"
#include "dblock/url.h"

namespace dblock::testing {

std::string endpoint() {
  const Url url = parse_url(context().url);
  return url.hosts.at(0).host + ":" + std::to_string(url.hosts.at(0).port);
}

std::vector<std::string> etcdctl(const std::string& args) {
  const std::string command = "etcdctl --endpoints " + endpoint() + " " + args + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> out(::popen(command.c_str(), "r"), &::pclose);
  REQUIRE(out != nullptr);
  std::vector<std::string> lines;
  char buf[4096];
  while (std::fgets(buf, sizeof(buf), out.get()) != nullptr) {
    std::string line(buf);
    if (!line.empty() && line.back() == '\n') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::unique_ptr<LockManager> open_on(const std::string& url, const std::string& prefix) {
  ManagerOptions options;
  if (!prefix.empty()) options.table_prefix = prefix;
  return dblock::open(url, options);
}

AcquireOptions ttl(std::chrono::milliseconds t) {
  AcquireOptions options;
  options.ttl = t;
  return options;
}

}  // namespace dblock::testing
