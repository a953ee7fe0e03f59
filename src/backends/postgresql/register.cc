// Adds postgresql: (alias postgres:) to dblock::open()'s schemes (dblock/schemes.h) when this
// library is in the program. The target dblock::postgresql names dblock_scheme_postgresql to the
// linker (--undefined), so that this unit is kept from a static archive although nothing else
// refers to it, and its initialiser runs.
#include "dblock/postgresql/postgresql.h"
#include "dblock/schemes.h"

namespace {
const bool registered = dblock::register_scheme({"postgresql", {"postgres"}, &dblock::postgresql::make_service});
}  // namespace

extern "C" const bool* dblock_scheme_postgresql() { return &registered; }
