// Adds etcd: to dblock::open()'s schemes (dblock/schemes.h) when this library is in the program.
// The target dblock::etcd names dblock_scheme_etcd to the linker (--undefined), so that this unit
// is kept from a static archive although nothing else refers to it, and its initialiser runs.
#include "dblock/etcd/etcd.h"
#include "dblock/schemes.h"

namespace {
const bool registered[] = {dblock::register_scheme({"etcd", {}, &dblock::etcd::make_service})};
}  // namespace

extern "C" const bool* dblock_scheme_etcd() { return registered; }
