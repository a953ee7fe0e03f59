// dblock/sqlite/sqlite.h: options from a sqlite: URL, and the factory.
#include "dblock/service/url_params.h"
#include "dblock/url.h"
#include "sqlite_service.h"

namespace dblock::sqlite {

std::unique_ptr<LeaseService> make_service(const Options& options) { return std::make_unique<SqliteService>(options); }

std::unique_ptr<LeaseService> make_service(const Url& url, const std::string& table_prefix) {
  Options options;
  options.path = url.path;
  options.table_prefix = table_prefix;
  service::UrlParams params(url, "sqlite");
  // At most a day: a statement blocked on the write lock longer than that is not waiting for a lock.
  if (auto ms = params.integer("busy_timeout", 1, 86'400'000)) options.busy_timeout = std::chrono::milliseconds(*ms);
  options.adopt_existing = params.boolean("adopt").value_or(false);
  params.finish();
  return make_service(options);
}

}  // namespace dblock::sqlite
