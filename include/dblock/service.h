// dblock/service.h — the old spelling of dblock/service/lease_service.h (LeaseService, ServiceTraits and the request/result types), kept so that code written
// against dblock 0.1 still compiles. New code includes dblock/service/lease_service.h, or dblock/service/kit.h.
#ifndef DBLOCK_SERVICE_H_
#define DBLOCK_SERVICE_H_

#include "dblock/service/lease_service.h"

#endif  // DBLOCK_SERVICE_H_
