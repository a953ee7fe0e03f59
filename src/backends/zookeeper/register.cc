// Adds zookeeper: to dblock::open()'s schemes (dblock/schemes.h) when this library is in the
// program. The target dblock::zookeeper names dblock_scheme_zookeeper to the linker (--undefined),
// so that this unit is kept from a static archive although nothing else refers to it, and its
// initialiser runs.
#include "dblock/schemes.h"
#include "dblock/zookeeper/zookeeper.h"

namespace {
std::unique_ptr<dblock::LeaseService> from_url(const dblock::Url& url, const std::string& table_prefix) {
  return dblock::zookeeper::make_service(url, table_prefix);
}
const bool registered[] = {dblock::register_scheme({"zookeeper", {}, &from_url})};
}  // namespace

extern "C" const bool* dblock_scheme_zookeeper() { return registered; }
