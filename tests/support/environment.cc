#include "environment.h"

#include <cstdio>
#include <cstdlib>
#include <stdexcept>

namespace dblock::testing {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

bool exit_if_opted_out(const char* program, const char* url_var, const char* skip_var) {
  if (env(url_var).empty() && env(skip_var) == "1") {
    std::fprintf(stderr, "%s: %s=1 and no %s: skipping every case\n", program, skip_var, url_var);
    std::exit(0);
  }
  return false;
}

std::string required_server_url(const char* url_var, const char* skip_var) {
  std::string url = env(url_var);
  if (url.empty()) {
    throw std::runtime_error(std::string(url_var) +
                             " is not set: run through ctest (which starts a throwaway server) or set " + skip_var +
                             "=1 to opt out explicitly");
  }
  return url;
}

}  // namespace dblock::testing
