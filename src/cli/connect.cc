// Resolving the backend URL and opening a LockManager for a subcommand.
#include <pwd.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "args.h"
#include "commands.h"
#include "dblock/errors.h"
#include "dblock/open.h"
#include "dblock/url.h"

namespace dblock::cli {
namespace {

// Percent-encodes the bytes of a file path that a URL parser would otherwise read as syntax.
std::string encode_path(const std::string& path) {
  std::string out;
  for (char ch : path) {
    unsigned char c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7F || c == '%' || c == '?' || c == '#') {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    } else {
      out.push_back(ch);
    }
  }
  return out;
}

std::string home_directory() {
  if (const char* home = std::getenv("HOME"); home != nullptr && home[0] == '/') {
    return home;
  }
  std::vector<char> buf(16'384);
  passwd pw{};
  passwd* result = nullptr;
  if (getpwuid_r(getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr &&
      result->pw_dir != nullptr && result->pw_dir[0] == '/') {
    return result->pw_dir;
  }
  return {};
}

}  // namespace

std::string resolve_url(const GlobalOptions& global) {
  if (global.url) {
    if (global.url->empty()) {
      throw UsageFailure("--url is empty", "");
    }
    return *global.url;
  }
  if (const char* env = std::getenv("DBLOCK_URL"); env != nullptr && env[0] != '\0') {
    return env;
  }
  // XDG base directory spec: relative values of XDG_STATE_HOME are to be ignored.
  std::string state;
  if (const char* xdg = std::getenv("XDG_STATE_HOME"); xdg != nullptr && xdg[0] == '/') {
    state = xdg;
  } else {
    std::string home = home_directory();
    if (home.empty()) {
      throw UsageFailure("no --url, no DBLOCK_URL and no home directory for the default database", "");
    }
    state = home + "/.local/state";
  }
  while (state.size() > 1 && state.back() == '/') {
    state.pop_back();
  }
  return "sqlite://" + encode_path(state + "/dblock/locks.db");
}

std::unique_ptr<LockManager> open_manager(const std::string& url, ManagerOptions options) {
  return open_manager(url, std::move(options), std::nullopt);
}

std::unique_ptr<LockManager> open_manager(const std::string& url, ManagerOptions options,
                                          std::optional<std::chrono::steady_clock::time_point> deadline) {
  Url parsed = parse_url(url);  // UsageError for a malformed URL; never echoes the password
  const std::string where = parsed.redacted();
  try {
    if (deadline) return dblock::open(url, std::move(options), *deadline);
    return dblock::open(url, std::move(options));
  } catch (const ConnectionError& e) {
    throw ConnectionError("cannot open " + where + ": " + e.what(), e.backend(), e.sqlstate(), e.retryable());
  } catch (const SchemaError& e) {
    throw SchemaError(where + ": " + e.what(), e.backend(), e.sqlstate(), e.retryable());
  }
}

}  // namespace dblock::cli
