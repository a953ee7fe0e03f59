// dblock::open(url): looks the URL's scheme up in the registry the services fill as they are
// linked in (dblock/schemes.h, schemes.cc), so the core names no service.
#include "dblock/open.h"

#include <algorithm>
#include <optional>
#include <string>
#include <thread>

#include "dblock/errors.h"
#include "dblock/schemes.h"
#include "dblock/service/call_deadline.h"
#include "dblock/url.h"
#include "internal.h"

namespace dblock {

namespace {

using SteadyClock = std::chrono::steady_clock;

// `e` again, its message saying it lasted to the deadline of the wait (same class and fields).
[[noreturn]] void throw_at_deadline(const Error& e) {
  const std::string message = std::string(e.what()) + " (still so when the wait ran out)";
  if (dynamic_cast<const ConnectionError*>(&e)) throw ConnectionError(message, e.backend(), e.sqlstate(), false);
  if (dynamic_cast<const TimeoutError*>(&e)) throw TimeoutError(message, e.backend(), e.sqlstate(), false);
  throw Error(message, e.backend(), e.sqlstate(), false);
}

// `namespace=NAME`, on every URL: where the service keeps its locks (SQL: the table prefix; Redis:
// the key prefix; ZooKeeper: /dblock/<NAME>locks), the neutral spelling of
// ManagerOptions::table_prefix. Taken out of the URL here, so that no service sees it; given
// beside a table_prefix other than the default and different, a UsageError naming both.
void take_namespace(Url& url, ManagerOptions& options) {
  std::optional<std::string> found;
  for (auto it = url.params.begin(); it != url.params.end();) {
    if (it->first != "namespace") {
      ++it;
      continue;
    }
    if (found) throw UsageError("URL parameter 'namespace' is given twice");
    found = it->second;
    it = url.params.erase(it);
  }
  if (!found) return;
  try {
    service::validate_table_prefix(*found);  // one rule on every service: [a-z_][a-z0-9_]{0,39}
  } catch (const UsageError&) {
    throw UsageError("URL parameter 'namespace': '" + found->substr(0, 64) +
                     "' is invalid: use 1-40 characters of [a-z0-9_], not starting with a digit");
  }
  if (options.table_prefix != ManagerOptions{}.table_prefix && options.table_prefix != *found) {
    throw UsageError("the URL's namespace '" + *found + "' differs from ManagerOptions::table_prefix '" +
                     options.table_prefix + "': give one of them");
  }
  options.table_prefix = *found;
}

}  // namespace

std::unique_ptr<LockManager> open(std::string_view url_text, ManagerOptions options, SteadyClock::time_point deadline) {
  const bool once = deadline <= SteadyClock::now();  // a wait of 0
  if (deadline != SteadyClock::time_point::max()) deadline = std::max(deadline, SteadyClock::now() + kMinOpenTime);
  for (int attempt = 0;; ++attempt) {
    try {
      const service::CallDeadlineScope call(deadline);
      return open(url_text, options);
    } catch (const Error& e) {
      if (once || !e.retryable()) throw;
      if (SteadyClock::now() >= deadline) throw_at_deadline(e);
    }
    std::this_thread::sleep_for(service::refusal_pause(attempt, deadline));
  }
}

std::unique_ptr<LockManager> open(std::string_view url_text, ManagerOptions options) {
  Url url = parse_url(url_text);
  take_namespace(url, options);
  const SchemeFactory factory = find_scheme(url.scheme);
  if (!factory) {
    std::string known;
    for (const auto& s : available_schemes()) known += (known.empty() ? "" : ", ") + s;
    if (known.empty()) known = "none, no service is linked in";
    throw UsageError("unsupported URL scheme '" + url.scheme + "' (this program can open: " + known + ")");
  }
  std::unique_ptr<LeaseService> service = factory(url, ServiceContext{options.table_prefix, options.default_ttl});
  return std::make_unique<LockManager>(std::move(service), std::move(options));
}

const char* version() noexcept { return DBLOCK_VERSION_STRING; }

}  // namespace dblock
