// Adds mysql: (alias mariadb:) to dblock::open()'s schemes (dblock/schemes.h) when this library is
// in the program. The target dblock::mysql names dblock_scheme_mysql to the linker (--undefined),
// so that this unit is kept from a static archive although nothing else refers to it, and its
// initialiser runs.
#include "dblock/mysql/mysql.h"
#include "dblock/schemes.h"

namespace {
const bool registered = dblock::register_scheme({"mysql", {"mariadb"}, &dblock::mysql::make_service});
}  // namespace

extern "C" const bool* dblock_scheme_mysql() { return &registered; }
