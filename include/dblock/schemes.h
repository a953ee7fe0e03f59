// dblock/schemes.h — the URL schemes dblock::open() accepts, as a registry the services fill.
//
// A service's library adds its schemes itself: a small unit in it calls register_scheme() from a
// static initialiser, and the library's CMake target tells the linker to keep that unit even
// from a static archive (docs/architecture.md, "The seam"). So open() can open exactly the
// services linked into the program, and the core names none of them. An application may add a
// scheme for a service of its own the same way, or by calling register_scheme() before open().
//
// Thread-safe. The registry lives until the process ends (it is never destroyed). The services'
// schemes are registered during static initialisation: an open() from another static initialiser
// may run before they are.
#ifndef DBLOCK_SCHEMES_H_
#define DBLOCK_SCHEMES_H_

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dblock/service/lease_service.h"

namespace dblock {

struct Url;

// What the manager being opened knows that its service may use, given to the service's factory:
// ManagerOptions' fields, as the application set them (the manager validates them after the
// factory returned, so a factory clamps rather than trusts them).
struct ServiceContext {
  std::string table_prefix = "dblock_";           // ManagerOptions::table_prefix
  std::chrono::milliseconds default_ttl{30'000};  // ManagerOptions::default_ttl (the CLI's --ttl)
};

// Makes the service for a parsed URL of its scheme; throws as the service's make_service() does.
using ServiceFactory = std::unique_ptr<LeaseService> (*)(const Url& url, const ServiceContext& context);
// The earlier form of a factory, given the table prefix only. Still accepted (SchemeFactory), so
// that a service that needs nothing else from the context, or an application's own scheme
// registered before ServiceContext existed, is registered as it was.
using PrefixServiceFactory = std::unique_ptr<LeaseService> (*)(const Url& url, const std::string& table_prefix);

// A scheme's factory in either form, made implicitly from the function (or from nullptr: none).
// Thread-safe: a value.
class SchemeFactory {
 public:
  constexpr SchemeFactory() = default;
  constexpr SchemeFactory(std::nullptr_t) {}                                       // NOLINT: implicit
  constexpr SchemeFactory(ServiceFactory make) : make_(make) {}                    // NOLINT: implicit
  constexpr SchemeFactory(PrefixServiceFactory make) : prefix_only_(make) {}       // NOLINT: implicit

  // Whether a function was given.
  explicit operator bool() const noexcept { return make_ != nullptr || prefix_only_ != nullptr; }
  // Makes the service: the context goes to a ServiceFactory whole, its table prefix alone to a
  // PrefixServiceFactory. REQUIRES: *this. Throws as the factory does.
  std::unique_ptr<LeaseService> operator()(const Url& url, const ServiceContext& context) const {
    return make_ != nullptr ? make_(url, context) : prefix_only_(url, context.table_prefix);
  }
  friend bool operator==(const SchemeFactory&, const SchemeFactory&) = default;

 private:
  ServiceFactory make_ = nullptr;
  PrefixServiceFactory prefix_only_ = nullptr;
};

// How a scheme's URLs are written; parse_url() reads a registered scheme's URLs in its shape.
enum class UrlShape {
  kHosts,  // scheme://[user[:password]@]host[:port][,host[:port]...][/path][?k=v&...]
  kFile,   // scheme:///absolute/path[?k=v&...] or scheme:relative/path[?...]: no host; Url::path the file
};

struct SchemeEntry {
  std::string name;                  // as parse_url() gives Url::scheme: [a-z][a-z0-9+.-]*
  std::vector<std::string> aliases;  // other names for the same service ("postgres"), same form
  SchemeFactory factory;
  UrlShape shape = UrlShape::kHosts;
};

// Adds `entry`. Returns false and changes nothing when its name or an alias is already taken (the
// first registration stays, so a service linked in twice is harmless). Throws UsageError for an
// empty or malformed name or alias, or a null factory.
bool register_scheme(SchemeEntry entry);

// The factory registered for `scheme` (a name or an alias); an empty one (false) when none is.
SchemeFactory find_scheme(std::string_view scheme);

// The URL shape registered for `scheme` (a name or an alias); kHosts for a scheme not registered.
UrlShape scheme_url_shape(std::string_view scheme);

}  // namespace dblock

#endif  // DBLOCK_SCHEMES_H_
