// dblock::open(url): dispatches on the scheme to the backends compiled into this build.
// Built into dblock::dblock (not dblock::core) so that the core never depends on a driver.
#include "dblock/open.h"

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

namespace dblock {

std::unique_ptr<LockManager> open(std::string_view url_text, ManagerOptions options) {
  Url url = parse_url(url_text);
  std::unique_ptr<LeaseService> service;
#ifdef DBLOCK_HAVE_SQLITE
  if (url.scheme == "sqlite") service = sqlite::make_service(url, options.table_prefix);
#endif
#ifdef DBLOCK_HAVE_POSTGRESQL
  if (url.scheme == "postgresql") service = postgresql::make_service(url, options.table_prefix);
#endif
#ifdef DBLOCK_HAVE_MYSQL
  if (url.scheme == "mysql" || url.scheme == "mariadb") service = mysql::make_service(url, options.table_prefix);
#endif
  if (!service) {
    std::string known;
    for (const auto& s : available_schemes()) known += (known.empty() ? "" : ", ") + s;
    throw UsageError("unsupported URL scheme '" + url.scheme + "' (this build supports: " + known + ")");
  }
  return std::make_unique<LockManager>(std::move(service), std::move(options));
}

std::vector<std::string> available_schemes() {
  std::vector<std::string> schemes;
#ifdef DBLOCK_HAVE_SQLITE
  schemes.push_back("sqlite");
#endif
#ifdef DBLOCK_HAVE_POSTGRESQL
  schemes.push_back("postgresql");
#endif
#ifdef DBLOCK_HAVE_MYSQL
  schemes.push_back("mysql");
  schemes.push_back("mariadb");
#endif
  return schemes;
}

const char* version() noexcept { return DBLOCK_VERSION_STRING; }

}  // namespace dblock
