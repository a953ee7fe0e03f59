// Adds redis: and redlock: to dblock::open()'s schemes (dblock/schemes.h) when this library is in
// the program. The target dblock::redis names dblock_scheme_redis to the linker (--undefined), so
// that this unit is kept from a static archive although nothing else refers to it, and its
// initialisers run.
#include "dblock/redis/redis.h"
#include "dblock/schemes.h"

namespace {
const bool registered[] = {dblock::register_scheme({"redis", {}, &dblock::redis::make_service}),
                          dblock::register_scheme({"redlock", {}, &dblock::redis::make_redlock_service})};
}  // namespace

extern "C" const bool* dblock_scheme_redis() { return registered; }
