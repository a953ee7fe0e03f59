// Adds zookeeper: to dblock::open()'s schemes (dblock/schemes.h) when this library is in the
// program. The target dblock::zookeeper names dblock_scheme_zookeeper to the linker (--undefined),
// so that this unit is kept from a static archive although nothing else refers to it, and its
// initialiser runs.
#include "dblock/schemes.h"
#include "dblock/zookeeper/zookeeper.h"

namespace {
// The session timeout follows the manager's default TTL where the URL sets none (zookeeper.h).
std::unique_ptr<dblock::LeaseService> from_url(const dblock::Url& url, const dblock::ServiceContext& context) {
  return dblock::zookeeper::make_service(url, context);
}
const bool registered[] = {dblock::register_scheme({"zookeeper", {}, &from_url})};
}  // namespace

extern "C" const bool* dblock_scheme_zookeeper() { return registered; }
