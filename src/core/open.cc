// dblock::open(url): dispatches on the scheme to the backends compiled into this build, through
// one table (a service adds a line). Built into dblock::dblock (not dblock::core) so that the core
// never depends on a driver.
#include "dblock/open.h"

#include <algorithm>
#include <initializer_list>
#include <thread>

#include "call_deadline.h"
#include "internal.h"

#include "dblock/errors.h"
#include "dblock/url.h"
#ifdef DBLOCK_HAVE_SQLITE
#include "dblock/sqlite/sqlite.h"
#endif
#ifdef DBLOCK_HAVE_POSTGRESQL
#include "dblock/postgresql/postgresql.h"
#endif
#ifdef DBLOCK_HAVE_MYSQL
#include "dblock/mysql/mysql.h"
#endif
#ifdef DBLOCK_HAVE_REDIS
#include "dblock/redis/redis.h"
#endif

namespace dblock {

namespace {

using Factory = std::unique_ptr<LeaseService> (*)(const Url& url, const std::string& table_prefix);

struct Scheme {
  std::string_view name;
  std::initializer_list<std::string_view> aliases;
  Factory factory;
};

// Every scheme of this build, in the order available_schemes() lists them.
const Scheme kSchemes[] = {
#ifdef DBLOCK_HAVE_SQLITE
    {"sqlite", {}, &sqlite::make_service},
#endif
#ifdef DBLOCK_HAVE_POSTGRESQL
    {"postgresql", {"postgres"}, &postgresql::make_service},
#endif
#ifdef DBLOCK_HAVE_MYSQL
    {"mysql", {"mariadb"}, &mysql::make_service},
#endif
#ifdef DBLOCK_HAVE_REDIS
    {"redis", {}, &redis::make_service},
    {"redlock", {}, &redis::make_redlock_service},
#endif
    {"", {}, nullptr},  // keeps the table non-empty in a build without backends
};

const Scheme* find_scheme(std::string_view scheme) {
  for (const Scheme& s : kSchemes) {
    if (s.factory == nullptr) continue;
    if (s.name == scheme || std::find(s.aliases.begin(), s.aliases.end(), scheme) != s.aliases.end()) return &s;
  }
  return nullptr;
}

using SteadyClock = std::chrono::steady_clock;

// `e` again, its message saying it lasted to the deadline of the wait (same class and fields).
[[noreturn]] void throw_at_deadline(const Error& e) {
  const std::string message = std::string(e.what()) + " (still so when the wait ran out)";
  if (dynamic_cast<const ConnectionError*>(&e)) throw ConnectionError(message, e.backend(), e.sqlstate(), false);
  if (dynamic_cast<const TimeoutError*>(&e)) throw TimeoutError(message, e.backend(), e.sqlstate(), false);
  throw Error(message, e.backend(), e.sqlstate(), false);
}

}  // namespace

std::unique_ptr<LockManager> open(std::string_view url_text, ManagerOptions options, SteadyClock::time_point deadline) {
  if (deadline != SteadyClock::time_point::max()) deadline = std::max(deadline, SteadyClock::now() + kMinOpenTime);
  for (int attempt = 0;; ++attempt) {
    try {
      const detail::CallDeadlineScope call(deadline);
      return open(url_text, options);
    } catch (const Error& e) {
      if (!e.retryable()) throw;
      if (SteadyClock::now() >= deadline) throw_at_deadline(e);
    }
    std::this_thread::sleep_for(detail::refusal_pause(attempt, deadline));
  }
}

std::unique_ptr<LockManager> open(std::string_view url_text, ManagerOptions options) {
  Url url = parse_url(url_text);
  const Scheme* scheme = find_scheme(url.scheme);
  if (scheme == nullptr) {
    std::string known;
    for (const auto& s : available_schemes()) known += (known.empty() ? "" : ", ") + s;
    throw UsageError("unsupported URL scheme '" + url.scheme + "' (this build supports: " + known + ")");
  }
  std::unique_ptr<LeaseService> service = scheme->factory(url, options.table_prefix);
  return std::make_unique<LockManager>(std::move(service), std::move(options));
}

std::vector<std::string> available_schemes() {
  std::vector<std::string> schemes;
  for (const Scheme& s : kSchemes) {
    if (s.factory == nullptr) continue;
    schemes.emplace_back(s.name);
    for (std::string_view alias : s.aliases) schemes.emplace_back(alias);
  }
  return schemes;
}

const char* version() noexcept { return DBLOCK_VERSION_STRING; }

}  // namespace dblock
