// dblock/capabilities.h — the old spelling of dblock/service/capabilities.h (the optional capabilities), kept so that code written
// against dblock 0.1 still compiles. New code includes dblock/service/capabilities.h, or dblock/service/kit.h.
#ifndef DBLOCK_CAPABILITIES_H_
#define DBLOCK_CAPABILITIES_H_

#include "dblock/service/capabilities.h"

#endif  // DBLOCK_CAPABILITIES_H_
