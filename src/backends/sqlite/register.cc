// Adds sqlite: to dblock::open()'s schemes (dblock/schemes.h) when this library is in the program.
// The target dblock::sqlite names dblock_scheme_sqlite to the linker (--undefined), so that this
// unit is kept from a static archive although nothing else refers to it, and its initialiser runs.
#include "dblock/schemes.h"
#include "dblock/sqlite/sqlite.h"

namespace {
const bool registered = dblock::register_scheme({"sqlite", {}, &dblock::sqlite::make_service, dblock::UrlShape::kFile});
}  // namespace

extern "C" const bool* dblock_scheme_sqlite() { return &registered; }
