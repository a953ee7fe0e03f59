// The scheme registry (dblock/schemes.h) and available_schemes() (dblock/open.h).
#include "dblock/schemes.h"
#include "dblock/service/thread_annotations.h"

#include <algorithm>
#include <mutex>

#include "dblock/errors.h"
#include "dblock/open.h"

namespace dblock {

namespace {

struct Registry {
  service::Mutex mutex;
  std::vector<SchemeEntry> entries DBLOCK_GUARDED_BY(mutex);  // sorted by name
};

// Never destroyed: a registration runs during static initialisation and open() may run during
// static destruction, in either order with this object's own.
Registry& registry() {
  static Registry* instance = new Registry;
  return *instance;
}

void validate_scheme_name(std::string_view name) {
  const bool well_formed =
      !name.empty() && name.front() >= 'a' && name.front() <= 'z' &&
      std::all_of(name.begin(), name.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '.' || c == '-';
      });
  if (!well_formed) {
    throw UsageError("register_scheme: scheme name '" + std::string(name) +
                     "' is not of the form [a-z][a-z0-9+.-]*");
  }
}

bool names(const SchemeEntry& entry, std::string_view scheme) {
  return entry.name == scheme || std::find(entry.aliases.begin(), entry.aliases.end(), scheme) != entry.aliases.end();
}

}  // namespace

bool register_scheme(SchemeEntry entry) {
  validate_scheme_name(entry.name);
  for (const std::string& alias : entry.aliases) validate_scheme_name(alias);
  if (!entry.factory) throw UsageError("register_scheme: scheme '" + entry.name + "' has no factory");
  Registry& r = registry();
  const service::MutexLock lock(r.mutex);
  for (const SchemeEntry& known : r.entries) {
    if (names(known, entry.name)) return false;
    for (const std::string& alias : entry.aliases) {
      if (names(known, alias)) return false;
    }
  }
  auto at = std::find_if(r.entries.begin(), r.entries.end(), [&](const SchemeEntry& e) { return e.name > entry.name; });
  r.entries.insert(at, std::move(entry));
  return true;
}

SchemeFactory find_scheme(std::string_view scheme) {
  Registry& r = registry();
  const service::MutexLock lock(r.mutex);
  for (const SchemeEntry& entry : r.entries) {
    if (names(entry, scheme)) return entry.factory;
  }
  return {};
}

UrlShape scheme_url_shape(std::string_view scheme) {
  Registry& r = registry();
  const service::MutexLock lock(r.mutex);
  for (const SchemeEntry& entry : r.entries) {
    if (names(entry, scheme)) return entry.shape;
  }
  return UrlShape::kHosts;
}

std::vector<std::string> available_schemes() {
  Registry& r = registry();
  const service::MutexLock lock(r.mutex);
  std::vector<std::string> schemes;
  for (const SchemeEntry& entry : r.entries) {
    schemes.push_back(entry.name);
    schemes.insert(schemes.end(), entry.aliases.begin(), entry.aliases.end());
  }
  return schemes;
}

}  // namespace dblock
