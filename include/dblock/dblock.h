// dblock/dblock.h — umbrella header. Start reading at lock_manager.h.
#ifndef DBLOCK_DBLOCK_H_
#define DBLOCK_DBLOCK_H_

#include "dblock/service/capabilities.h"
#include "dblock/election.h"
#include "dblock/errors.h"
#include "dblock/lease.h"
#include "dblock/lock_manager.h"
#include "dblock/metrics.h"
#include "dblock/mutex.h"
#include "dblock/open.h"
#include "dblock/options.h"
#include "dblock/service/lease_service.h"
#include "dblock/session_lock.h"
#include "dblock/sql/features.h"
#include "dblock/url.h"

#endif  // DBLOCK_DBLOCK_H_
